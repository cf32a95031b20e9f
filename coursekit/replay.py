"""Recorded results of the graded functions, for the student library (DESIGN.md §7).

The student wheel holds no implementation of a function a student is graded on: its body
is replaced by ``return replay("<module>.<name>", locals())``, which looks the call up in
``coursekit/data/replay.json.gz``. That table holds every call the course's notebooks and
explorers make (recorded by ``coursekit.grading.studentlib`` with the full library), so the
demos, plots and explorers run before the student has written anything; any other call
raises :class:`NotInStudentLibrary`, which says which assignment has the student write it.
The instructor's library has no table and never calls this module.

Values are encoded as JSON (never pickle): numbers, strings, lists, tuples, dicts, numpy
arrays and scalars, enums, and coursekit's dataclasses and objects.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import gzip
import hashlib
import importlib
import json
from importlib import resources

import numpy as np

TABLE = "replay.json.gz"


class NotInStudentLibrary(RuntimeError):
    """A graded function was called with arguments the student library has no record of."""

    def _render_traceback_(self):  # IPython shows this instead of a traceback
        return [f"{type(self).__name__}: {self}"]


class Unencodable(TypeError):
    """A value the table cannot hold (a function defined in a notebook, a file, ...)."""


def _qualname(obj) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _resolve(name: str):
    module, _, qual = name.partition(":")
    obj = importlib.import_module(module)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def encode(value, key: bool = False):
    """A JSON-ready form of ``value`` that :func:`decode` turns back into an equal value.
    Raises :class:`Unencodable` for what cannot be recorded faithfully. ``key=True``: the
    form used in a call's key, floats rounded to 12 significant digits (a slider in the
    browser sends 35 * 0.01 = 0.35000000000000003 where Python writes 0.35)."""
    enc = functools.partial(encode, key=key)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):
        return {"$enum": _qualname(type(value)), "name": value.name}
    if isinstance(value, np.generic):
        return {"$np": value.dtype.str, "v": enc(value.item())}
    if type(value) is int:
        return value
    if type(value) is float:
        if value != value or abs(value) == float("inf"):
            return {"$f": repr(value)}
        return float(f"{value:.12g}") if key else value
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"$ndo": [enc(v) for v in value.ravel().tolist()],
                    "shape": list(value.shape)}
        data = np.ascontiguousarray(value)
        if key and data.dtype.kind == "f":
            data = np.array([float(f"{v:.12g}") for v in data.ravel().tolist()],
                            dtype=float).reshape(data.shape)
        return {"$nd": data.dtype.str, "shape": list(data.shape),
                "b": base64.b64encode(data.tobytes()).decode()}
    if isinstance(value, np.random.Generator):
        return {"$rng": enc(value.bit_generator.state)}
    if type(value) is list:
        return [enc(v) for v in value]
    if type(value) is tuple:
        return {"$t": [enc(v) for v in value]}
    if type(value) in (set, frozenset):
        items = sorted((enc(v) for v in value), key=lambda e: json.dumps(e, sort_keys=True))
        return {"$set" if type(value) is set else "$fset": items}
    if type(value) is dict:
        return {"$d": [[enc(k), enc(v)] for k, v in value.items()]}
    if isinstance(value, range):
        return {"$range": [value.start, value.stop, value.step]}
    cls = type(value)
    if not cls.__module__.startswith("coursekit"):
        if callable(value) and getattr(value, "__module__", "").startswith("coursekit"):
            return {"$fn": _qualname(value)}
        raise Unencodable(f"{cls.__module__}.{cls.__qualname__}")
    if dataclasses.is_dataclass(value):
        return {"$dc": _qualname(cls),
                "f": {f.name: enc(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if hasattr(value, "__dict__") and "<" not in cls.__qualname__:
        return {"$obj": _qualname(cls), "d": {k: enc(v) for k, v in vars(value).items()}}
    raise Unencodable(f"{cls.__module__}.{cls.__qualname__}")


def decode(data):
    """Inverse of :func:`encode`."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$t" in data:
        return tuple(decode(v) for v in data["$t"])
    if "$d" in data:
        return {decode(k): decode(v) for k, v in data["$d"]}
    if "$nd" in data:
        raw = base64.b64decode(data["b"])
        return np.frombuffer(raw, dtype=np.dtype(data["$nd"])).reshape(data["shape"]).copy()
    if "$ndo" in data:
        out = np.empty(len(data["$ndo"]), dtype=object)
        out[:] = [decode(v) for v in data["$ndo"]]
        return out.reshape(data["shape"])
    if "$np" in data:
        return np.dtype(data["$np"]).type(decode(data["v"]))
    if "$f" in data:
        return float(data["$f"])
    if "$set" in data or "$fset" in data:
        items = [decode(v) for v in data.get("$set", data.get("$fset"))]
        return set(items) if "$set" in data else frozenset(items)
    if "$range" in data:
        return range(*data["$range"])
    if "$enum" in data:
        return _resolve(data["$enum"])[data["name"]]
    if "$fn" in data:
        return _resolve(data["$fn"])
    if "$rng" in data:
        rng = np.random.default_rng()
        rng.bit_generator.state = decode(data["$rng"])
        return rng
    if "$dc" in data or "$obj" in data:
        cls = _resolve(data.get("$dc") or data["$obj"])
        obj = object.__new__(cls)
        for k, v in (data.get("f") or data.get("d")).items():
            object.__setattr__(obj, k, decode(v))
        return obj
    raise ValueError(f"replay table: unknown entry {sorted(data)[:3]}")


def call_key(name: str, arguments: dict) -> str:
    """The table key of one call: SHA-256 of the function's dotted name and its arguments
    by parameter name (so positional and keyword spellings of a call are the same key)."""
    args = dict(sorted(arguments.items()))
    blob = json.dumps([name, encode(args, key=True)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def _table() -> dict:
    try:
        raw = resources.files("coursekit.data").joinpath(TABLE).read_bytes()
    except FileNotFoundError:
        raise NotInStudentLibrary(f"coursekit/data/{TABLE} is missing from this student "
                                  "library: reinstall it from the course link") from None
    return json.loads(gzip.decompress(raw))


def replay(name: str, arguments: dict):
    """The recorded result of the graded function ``name`` called with ``arguments``; a
    random generator among the arguments is left in the state the real call left it."""
    table = _table()
    try:
        key = call_key(name, arguments)
    except Unencodable:
        key = None
    entry = table["calls"].get(key) if key else None
    if entry is None:
        where = ", ".join(table["graded"].get(name, [])) or "an assignment"
        short = name.rsplit(".", 1)[-1]
        raise NotInStudentLibrary(
            f"{name} is a function you write yourself (in {where}), so the student library "
            "has no implementation of it. It replays only the calls the course's notebooks "
            f"make, and this call is not one of them. Use your own {short} (the explorers "
            "use it as soon as it works).") from None
    if "x" in entry:  # the real call raised (a demo of a clear error message)
        raise _resolve(entry["x"])(entry["m"])
    for arg, state in entry.get("rng", {}).items():
        arguments[arg].bit_generator.state = decode(state)
    return decode(entry["r"])
