"""The student library: coursekit without a readable implementation of any graded function
(DESIGN.md §7, issue #14).

The graded functions are the ones the notebooks' hidden tests name in ``ck.forbid(...)``
(:func:`graded_functions`). The student wheel is built from a copy of the package in which

* each graded function keeps its signature and docstring, and its body becomes
  ``return _replay_("<module>.<name>", locals())`` (:mod:`coursekit.replay`);
* private helpers that only a graded function used are removed, and comments go with
  the reformatting (``ast.unparse``);
* ``coursekit/data/replay.json.gz`` holds the result of every graded call the course
  makes: :func:`record` runs each source and release notebook in-process with the full
  library and then moves every control of every explorer (``coursekit.viz.watch``) through
  its values one at a time, from its default. So the demos, plots and explorers work
  before the student has written anything; any other call to a graded function says that
  the student writes it.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import functools
import gzip
import importlib
import inspect
import io
import json
import os
import pkgutil
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .. import replay as rp
from . import authoring
from . import build as buildmod

REPLAY_CALL = "_replay_"


def graded_functions(root: Path) -> dict:
    """``{"coursekit.<module>.<name>": [assignment, ...]}``: every function a hidden test
    forbids (``ck.forbid``), i.e. every function some assignment has the student write."""
    out = collections.defaultdict(list)
    for path in sorted((Path(root) / "notebooks").glob("[0-9][0-9]_*.py")):
        for cell in authoring.parse(authoring.read_py(path)):
            for case in getattr(cell, "cases", None) or ():
                for name in case["forbid"]:
                    if path.stem not in out[name]:
                        out[name].append(path.stem)
    return dict(sorted(out.items()))


# ----------------------------------------------------------------------------- recording
class Recorder:
    """Wraps the graded functions of the loaded library and records their top-level calls
    (a graded call inside another is replayed with it, never on its own)."""

    def __init__(self, names):
        self.names = list(names)
        self.calls: dict = {}
        self.unrecordable = collections.Counter()
        self._depth = 0
        self._undo: list = []
        self.watched: list = []

    def _wrap(self, name, fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if self._depth:
                return fn(*args, **kwargs)
            try:
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                arguments = dict(bound.arguments)
                key = rp.call_key(name, arguments)
            except (rp.Unencodable, TypeError):
                key = None
            self._depth += 1
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if key and key not in self.calls and _recordable_exception(exc):
                    self.calls[key] = {"x": rp._qualname(type(exc)), "m": str(exc)}
                raise
            finally:
                self._depth -= 1
            if key and key not in self.calls:
                try:
                    entry = {"r": rp.encode(result)}
                    rngs = {k: rp.encode(v.bit_generator.state) for k, v in arguments.items()
                            if isinstance(v, np.random.Generator)}
                    if rngs:
                        entry["rng"] = rngs
                    self.calls[key] = entry
                except rp.Unencodable:
                    self.unrecordable[name] += 1
            elif key is None:
                self.unrecordable[name] += 1
            return result

        return wrapper

    def _watch(self, original):
        @functools.wraps(original)
        def watch(controls, callback):
            self.watched.append((tuple(controls), callback))
            return original(controls, callback)
        return watch

    def install(self):
        """Patch every reference to a graded function (and to ``coursekit.viz.watch``) in
        every loaded coursekit module, including module-level dicts and lists."""
        import coursekit

        for info in pkgutil.walk_packages(coursekit.__path__, "coursekit."):
            if ".grading" not in info.name:
                importlib.import_module(info.name)
        import coursekit.viz as viz

        swaps = {}
        for name in self.names:
            module, _, attr = name.rpartition(".")
            fn = getattr(importlib.import_module(module), attr)
            swaps[id(fn)] = (fn, self._wrap(name, fn))
        swaps[id(viz.watch)] = (viz.watch, self._watch(viz.watch))
        for mod_name, mod in list(sys.modules.items()):
            if not mod_name.startswith("coursekit") or ".grading" in mod_name:
                continue
            for attr, value in list(vars(mod).items()):
                if id(value) in swaps and swaps[id(value)][0] is value:
                    self._undo.append((mod, attr, value))
                    setattr(mod, attr, swaps[id(value)][1])
                elif isinstance(value, dict):
                    for k, v in list(value.items()):
                        if id(v) in swaps and swaps[id(v)][0] is v:
                            value[k] = swaps[id(v)][1]
                            self._undo.append((value, k, v))
                elif isinstance(value, list):
                    for i, v in enumerate(value):
                        if id(v) in swaps and swaps[id(v)][0] is v:
                            value[i] = swaps[id(v)][1]
                            self._undo.append((value, i, v))

    def uninstall(self):
        for holder, key, value in reversed(self._undo):
            if isinstance(holder, (dict, list)):
                holder[key] = value
            else:
                setattr(holder, key, value)
        self._undo.clear()

    def sweep(self):
        """Move each watched control through its values (others at their defaults)."""
        done = set()
        for controls, _ in self.watched:
            for control in controls:
                if id(control) in done:
                    continue
                done.add(id(control))
                default = control.value
                for value in control_values(control):
                    if value == default:
                        continue
                    with contextlib.suppress(Exception):
                        control.value = value
                    _close_figures()
                with contextlib.suppress(Exception):
                    control.value = default
        self.watched.clear()


def _recordable_exception(exc) -> bool:
    cls = type(exc)
    return cls.__module__ == "builtins" or cls.__module__.startswith("coursekit")


def control_values(control) -> list:
    """Every value a student can set on an ipywidgets control, in order."""
    if hasattr(control, "_options_values"):  # Dropdown, SelectionSlider, ToggleButtons...
        return list(control._options_values)
    if all(hasattr(control, a) for a in ("min", "max", "step")):
        lo, hi, step = control.min, control.max, control.step or 1
        if hasattr(control, "base"):  # FloatLogSlider: exponents in steps
            n = int(round((hi - lo) / step))
            return [control.base ** round(lo + i * step, 10) for i in range(n + 1)]
        n = int(round((hi - lo) / step))
        if isinstance(control.value, int) and not isinstance(control.value, bool):
            return [int(lo + i * step) for i in range(n + 1)]
        decimals = max(0, -int(np.floor(np.log10(step)))) if step < 1 else 0
        return [round(lo + i * step, decimals + 2) for i in range(n + 1)]
    if isinstance(getattr(control, "value", None), bool):
        return [False, True]
    return []


def _close_figures():
    import matplotlib.pyplot as plt

    plt.close("all")


def _notebook_cells(path: Path) -> list:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in nb["cells"] if c["cell_type"] == "code"]


def _record_assignment(root: str, aid: str) -> tuple:
    """One assignment's recorded calls (a worker process of :func:`record`): its source
    and release notebooks run in-process, each explorer swept after its cell."""
    from IPython.core.interactiveshell import InteractiveShell

    os.environ["MPLBACKEND"] = "Agg"
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.use("Agg")
    Figure.tight_layout = lambda self, *a, **k: None  # layout changes no value recorded
    root = Path(root)
    rec = Recorder(graded_functions(root))
    rec.install()
    shell = InteractiveShell.instance()
    lines = []
    for kind in ("source", "release"):
        path = root / kind / aid / f"{aid}.ipynb"
        before, start = len(rec.calls), time.monotonic()
        shell.reset(new_session=False)
        os.chdir(path.parent)
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            for source in _notebook_cells(path):
                shell.run_cell(source, store_history=False, silent=True)
                rec.sweep()
                _close_figures()
        lines.append(f"[student-lib] {kind}/{aid}: {len(rec.calls) - before} graded calls "
                     f"recorded in {time.monotonic() - start:.0f} s")
    return rec.calls, dict(rec.unrecordable), lines


def record(root: Path, log=print, workers: int | None = None) -> dict:
    """The replay table of the course at ``root``: every source and release notebook run
    with the full library and the graded functions recorded (errors allowed: the release's
    stubs fail), and every explorer swept; one worker process per assignment at a time.
    Returns ``{"graded": {name: [assignment, ...]}, "calls": {key: entry}}``."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    root = Path(root).resolve()
    graded = graded_functions(root)
    calls, unrecordable = {}, collections.Counter()
    aids = buildmod.assignments(root)
    workers = max(1, min(len(aids), workers or os.cpu_count() or 1))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        for got, missed, lines in pool.map(_record_assignment, [str(root)] * len(aids),
                                           aids):
            calls.update(got)
            unrecordable.update(missed)
            for line in lines:
                log(line)
    if unrecordable:
        log("[student-lib] not recordable (these calls will say the student writes them): "
            + ", ".join(f"{k.rsplit('.', 1)[1]} x{v}" for k, v in sorted(unrecordable.items())))
    return {"graded": graded, "calls": dict(sorted(calls.items()))}


