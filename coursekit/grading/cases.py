"""Hidden test cases: split an authored hidden-test region into kernel code and a key.

An author writes a test cell's hidden region in ``notebooks/<id>.py`` as weighted cases::

    ### BEGIN HIDDEN TESTS
    ck.forbid(ref_memory.model_state_bytes)            # delegation tripwire (optional)
    _nm = RECIPES["mixed+adam-no-master"]              # plain setup statements are kept
    # Napkin 1.2: 1.5B fp32 + Adam = 24 GB
    ck.case("fp32_1p5b", lambda: static_memory_bytes(1.5e9, RECIPES["fp32+adam"]),
            expect=ck.approx(24e9), name="1.5B parameters, fp32+adam")
    ck.case("negative", lambda: static_memory_bytes(-1, _nm), expect=ck.raises(ValueError),
            weight=2)
    ### END HIDDEN TESTS

:func:`split_hidden` turns it into

* **kernel code** (what the grading kernel runs): the setup statements, and one
  ``record(cell, case, thunk, forbid)`` call per case. No expected value, tolerance or
  comment reaches it.
* **a key** (instructor-only; read by the grader outside the kernel): per case its weight,
  label and expectation, one of ``ck.approx(x, rel=1e-6, abs=0)`` (numbers or lists of
  numbers), ``ck.exactly(x)`` (same value and plain type), ``ck.raises(ExcName)`` or
  ``ck.satisfies(lambda v: ...)`` (a predicate the grader applies to the recorded data).

A cell of ``points=P`` gives case *i* ``P * weight_i / sum(weights)`` points.
"""

from __future__ import annotations

import ast
import re

CASE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,60}$")
EXPECT_KINDS = ("approx", "exactly", "raises", "satisfies")
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
           ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a ** b}


class CaseError(ValueError):
    """A hidden-test region breaks the case format; ``line`` is relative to the region."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line


def literal(node: ast.AST, line: int):
    """The value of a literal expression: numbers, strings, bools, None, lists/tuples and
    arithmetic on numbers (``2**-14``, ``-1``, ``1024 / 1.2``). Anything else is an error."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bool,
                                                                 type(None)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = literal(node.operand, line)
        if type(value) not in (int, float):
            raise CaseError(line, "a sign applies to numbers only")
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = literal(node.left, line), literal(node.right, line)
        if type(a) not in (int, float) or type(b) not in (int, float):
            raise CaseError(line, "arithmetic applies to numbers only")
        return _BINOPS[type(node.op)](a, b)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(e, line) for e in node.elts]
    raise CaseError(line, f"expected a literal value, got `{ast.unparse(node)[:60]}`")


def _is_ck(call: ast.AST, name: str) -> bool:
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == name and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "ck")


def _expectation(node: ast.AST, line: int) -> dict:
    for kind in EXPECT_KINDS:
        if _is_ck(node, kind):
            break
    else:
        raise CaseError(line, "expect= must be ck.approx(...), ck.exactly(...), "
                              "ck.raises(...) or ck.satisfies(...)")
    args, kw = node.args, {k.arg: k.value for k in node.keywords}
    if kind == "approx":
        if len(args) != 1 or set(kw) - {"rel", "abs"}:
            raise CaseError(line, "ck.approx(value, rel=..., abs=...)")
        value = literal(args[0], line)
        flat = value if isinstance(value, list) else [value]
        if not flat or any(type(v) not in (int, float) for v in flat):
            raise CaseError(line, "ck.approx needs a number or a list of numbers")
        rel = literal(kw["rel"], line) if "rel" in kw else 1e-6
        tol = literal(kw["abs"], line) if "abs" in kw else 0.0
        return {"kind": "approx", "value": value, "rel": rel, "abs": tol}
    if kind == "exactly":
        if len(args) != 1 or kw:
            raise CaseError(line, "ck.exactly(value)")
        return {"kind": "exactly", "value": literal(args[0], line)}
    if kind == "raises":
        if len(args) != 1 or kw:
            raise CaseError(line, "ck.raises(ExceptionName)")
        arg = args[0]
        name = arg.id if isinstance(arg, ast.Name) else literal(arg, line)
        if not isinstance(name, str) or not name.isidentifier():
            raise CaseError(line, "ck.raises needs an exception name, e.g. ck.raises(ValueError)")
        return {"kind": "raises", "exception": name}
    if len(args) != 1 or kw or not isinstance(args[0], ast.Lambda) \
            or len(args[0].args.args) != 1:
        raise CaseError(line, "ck.satisfies(lambda value: <condition>)")
    return {"kind": "satisfies", "source": ast.unparse(args[0])}


