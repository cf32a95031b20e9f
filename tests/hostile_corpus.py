"""A corpus of hostile submissions, built from the real 02_memory_calculator notebooks.

Each case is a function that writes one student's submission folder and the outcome
the grading pipeline must report for it. Scores come from the assignment's points
(tests/test_course.py): test_static_memory 2, test_activations 3, test_zero 3,
test_min_gpus 3, test_checkpoint 2, test_loss_scale 2, test_kv_cache 2 (17 in all);
the sample student bob solves static, zero, checkpoint and kv (9).
"""

from __future__ import annotations

import json
from pathlib import Path

AID = "02_memory_calculator"


def _load(root: Path, student: str) -> dict:
    return json.loads((root / "samples" / student / AID / f"{AID}.ipynb").read_text())


def _cell(nb: dict, grade_id: str) -> dict:
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            return cell
    raise KeyError(grade_id)


def _src(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _prepend(nb, grade_id, code):
    cell = _cell(nb, grade_id)
    cell["source"] = code + "\n" + _src(cell)


def _append(nb, grade_id, code):
    cell = _cell(nb, grade_id)
    cell["source"] = _src(cell) + "\n" + code


def _write(root: Path, student: str, nb, name=f"{AID}.ipynb", raw: bytes | None = None):
    folder = root / "submitted" / student / AID
    folder.mkdir(parents=True, exist_ok=True)
    data = raw if raw is not None else (json.dumps(nb, indent=1) + "\n").encode()
    (folder / name).write_bytes(data)


PROBE = '''
import os as _os
def _probe(label, path, mode="r"):
    try:
        if mode == "r":
            with open(path, "rb") as fh:
                data = fh.read(200)
            print(f"LEAK {label}: read {len(data)} bytes")
        else:
            with open(path, "ab") as fh:
                fh.write(b"corrupted by a submission")
            print(f"LEAK {label}: wrote")
    except Exception as exc:
        print(f"BLOCKED {label}: {type(exc).__name__}")
'''


def build(root: Path) -> dict:
    """Write every hostile submission under ``root/submitted``; return
    ``{student: (status, score or None, note)}``."""
    root = Path(root).resolve()
    expected = {}

    def case(student, status, score, note=""):
        expected[student] = (status, score, note)

    # -- the honest class ---------------------------------------------------------------
    _write(root, "correct", _load(root, "alice"))
    case("correct", "graded", 17)
    _write(root, "partial", _load(root, "bob"))
    case("partial", "graded", 9)
    _write(root, "untouched", _load(root, "carol"))
    case("untouched", "graded", 0)

    # -- runaway code -------------------------------------------------------------------
    nb = _load(root, "alice")
    _prepend(nb, "ex_kv_cache", "while True:\n    pass")
    _write(root, "infinite_loop", nb)
    case("infinite_loop", "timeout", 15, "kv cell interrupted by the per-cell timeout")

    nb = _load(root, "alice")
    _prepend(nb, "ex_kv_cache", "import time\nwhile True:\n    try:\n        time.sleep(0.2)\n"
                                "    except KeyboardInterrupt:\n        pass")
    _write(root, "ignores_interrupt", nb)
    case("ignores_interrupt", "timeout", None, "per-cell timeout, interrupt ignored: "
                                               "nbgrader cannot grade it")

    nb = _load(root, "alice")
    _append(nb, "ex_zero", "import os\nos._exit(3)")
    _write(root, "os_exit", nb)
    case("os_exit", "error", None, "kernel exited")

    nb = _load(root, "alice")
    _append(nb, "ex_loss_scale", "import sys\nsys.exit()")
    _write(root, "sys_exit", nb)
    case("sys_exit", "graded", 17, "IPython turns SystemExit into a cell error")

    nb = _load(root, "alice")
    _prepend(nb, "ex_kv_cache", "_hog = []\nwhile True:\n    _hog.append(bytearray(2**30))")
    _write(root, "memory_bomb", nb)
    case("memory_bomb", "graded", 15, "MemoryError at the address-space limit")

    nb = _load(root, "alice")
    _prepend(nb, "ex_kv_cache", "import os, time\n_kids = 0\nwhile True:\n"
                                "    pid = os.fork()\n    if pid == 0:\n"
                                "        time.sleep(60)\n        os._exit(0)\n    _kids += 1")
    _write(root, "fork_bomb", nb)
    case("fork_bomb", "graded", 15, "fork fails at the process limit; children die with "
                                    "the kernel")

    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", "for _ in range(100):\n    print('x' * 2**20)")
    _write(root, "output_flood", nb)
    case("output_flood", "graded", 17, "100 MiB printed; truncated at the output budget")

    # -- notebook damage ------------------------------------------------------------------
    nb = _load(root, "bob")
    cell = _cell(nb, "test_activations")
    cell["source"] = "print('I edited the test')"
    _write(root, "edited_test", nb)
    case("edited_test", "graded", 9, "locked test cell restored from the gradebook")

    nb = _load(root, "bob")
    nb["cells"] = [c for c in nb["cells"]
                   if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                   != "test_static_memory"]
    _write(root, "deleted_test", nb)
    case("deleted_test", "graded", 9, "deleted test cell re-inserted and graded")

    nb = _load(root, "alice")
    for c in nb["cells"]:
        c.get("metadata", {}).pop("nbgrader", None)
    _write(root, "stripped_metadata", nb)
    case("stripped_metadata", "rejected", None, "nbgrader metadata stripped")

    raw = (json.dumps(_load(root, "alice")) + "\n").encode()[:5000]
    _write(root, "invalid_json", None, raw=raw)
    case("invalid_json", "rejected", None, "not valid JSON")

    _write(root, "colab_renamed", _load(root, "alice"), name=f"Copy of {AID}.ipynb")
    case("colab_renamed", "graded", 17, "renamed by the pre-check")

    # -- integrity tricks -----------------------------------------------------------------
    nb = _load(root, "alice")
    _append(nb, "ex_zero", "class _AlwaysEqual(float):\n"
                           "    def __eq__(self, other):\n        return True\n"
                           "    def __le__(self, other):\n        return True\n"
                           "_real_zero = zero_memory_per_gpu\n"
                           "def zero_memory_per_gpu(*args, **kwargs):\n"
                           "    return _AlwaysEqual(-1.0)")
    _write(root, "always_equal", nb)
    case("always_equal", "graded", 11, "zero (3) rejected by type; min_gpus (3) uses it")

    nb = _load(root, "alice")  # right answers, but the checkers patched: no credit at all
    _prepend(nb, "ex_static_memory",
             "import math, builtins, numpy as np\n"
             "math.isclose = lambda *a, **k: True\n"
             "np.isclose = lambda *a, **k: True\n"
             "np.allclose = lambda *a, **k: True\n"
             "builtins.abs = lambda x: 0\n")
    _write(root, "patches_checkers", nb)
    case("patches_checkers", "graded", 0, "integrity check fails every test")

    nb = _load(root, "alice")
    _append(nb, "ex_zero",
            "from coursekit.training.memory import Recipe as _R, zero_bytes_per_gpu as _z\n"
            "def zero_memory_per_gpu(n_params, dp, stage, recipe):\n"
            "    r = _R('x', recipe['weights'], recipe['gradients'], recipe['master'],"
            " recipe['optimizer'])\n"
            "    return _z(n_params, dp, stage, r).total")
    _write(root, "calls_reference", nb)
    case("calls_reference", "graded", 11, "tripwire on the reference (zero 3, min_gpus 3)")

    nb = _load(root, "alice")
    _append(nb, "ex_kv_cache",
            "import sys as _sys\n"
            "def kv_cache_bytes(*args, **kwargs):\n"
            "    frame = _sys._getframe(1)\n"
            "    while frame is not None:\n"
            "        for value in list(frame.f_locals.values()):\n"
            "            if type(value) in (int, float) and value > 30000:\n"
            "                return value\n"
            "        frame = frame.f_back\n"
            "    return 0")
    _write(root, "frame_reader", nb)
    case("frame_reader", "graded", 15, "no test frame above the student's function")

    # -- escaping the sandbox -------------------------------------------------------------
    source_nb = root / "source" / AID / f"{AID}.ipynb"
    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", PROBE + "\n".join([
        f"_probe('source-abs', {str(source_nb)!r})",
        f"_probe('source-rel', '../../../source/{AID}/{AID}.ipynb')",
        f"_probe('notebooks', {str(root / 'notebooks' / (AID + '.py'))!r})",
        f"_probe('samples', {str(root / 'samples' / 'alice' / AID / (AID + '.ipynb'))!r})",
    ]))
    _write(root, "reads_source", nb)
    case("reads_source", "graded", 17, "every probe BLOCKED")

    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", PROBE + "\n".join([
        f"_probe('other-submitted', {str(root / 'submitted' / 'correct' / AID / (AID + '.ipynb'))!r})",
        f"_probe('other-autograded', '../../correct/{AID}/{AID}.ipynb')",
    ]))
    _write(root, "reads_others", nb)
    case("reads_others", "graded", 17, "every probe BLOCKED")

    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", PROBE + "\n".join([
        f"_probe('gradebook', {str(root / 'gradebook.db')!r}, mode='w')",
        f"_probe('release', {str(root / 'release' / AID / (AID + '.ipynb'))!r}, mode='w')",
        f"_probe('other-student', {str(root / 'submitted' / 'correct' / AID / (AID + '.ipynb'))!r}, mode='w')",
        "_probe('coursekit', __import__('coursekit').__file__, mode='w')",
    ]))
    _write(root, "writes_gradebook", nb)
    case("writes_gradebook", "graded", 17, "every probe BLOCKED")
    return expected


PROBED = ("reads_source", "reads_others", "writes_gradebook")