# ------------------------------------------------------------------------- the transform
def strip_module(source: str, module: str, graded: set) -> tuple:
    """``(new_source, stripped)``: ``source`` of ``module`` with each graded function's body
    replaced by a replay call and every private helper no longer used removed."""
    tree = ast.parse(source)
    stripped = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and f"{module}.{node.name}" in graded:
            doc = ast.get_docstring(node, clean=False)
            body = [ast.Expr(ast.Constant(doc))] if doc is not None else []
            body.append(ast.parse(
                f"return {REPLAY_CALL}({module + '.' + node.name!r}, locals())").body[0])
            node.body = body
            stripped.append(node.name)
    if not stripped:
        return source, []
    tree.body.insert(_after_docstring_and_future(tree),
                     ast.parse(f"from coursekit.replay import replay as {REPLAY_CALL}").body[0])
    while True:
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        exported = _all_names(tree)
        dead = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                and n.name.startswith("_") and n.name not in used and n.name not in exported]
        if not dead:
            break
        tree.body = [n for n in tree.body if n not in dead]
    return ast.unparse(tree) + "\n", stripped


def _after_docstring_and_future(tree) -> int:
    i = 0
    if tree.body and isinstance(tree.body[0], ast.Expr) and \
            isinstance(getattr(tree.body[0], "value", None), ast.Constant):
        i = 1
    while i < len(tree.body) and isinstance(tree.body[i], ast.ImportFrom) \
            and tree.body[i].module == "__future__":
        i += 1
    return i