def _dotted(node: ast.AST, aliases: dict, line: int) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise CaseError(line, "ck.forbid takes reference functions such as ref_memory.f")
    head = aliases.get(node.id)
    if head is None:
        raise CaseError(line, f"ck.forbid: {node.id!r} is not a coursekit import of the "
                              "setup or locked cells")
    return ".".join([head, *reversed(parts)])


def python_source(cell_source: str) -> str:
    """A code cell's source as plain Python: IPython syntax (``%pip``, ``!ls``, ``x?``)
    becomes the ``get_ipython()`` calls IPython itself would run."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(cell_source)


def coursekit_aliases(code: str) -> dict:
    """Names bound to coursekit modules/objects by the imports in ``code``."""
    aliases = {}
    try:
        tree = ast.parse(python_source(code))
    except SyntaxError:
        return aliases
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "coursekit":
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else "coursekit"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "coursekit":
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def split_hidden(region: str, cell_id: str, aliases: dict) -> tuple:
    """``(kernel_code, cases)`` for one hidden region (see the module docstring)."""
    try:
        tree = ast.parse(region)
    except SyntaxError as exc:
        raise CaseError(exc.lineno or 1, f"syntax error in hidden tests: {exc.msg}") from None
    out = ["from coursekit.grading.checks import record as _record_", "_forbid_ = ()"]
    cases, seen, forbid = [], set(), []
    for stmt in tree.body:
        line = stmt.lineno
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if call is not None and _is_ck(call, "forbid"):
            names = tuple(_dotted(a, aliases, line) for a in call.args)
            forbid = list(names)
            out.append(f"_forbid_ = {names!r}")
            continue
        if call is not None and _is_ck(call, "case"):
            kw = {k.arg: k.value for k in call.keywords}
            if len(call.args) != 2 or "expect" not in kw or set(kw) - {"expect", "weight", "name"}:
                raise CaseError(line, 'ck.case("id", lambda: <call>, expect=..., '
                                      'weight=1, name="label")')
            case_id = literal(call.args[0], line)
            if not isinstance(case_id, str) or not CASE_ID.match(case_id):
                raise CaseError(line, "a case id uses letters, digits, '_', '.', '-'")
            if case_id in seen:
                raise CaseError(line, f"duplicate case id {case_id!r}")
            seen.add(case_id)
            thunk = call.args[1]
            if not isinstance(thunk, ast.Lambda) or thunk.args.args or thunk.args.vararg:
                raise CaseError(line, "the second argument of ck.case is `lambda: <call>`")
            weight = literal(kw["weight"], line) if "weight" in kw else 1
            if type(weight) not in (int, float) or weight <= 0:
                raise CaseError(line, "weight must be a positive number")
            name = literal(kw["name"], line) if "name" in kw else case_id
            cases.append({"id": case_id, "name": str(name), "weight": weight,
                          "expect": _expectation(kw["expect"], line), "forbid": forbid,
                          "line": line})
            out.append(f"_record_({cell_id!r}, {case_id!r}, {ast.unparse(thunk)}, _forbid_)")
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id == "ck":
                raise CaseError(line, f"ck.{node.func.attr} in hidden tests: a hidden test "
                                      "only records cases (ck.case) and never compares")
        out.append(ast.unparse(stmt))
    if not cases:
        raise CaseError(1, "hidden tests need at least one ck.case(...)")
    return "\n".join(out), cases
