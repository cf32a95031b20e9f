"""Static analysis of student code, done by the grader outside the kernel.

Two findings, both from the source text the kernel executed (answer cells and cells the
student added), never from anything the kernel reports:

* **delegation**: the student's code reaches a ``coursekit`` reference function that a
  test cell forbids: imported from coursekit, read as an attribute (``m.f``, whatever
  ``m`` is: an alias, ``importlib.import_module(...)``, a fresh module copy), named in a
  string (``getattr(m, "f")``), or called by name without the student defining it
  (``exec`` of the reference's source). The grader scores that test's cases 0.
* **dynamic code**: ``exec``/``eval``/``compile``, ``__import__``, ``importlib``, access
  to ``sys.modules``/frames/``globals()``, kernel hooks through ``get_ipython()``, and
  ``getattr`` with a computed name. These are flagged for the instructor's review in the
  report (and in formgrader); the score stands until a person looks.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import lru_cache

from .cases import python_source

DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "globals", "vars", "breakpoint"}
DYNAMIC_MODULES = {"importlib", "imp", "runpy", "pkgutil", "marshal", "ctypes", "inspect",
                   "types", "gc", "code", "codeop", "zipimport"}
DYNAMIC_ATTRS = {"modules", "_getframe", "f_locals", "f_globals", "f_back", "__code__",
                 "__globals__", "__dict__", "__builtins__", "__subclasses__", "__loader__",
                 "__spec__", "setprofile", "settrace", "meta_path", "path_hooks",
                 "events", "ast_transformers", "input_transformers_post",
                 "input_transformers_cleanup", "set_custom_exc", "run_cell",
                 "displayhook", "display_pub", "register_magic_function"}
SAFE_MAGICS = {"matplotlib", "time", "timeit", "pip", "config"}


@dataclass(frozen=True)
class Findings:
    """What the grader found in the student's code."""

    references: frozenset = field(default_factory=frozenset)  # forbidden names reached
    dynamic: tuple = ()  # "line-free" descriptions of dynamic constructs


def _defined_names(tree) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "coursekit")):
                    names.add((a.asname or a.name).split(".")[0])
    return names


def _top_level_names(tree) -> set:
    """Names a cell binds at module level (functions, classes, assignments, imports);
    not arguments or locals, which another cell cannot call."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            targets = node.targets if isinstance(node, ast.Assign) else [
                getattr(node, "target", None)]
            for target in targets:
                for n in ast.walk(target) if target is not None else []:
                    if isinstance(n, ast.Name):
                        names.add(n.id)
    return names


@lru_cache(maxsize=1024)
def _parse(text: str):
    """A cell's syntax tree (IPython syntax translated), or None if it does not parse.
    Cached: one submission's cells are read once per test cell; trees are never mutated."""
    try:
        return ast.parse(python_source(text))
    except (SyntaxError, ValueError, RecursionError):
        return None


@lru_cache(maxsize=1024)
def _names(text: str) -> tuple:
    """(names a cell binds at module level, names it loads); empty if it does not parse."""
    tree = _parse(text)
    if tree is None:
        return frozenset(), frozenset()
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Load)}
    return frozenset(_top_level_names(tree)), frozenset(loads)


def reach(item_cells, other_cells) -> list:
    """The cells an item's code can run: its own answer cells, every cell the student
    added (``other_cells`` marked ``added``), and, transitively, every other answer cell
    defining a name the reached code uses. ``*_cells``: lists of ``(source, added)``."""
    chosen = list(item_cells) + [c for c in other_cells if c[1]]
    pool = [c for c in other_cells if not c[1]]
    needed = set().union(*(_names(src)[1] for src, _ in chosen)) if chosen else set()
    changed = True
    while changed:
        changed = False
        for cell in list(pool):
            defines, loads = _names(cell[0])
            if defines & needed:
                chosen.append(cell)
                pool.remove(cell)
                needed |= loads
                changed = True
    return [src for src, _ in chosen]


def analyze(sources, forbidden_names) -> Findings:
    """Findings for the student's code ``sources`` (cell texts) against the bare names of
    forbidden reference functions (``{"zero_bytes_per_gpu", ...}``)."""
    # code that does not parse does not run either
    trees = [t for t in map(_parse, sources) if t is not None]
    defined = set().union(*(_defined_names(t) for t in trees)) if trees else set()
    refs, dynamic = set(), []
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                for a in node.names:
                    if module.startswith("coursekit") and a.name in forbidden_names:
                        refs.add(a.name)
                if module.split(".")[0] in DYNAMIC_MODULES:
                    dynamic.append(f"imports from {module}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in DYNAMIC_MODULES:
                        dynamic.append(f"imports {a.name}")
            elif isinstance(node, ast.Attribute):
                if node.attr in forbidden_names:
                    refs.add(node.attr)
                if node.attr in DYNAMIC_ATTRS:
                    dynamic.append(f"uses .{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in forbidden_names:
                    refs.add(node.value)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if node.id in forbidden_names and node.id not in defined:
                    refs.add(node.id)
                if node.id in DYNAMIC_CALLS:
                    dynamic.append(f"uses {node.id}()")
            if isinstance(node, ast.Call):
                dynamic.extend(_dynamic_call(node))
    return Findings(frozenset(refs), tuple(dict.fromkeys(dynamic)))


def _dynamic_call(node: ast.Call) -> list:
    func = node.func
    if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "delattr") \
            and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant):
        return [f"{func.id}() with a computed name"]
    if isinstance(func, ast.Name) and func.id == "get_ipython":
        return []
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and \
            isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython":
        magic = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) \
            else None
        if func.attr in ("run_line_magic", "run_cell_magic") and magic in SAFE_MAGICS:
            return []
        return [f"get_ipython().{func.attr}"]
    return []