def _all_names(tree) -> set:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                return set(ast.literal_eval(node.value))
            except ValueError:
                return set()
    return set()


def student_tree(root: Path, dest: Path, table: dict) -> list:
    """Write the student package source (pyproject.toml, README, coursekit/) into ``dest``;
    returns the stripped functions' dotted names."""
    root, dest = Path(root), Path(dest)
    graded = set(table["graded"])
    shutil.copy2(root / "pyproject.toml", dest / "pyproject.toml")
    for extra in ("README.md", "LICENSE"):
        if (root / extra).exists():
            shutil.copy2(root / extra, dest / extra)
    shutil.copytree(root / "coursekit", dest / "coursekit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    stripped = []
    for path in sorted((dest / "coursekit").rglob("*.py")):
        module = ".".join(path.relative_to(dest).with_suffix("").parts)
        if module.endswith(".__init__"):
            module = module[: -len(".__init__")]
        new, names = strip_module(path.read_text(encoding="utf-8"), module, graded)
        if names:
            path.write_text(new, encoding="utf-8")
            stripped += [f"{module}.{n}" for n in names]
    missing = graded - set(stripped)
    if missing:
        raise RuntimeError("graded functions not found as module-level functions: "
                           + ", ".join(sorted(missing)))
    blob = json.dumps(table, sort_keys=True, separators=(",", ":")).encode()
    (dest / "coursekit" / "data" / rp.TABLE).write_bytes(gzip.compress(blob, mtime=0))
    return stripped


def build_student_wheel(root: Path, dest: Path, log=print) -> Path:
    """Record the replay table, write the stripped package, and build its wheel into
    ``dest`` (the same file name as the full wheel)."""
    import subprocess

    table = record(root, log=log)
    with tempfile.TemporaryDirectory(prefix="coursekit-student-lib-") as tmp:
        stripped = student_tree(root, Path(tmp), table)
        log(f"[student-lib] {len(stripped)} graded functions replaced by "
            f"{len(table['calls'])} recorded calls")
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                               "--no-build-isolation", "-w", str(dest), tmp],
                              capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"pip wheel failed:\n{proc.stderr[-2000:]}")
    wheel = Path(dest) / buildmod.wheel_name(root)
    if not wheel.exists():
        raise RuntimeError(f"pip wheel did not write {wheel.name}")
    return wheel
