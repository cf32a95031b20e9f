"""Student-side test helpers: friendly visible checks, and the recorder hidden tests use.

Two jobs, and neither decides a grade:

* **Visible checks** (``check_close``, ``check_exact``, ``check_raises``, ``call``) give the
  student an immediate, precise message in JupyterLab or Colab: the quantity, what was
  expected, what was got, and the unit. A failure is one line (no traceback through
  ``coursekit``), and ``None`` or a list prints readably.
* **Recording** (``record``): inside the grading kernel a hidden test only calls the
  student's code on hidden inputs and emits each case's result as plain data (a display
  output of type :data:`RECORD_MIME`). The grader, outside the kernel, compares the records
  with reference answers that never enter the kernel (``coursekit.grading.verdicts``).

Nothing here is trusted by the grader: everything inside the kernel belongs to the
student after their first cell runs. A forged record can only claim a value the student
could have computed; see DESIGN.md §4 and the README's "Trust model".
"""

from __future__ import annotations

import importlib
import math
import sys
from contextlib import contextmanager

RECORD_MIME = "application/vnd.coursekit.record.v1+json"
"""Output type of a hidden-test record (read by the grader, never by the student)."""

_MAX_DEPTH = 6
_MAX_ITEMS = 10_000
_MAX_TEXT = 2_000


class CheckFailed(AssertionError):
    """A visible check failed. IPython shows only its message: one line, no traceback."""

    def _render_traceback_(self):  # IPython's hook for custom tracebacks
        return [f"\x1b[0;31m✗ {self}\x1b[0m"]


class NotImplementedYet(CheckFailed):
    """The student's function still raises ``NotImplementedError`` (the release stub)."""


def _describe(value) -> str:
    """A short, readable description of ``value`` for messages."""
    if value is None:
        return "None"
    t = type(value)
    if t in (bool, int, str) or t.__module__ == "numpy" and hasattr(value, "dtype") \
            and getattr(value, "ndim", 1) == 0:
        text = repr(value.item() if hasattr(value, "item") else value)
    elif t is float:
        text = _fmt_number(value)
    elif t in (list, tuple, dict) or t.__name__ == "ndarray":
        text = repr(value.tolist() if hasattr(value, "tolist") else value)
    else:
        text = f"a {t.__name__} object"
    return text if len(text) <= 80 else text[:77] + "..."


def _fmt_number(x) -> str:
    return f"{x:,.6g}" if isinstance(x, float) and abs(x) >= 1e4 else repr(x)


def as_real(value, name: str = "value") -> float:
    """``value`` as a float if it is a plain number (int, float, numpy real scalar or 0-d
    array; not a bool). Otherwise :class:`CheckFailed` naming ``name`` and what was got."""
    t = type(value)
    if t.__name__ == "ndarray" and getattr(value, "ndim", 1) == 0:
        value = value[()]
        t = type(value)
    is_numpy_real = t.__module__ == "numpy" and t.__name__.startswith(("float", "int", "uint"))
    if t in (int, float) or is_numpy_real:
        out = float(value)
        if math.isnan(out) or math.isinf(out):
            raise CheckFailed(f"{name}: got {out!r}; expected a finite number")
        return out
    if value is None:
        raise CheckFailed(f"{name}: got None: did you forget `return`?")
    raise CheckFailed(f"{name}: expected a number, got {_describe(value)}")


def check_close(got, expected, *, rel=1e-6, abs_tol=0.0, name="value", unit="",
                reveal=True) -> None:
    """Visible check: ``|got - expected| <= rel*|expected| + abs_tol``, with a message that
    names the quantity, the expected value, the value got and the unit."""
    g = as_real(got, name)
    suffix = f" {unit}" if unit else ""
    if abs(g - expected) > rel * abs(expected) + abs_tol:
        tol = f"relative tolerance {rel:g}" + (f", absolute {abs_tol:g}" if abs_tol else "")
        shown = f"expected {_fmt_number(float(expected))}{suffix} ({tol}), " if reveal else ""
        raise CheckFailed(f"{name}: {shown}got {_fmt_number(g)}{suffix}")


def check_exact(got, expected, *, name="value", reveal=True) -> None:
    """Visible check: ``got`` equals ``expected`` with the same plain type (an int where an
    int is expected, a str where a str is, element by element for lists)."""
    problem = _exact_problem(got, expected, name)
    if problem:
        shown = f"expected {_describe(expected)}, " if reveal else ""
        raise CheckFailed(f"{problem}: {shown}got {_describe(got)}")


def _exact_problem(got, expected, name):
    et, gt = type(expected), type(got)
    if got is None and expected is not None:
        return f"{name} is None: did you forget `return`?"
    if et in (list, tuple):
        if gt not in (list, tuple):
            return f"{name} must be a list"
        if len(got) != len(expected):
            return f"{name} has {len(got)} items, not {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            problem = _exact_problem(g, e, f"{name}[{i}]")
            if problem:
                return problem
        return ""
    if et is bool:
        return "" if gt is bool and got == expected else (
            f"{name} must be True or False" if gt is not bool else f"{name} is not right")
    if et is int:
        if gt is bool or not (gt is int or gt.__module__ == "numpy" and "int" in gt.__name__):
            return f"{name} must be an integer (int)"
        return "" if int(got) == expected else f"{name} is not right"
    if et is float:
        try:
            return "" if as_real(got, name) == expected else f"{name} is not right"
        except CheckFailed as exc:
            return str(exc)
    if expected is None or et is str:
        if gt is not et:
            return f"{name} must be a {et.__name__}"
        return "" if got == expected else f"{name} is not right"
    raise TypeError(f"check_exact cannot compare expected values of type {et.__name__}")


