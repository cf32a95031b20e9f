"""Assertion helpers for notebook tests that a submission cannot easily fool.

Visible and hidden tests in every assignment use these instead of bare ``assert
x == y`` or ``math.isclose``:

* values must be plain numbers/strings/bools (an object whose ``__eq__`` always
  says True is rejected by type, before any comparison);
* comparisons use arithmetic on builtin floats and the originals of ``abs`` etc.
  captured when this module was first imported (in the locked setup cell), and
  every check first verifies that ``math.isclose``, ``numpy.isclose``,
  ``numpy.allclose`` and key builtins have not been replaced since;
* :func:`call` runs the student's function in a fresh thread, so it cannot read
  the test's local variables through ``sys._getframe``, and can temporarily turn
  the matching ``coursekit`` reference functions into tripwires (``forbid=``), so a
  graded function that merely calls the library earns nothing.

Hidden tests keep ``reveal=False`` (the default): their failure message names the
quantity and the submitted value but never the expected one, so feedback does not
leak answers.
"""

from __future__ import annotations

import builtins
import math
import threading
from contextlib import contextmanager

import numpy as np

_BUILTIN_NAMES = ("abs", "float", "int", "isinstance", "type", "len", "round", "sum",
                  "min", "max", "all", "any", "bool", "str", "repr", "list", "tuple",
                  "dict", "range", "sorted", "zip", "enumerate", "getattr", "hasattr",
                  "iter", "next", "map", "print", "__import__")
_ORIGINAL_BUILTINS = {n: getattr(builtins, n) for n in _BUILTIN_NAMES}
_ORIGINAL_ATTRS = {
    ("math", "isclose"): math.isclose,
    ("numpy", "isclose"): np.isclose,
    ("numpy", "allclose"): np.allclose,
    ("numpy", "array_equal"): np.array_equal,
    ("numpy.testing", "assert_allclose"): np.testing.assert_allclose,
}
_MODULES = {"math": math, "numpy": np, "numpy.testing": np.testing}

_abs = _ORIGINAL_BUILTINS["abs"]
_float = _ORIGINAL_BUILTINS["float"]
_int = _ORIGINAL_BUILTINS["int"]
_type = _ORIGINAL_BUILTINS["type"]
_len = _ORIGINAL_BUILTINS["len"]
_isinstance = _ORIGINAL_BUILTINS["isinstance"]
_repr = _ORIGINAL_BUILTINS["repr"]

_NUMPY_REAL = (np.floating, np.integer)


class GradingIntegrityError(AssertionError):
    """The test environment was tampered with (a checker or builtin was replaced)."""


def integrity_problems() -> list:
    """Names of checkers/builtins replaced since this module was imported."""
    problems = [f"builtins.{n}" for n, f in _ORIGINAL_BUILTINS.items()
                if getattr(builtins, n, None) is not f]
    problems += [f"{m}.{a}" for (m, a), f in _ORIGINAL_ATTRS.items()
                 if getattr(_MODULES[m], a, None) is not f]
    return problems


def assert_integrity() -> None:
    """Raise :class:`GradingIntegrityError` if anything the checks rely on was replaced."""
    problems = integrity_problems()
    if problems:
        raise GradingIntegrityError(
            "the notebook replaced functions the tests rely on: " + ", ".join(problems)
            + ". Remove that code and restart the kernel.")


def _describe(value) -> str:
    text = _repr(value) if _type(value) in (int, float, str, bool) else object.__repr__(value)
    return text if _len(text) <= 80 else text[:77] + "..."


def as_real(value, name: str = "value") -> float:
    """``value`` as a builtin float, if it is a plain int/float or numpy real scalar
    (0-d arrays included). Anything else (bools, strings, custom classes, subclasses
    of float) is rejected with an AssertionError that names ``name``."""
    t = _type(value)
    if t is np.ndarray and value.ndim == 0:
        value = value[()]
        t = _type(value)
    if t in (int, float) or (t.__module__ == "numpy" and _isinstance(value, _NUMPY_REAL)):
        if t is bool or t is np.bool_:
            raise AssertionError(f"{name} must be a number, got a bool ({_describe(value)})")
        out = _float(value)
        if out != out or out in (float("inf"), float("-inf")):
            raise AssertionError(f"{name} must be a finite number, got {_describe(value)}")
        return out
    raise AssertionError(
        f"{name} must be a plain number (int or float), got {t.__name__}: {_describe(value)}")


def _values_close(got: float, expected: float, rel: float, abs_tol: float) -> bool:
    return _abs(got - expected) <= rel * _abs(expected) + abs_tol


def check_close(got, expected, *, rel=1e-6, abs_tol=0.0, name="value", reveal=False,
                unit="") -> None:
    """Assert ``|got - expected| <= rel*|expected| + abs_tol`` for a plain number ``got``."""
    assert_integrity()
    g = as_real(got, name)
    e = _float(expected)
    if not _values_close(g, e, rel, abs_tol):
        suffix = f" {unit}" if unit else ""
        if reveal:
            raise AssertionError(f"{name}: expected {e!r}{suffix} (rel. tolerance {rel:g}), "
                                 f"got {g!r}{suffix}")
        raise AssertionError(f"{name} is not right (got {g!r}{suffix})")