def check_array_close(got, expected, *, rel=1e-6, abs_tol=0.0, name="array",
                      reveal=True) -> None:
    """Visible check, element by element, for a list or numpy array of numbers."""
    if hasattr(got, "tolist"):
        got = got.tolist()
    if type(got) not in (list, tuple):
        raise CheckFailed(f"{name}: expected a list of numbers, got {_describe(got)}")
    if len(got) != len(expected):
        raise CheckFailed(f"{name} has {len(got)} items, not {len(expected)}")
    for i, (g, e) in enumerate(zip(got, expected)):
        check_close(g, e, rel=rel, abs_tol=abs_tol, name=f"{name}[{i}]", reveal=reveal)


def call(fn, *args, **kwargs):
    """Call the student's ``fn(*args, **kwargs)`` for a visible check.

    It runs in the caller's thread, so Interrupt stops a runaway loop at once. A release
    stub (``NotImplementedError``) becomes one line saying what to do."""
    if not callable(fn):
        raise CheckFailed(f"{_describe(fn)} is not a function: run the cell that defines it")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        fname = getattr(fn, "__name__", "this function")
        raise NotImplementedYet(
            f"{fname} is not implemented yet: replace `raise NotImplementedError()` in its "
            "cell with your code, run that cell, then run this test again") from None


def attempt(fn, *args, **kwargs):
    """Call the student's ``fn`` for a demonstration cell: ``None`` while it is still the
    release stub (``NotImplementedError``), so the cell prints "finish the exercise" instead
    of stopping Run All; any other error is the student's bug and propagates."""
    try:
        return call(fn, *args, **kwargs)
    except NotImplementedYet:
        return None


def check_raises(fn, *args, exception=ValueError, name=None, **kwargs) -> None:
    """Visible check: ``fn(*args, **kwargs)`` raises ``exception``."""
    label = name or getattr(fn, "__name__", "function")
    try:
        call(fn, *args, **kwargs)
    except exception:
        return
    except NotImplementedYet:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the student
        raise CheckFailed(f"{label} raised {type(exc).__name__}, expected "
                          f"{exception.__name__}") from None
    raise CheckFailed(f"{label} did not raise {exception.__name__} for bad input")


# ------------------------------------------------------------------------------ records


def plain(value, depth=0):
    """``value`` as JSON-safe plain data that keeps its type: int stays int, float stays
    float (nan and inf as ``{"$float": "nan"}``), numpy scalars and arrays become Python
    numbers and lists, tuples become lists, anything else ``{"$object": type name}``."""
    t = type(value)
    if value is None or t in (bool, int, str):
        return value[:_MAX_TEXT] if t is str else value
    if t is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if depth >= _MAX_DEPTH:
        return {"$object": "too deep"}
    if t.__module__ == "numpy":
        if hasattr(value, "tolist") and (getattr(value, "ndim", 0) == 0 or t.__name__ == "ndarray"):
            if getattr(value, "size", 0) > _MAX_ITEMS:
                return {"$object": "array too large"}
            return plain(value.tolist(), depth + 1)
    if t in (list, tuple):
        return [plain(v, depth + 1) for v in value[:_MAX_ITEMS]]
    if t is dict:
        if all(type(k) is str for k in value):
            return {k[:200]: plain(v, depth + 1) for k, v in list(value.items())[:_MAX_ITEMS]}
        return {"$dict": [[plain(k, depth + 1), plain(v, depth + 1)]
                          for k, v in list(value.items())[:_MAX_ITEMS]]}
    return {"$object": t.__name__[:80]}


def _resolve(dotted: str):
    module, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _tripwire(*args, **kwargs):
    raise RuntimeError("coursekit-reference-call")


@contextmanager
def _forbidden(dotted_names):
    """Within the block, the named reference functions raise when called (their
    ``__code__`` is swapped, which catches aliases), and a profile hook notes any call
    into a function of the same name in the same source file (a fresh module copy)."""
    saved, watched, hits = [], set(), []
    for dotted in dotted_names:
        try:
            fn = _resolve(dotted)
        except (ImportError, AttributeError):
            continue
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None or fn.__closure__:
            continue
        watched.add((code.co_filename, code.co_name))
        saved.append((fn, code))
        fn.__code__ = _tripwire.__code__

    def profiler(frame, event, arg):
        if event == "call":
            key = (frame.f_code.co_filename, frame.f_code.co_name)
            if key in watched:
                hits.append(key[1])

    previous = sys.getprofile()
    sys.setprofile(profiler if watched else previous)
    try:
        yield hits
    finally:
        sys.setprofile(previous)
        for fn, code in saved:
            fn.__code__ = code


def _emit(data: dict) -> None:
    from IPython.display import display

    display({RECORD_MIME: data, "text/plain": f"[recorded {data['case']}]"}, raw=True)


def record(cell: str, case: str, thunk, forbid=()) -> None:
    """Run ``thunk()`` (a hidden case: the student's code on hidden inputs) and emit its
    outcome as plain data for the grader. Never raises, never compares anything."""
    data = {"cell": cell, "case": case}
    with _forbidden(forbid) as hits:
        try:
            data.update(outcome="value", value=plain(thunk()))
        except BaseException as exc:  # noqa: BLE001 - every outcome is data
            if isinstance(exc, KeyboardInterrupt):
                raise
            names = [k.__name__ for k in type(exc).__mro__][:8]
            if isinstance(exc, RuntimeError) and "coursekit-reference-call" in str(exc):
                hits.append("tripwire")
            data.update(outcome="raised", exception=names, message=str(exc)[:200])
    if hits:
        data["delegated"] = sorted(set(hits))[:5]
    _emit(data)