def check_exact(got, expected, *, name="value", reveal=False) -> None:
    """Assert ``got`` equals ``expected`` exactly, with the same plain type family.

    Integers (int or numpy integer) compare as ints; str, bool and None must have
    exactly that type; lists/tuples compare element by element.
    """
    assert_integrity()
    ok, why = _exact(got, expected, name)
    if not ok:
        detail = f"expected {_describe(expected)}, got {_describe(got)}" if reveal \
            else f"got {_describe(got)}"
        raise AssertionError(f"{why}: {detail}")


def _exact(got, expected, name):
    et, gt = _type(expected), _type(got)
    if et in (list, tuple):
        if gt not in (list, tuple):
            return False, f"{name} must be a list"
        if _len(got) != _len(expected):
            return False, f"{name} has {_len(got)} items, not the right number"
        for i, (g, e) in enumerate(zip(got, expected)):
            ok, why = _exact(g, e, f"{name}[{i}]")
            if not ok:
                return ok, why
        return True, ""
    if et is bool or expected is None or et is str:
        if gt is not et and not (et is bool and gt is np.bool_):
            return False, f"{name} must be a {et.__name__}"
        return (bool(got) == expected if et is bool else got == expected), f"{name} is not right"
    if et is int:
        if not (gt is int or (gt.__module__ == "numpy" and _isinstance(got, np.integer))):
            return False, f"{name} must be an integer (int)"
        return _int(got) == expected, f"{name} is not right"
    if et is float:
        return _float(as_real(got, name)) == expected, f"{name} is not right"
    raise TypeError(f"check_exact does not compare expected values of type {et.__name__}")


def check_array_close(got, expected, *, rel=1e-6, abs_tol=0.0, name="array",
                      reveal=False) -> None:
    """Assert a sequence/array of numbers matches ``expected`` element-wise."""
    assert_integrity()
    if _type(got) is np.ndarray:
        if got.dtype.kind not in "iuf":
            raise AssertionError(f"{name} must hold numbers, got dtype {got.dtype}")
        values = got.ravel().tolist()
        shape = got.shape
    elif _type(got) in (list, tuple):
        values = [as_real(v, f"{name}[{i}]") for i, v in enumerate(got)]
        shape = (_len(values),)
    else:
        raise AssertionError(f"{name} must be a list or numpy array, got {_type(got).__name__}")
    exp = np.asarray(expected, dtype=float)
    if tuple(shape) != exp.shape:
        raise AssertionError(f"{name} has shape {tuple(shape)}, expected {exp.shape}")
    for i, (g, e) in enumerate(zip(values, exp.ravel().tolist())):
        if not _values_close(_float(g), e, rel, abs_tol):
            detail = f"expected {e!r}, got {g!r}" if reveal else f"got {g!r}"
            raise AssertionError(f"{name}: element {i} is not right ({detail})")


def check_raises(fn, *args, exception=ValueError, name=None, **kwargs) -> None:
    """Assert ``fn(*args, **kwargs)`` raises ``exception`` (run through :func:`call`)."""
    label = name or getattr(fn, "__name__", "function")
    try:
        call(fn, *args, **kwargs)
    except exception:
        return
    except Exception as exc:  # noqa: BLE001 - reported to the student
        raise AssertionError(f"{label} raised {type(exc).__name__}, "
                             f"expected {exception.__name__}") from None
    raise AssertionError(f"{label} did not raise {exception.__name__} for bad input")


def _tripwire(*args, **kwargs):
    raise RuntimeError("coursekit-reference-call: a graded function must implement the "
                       "formula itself, not call the coursekit reference")


@contextmanager
def forbidden(*functions):
    """Within the block, calling any of ``functions`` raises (their code is swapped).

    Swapping ``__code__`` catches every alias (``from coursekit... import f as g``).
    Functions with closures are not supported (none of the references has one).
    """
    saved = []
    try:
        for f in functions:
            f = getattr(f, "__func__", f)
            if getattr(f, "__closure__", None):
                raise TypeError(f"cannot forbid {f.__qualname__}: it has a closure")
            saved.append((f, f.__code__))
            f.__code__ = _tripwire.__code__
        yield
    finally:
        for f, code in saved:
            f.__code__ = code


def call(fn, *args, forbid=(), **kwargs):
    """Call ``fn(*args, **kwargs)`` in a fresh thread and return its result.

    The student's code sees no test frame above it (``sys._getframe(1)`` is the
    thread bootstrap) and, with ``forbid=``, cannot call those reference functions.
    Exceptions are re-raised; a tripwire hit becomes an AssertionError.
    """
    assert_integrity()
    if not callable(fn):
        raise AssertionError(f"{_describe(fn)} is not a function")
    box = {}

    def runner():
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    with forbidden(*forbid):
        worker = threading.Thread(target=runner, name="student-code", daemon=True)
        worker.start()
        worker.join()
    if "error" in box:
        exc = box["error"]
        if _isinstance(exc, RuntimeError) and "coursekit-reference-call" in str(exc):
            raise AssertionError(
                f"{getattr(fn, '__name__', 'the function')} calls the coursekit reference "
                "implementation; implement the formula yourself") from None
        raise exc
    return box.get("result")


def reference_calls_blocked(fn, *args, forbid=(), **kwargs) -> bool:
    """True if ``fn`` runs without touching any function in ``forbid``."""
    try:
        call(fn, *args, forbid=forbid, **kwargs)
    except AssertionError as exc:
        if "coursekit reference" in str(exc):
            return False
        raise
    except Exception:  # noqa: BLE001 - other errors are graded elsewhere
        return True
    return True
