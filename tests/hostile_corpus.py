"""A corpus of hostile submissions, built from the real 02_memory_calculator notebooks.

Each case is a function that writes one student's submission folder and the outcome
the grading pipeline must report for it. Scores come from the assignment's points
(tests/test_course.py): test_static_memory 2, test_activations 3, test_zero 3,
test_min_gpus 3, test_checkpoint 2, test_loss_scale 2, test_kv_cache 2 (17 in all);
the sample student bob solves static, zero, checkpoint and kv (9).

Every attack must earn at most the honest score of the code it carries: the untouched
stubs 0, the full solution 17, and 0 for an item that delegates to coursekit. The cases
under "forging the verdict" are the attacks of issue #11, which earned 17/17 from stubs
before grading moved outside the kernel.
"""

from __future__ import annotations

import json
import os
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


FUNCTIONS = {"ex_static_memory": "static_memory_bytes", "ex_activations": "activation_bytes_layer",
             "ex_zero": "zero_memory_per_gpu", "ex_min_gpus": "min_gpus_to_fit",
             "ex_checkpoint": "best_checkpoint_count", "ex_loss_scale": "loss_scale_for",
             "ex_kv_cache": "kv_cache_bytes"}


def _insert_after(nb, grade_id, code):
    """Add a new student cell (no metadata) after the cell ``grade_id``."""
    index = nb["cells"].index(_cell(nb, grade_id))
    nb["cells"].insert(index + 1, {"cell_type": "code", "metadata": {}, "source": code,
                                   "outputs": [], "execution_count": None,
                                   "id": f"added-{index}"})


def _every_answer(nb, body):
    """Replace every answer function by ``def name(*args, **kwargs): <body>``."""
    for gid, name in FUNCTIONS.items():
        _cell(nb, gid)["source"] = f"def {name}(*args, **kwargs):\n" + body


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
            if not _os.path.exists(path):  # writing a new file into its private /tmp is no leak
                raise FileNotFoundError(path)
            with open(path, "ab") as fh:
                fh.write(b"corrupted by a submission")
            print(f"LEAK {label}: wrote")
    except Exception as exc:
        print(f"BLOCKED {label}: {type(exc).__name__}")
'''


def build(root: Path, canary_file: Path | None = None, listen_port: int | None = None) -> dict:
    """Write every hostile submission under ``root/submitted``; return
    ``{student: (status, score or None, note)}``. ``canary_file``: a root-only file whose
    content must never reach any output; ``listen_port``: a TCP port on 127.0.0.1 the
    grader's machine listens on, which no kernel may reach."""
    root = Path(root).resolve()
    expected = {}

    def case(student, status, score, note=""):
        expected[student] = (status, score, note)

    # -- the honest class ---------------------------------------------------------------
    _write(root, "correct", _load(root, "alice"))
    case("correct", "graded", 28)
    _write(root, "partial", _load(root, "bob"))
    case("partial", "graded", 9)
    _write(root, "untouched", _load(root, "carol"))
    case("untouched", "graded", 0)

    # -- a forged submission time (issue #12): the instructor's timestamps.csv is used ------
    _write(root, "forged_timestamp", _load(root, "alice"))
    (root / "submitted" / "forged_timestamp" / AID / "timestamp.txt").write_text(
        "1999-01-01 00:00:00")
    (root / "timestamps.csv").write_text(
        f"student_id,assignment_id,timestamp\nforged_timestamp,{AID},{TRUSTED_TIME}\n")
    case("forged_timestamp", "graded", 28, f"recorded as submitted at {TRUSTED_TIME}")

    # -- runaway code -------------------------------------------------------------------
    nb = _load(root, "alice")
    _prepend(nb, "ex_kv_cache", "while True:\n    pass")
    _write(root, "infinite_loop", nb)
    case("infinite_loop", "timeout", 26, "kv cell interrupted by the per-cell timeout")

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
    case("sys_exit", "graded", 28, "IPython turns SystemExit into a cell error")

    nb = _load(root, "alice")
    _prepend(nb, "ex_kv_cache", "_hog = []\nwhile True:\n    _hog.append(bytearray(2**30))")
    _write(root, "memory_bomb", nb)
    case("memory_bomb", "graded", 26, "MemoryError at the address-space limit")

    nb = _load(root, "alice")
    _prepend(nb, "ex_kv_cache", "import os, time\n_kids = 0\nwhile True:\n"
                                "    pid = os.fork()\n    if pid == 0:\n"
                                "        time.sleep(60)\n        os._exit(0)\n    _kids += 1")
    _write(root, "fork_bomb", nb)
    case("fork_bomb", "graded", 26, "fork fails at the process limit; children die with "
                                    "the kernel")

    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", "for _ in range(100):\n    print('x' * 2**20)")
    _write(root, "output_flood", nb)
    case("output_flood", "graded", 28, "100 MiB printed; truncated at the output budget")

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
    case("colab_renamed", "graded", 28, "renamed by the pre-check")

    # -- integrity tricks -----------------------------------------------------------------
    nb = _load(root, "alice")
    _append(nb, "ex_zero", "class _AlwaysEqual(float):\n"
                           "    def __eq__(self, other):\n        return True\n"
                           "    def __le__(self, other):\n        return True\n"
                           "_real_zero = zero_memory_per_gpu\n"
                           "def zero_memory_per_gpu(*args, **kwargs):\n"
                           "    return _AlwaysEqual(-1.0)")
    _write(root, "always_equal", nb)
    case("always_equal", "graded", 22, "zero (3) rejected by type; min_gpus (3) uses it")

    nb = _load(root, "carol")  # stubs, and every comparator the kernel has patched
    _prepend(nb, "ex_static_memory",
             "import math, builtins, numpy as np\n"
             "math.isclose = lambda *a, **k: True\n"
             "np.isclose = lambda *a, **k: True\n"
             "np.allclose = lambda *a, **k: True\n"
             "builtins.abs = lambda x: 0\n")
    _write(root, "patches_checkers", nb)
    case("patches_checkers", "graded", 0, "comparisons happen outside the kernel")

    nb = _load(root, "alice")
    _append(nb, "ex_zero",
            "from coursekit.training.memory import Recipe as _R, zero_bytes_per_gpu as _z\n"
            "def zero_memory_per_gpu(n_params, dp, stage, recipe):\n"
            "    r = _R('x', recipe['weights'], recipe['gradients'], recipe['master'],"
            " recipe['optimizer'])\n"
            "    return _z(n_params, dp, stage, r).total")
    _write(root, "calls_reference", nb)
    case("calls_reference", "graded", 22, "tripwire on the reference (zero 3, min_gpus 3)")

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
    case("frame_reader", "graded", 26, "no test frame above the student's function")

    # -- forging the verdict (issue #11: each of these scored 17/17 from stubs) -----------
    nb = _load(root, "carol")
    for c in nb["cells"]:
        meta = c.setdefault("metadata", {})
        if meta.get("nbgrader", {}).get("grade"):
            meta["tags"] = ["skip-execution"]
            meta["nbgrader"]["points"] = 100
        if meta.get("nbgrader", {}).get("solution"):
            meta["nbgrader"].update(grade=True, points=100)
    nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "mine",
                                    "language": "python"}
    _write(root, "skip_execution", nb)
    case("skip_execution", "graded", 0, "template metadata: tags and points ignored")

    nb = _load(root, "carol")
    _every_answer(nb, "    get_ipython().displayhook('graded')\n    return 0\n")
    _write(root, "displayhook", nb)
    case("displayhook", "graded", 0, "outputs never decide a score")

    nb = _load(root, "carol")
    _insert_after(nb, "setup", (
        "import ast as _ast\n"
        "def _from_running_test(*args, **kwargs):\n"
        "    tree = _ast.parse(In[-1])\n"
        "    nums = [n.value for n in _ast.walk(tree) if isinstance(n, _ast.Constant)\n"
        "            and type(n.value) in (int, float)]\n"
        "    return max(nums) if nums else 0\n"))
    _every_answer(nb, "    return _from_running_test()\n")
    _write(root, "reads_running_test", nb)
    case("reads_running_test", "graded", 0, "the running test holds no expected value")

    nb = _load(root, "carol")
    _insert_after(nb, "setup", (
        "import ast as _ast\n"
        "ip = get_ipython()\n"
        "class _Wrap(_ast.NodeTransformer):\n"
        "    def visit_Module(self, node):\n"
        "        handler = _ast.ExceptHandler(type=None, name=None, body=[_ast.Pass()])\n"
        "        node.body = [_ast.Try(body=node.body or [_ast.Pass()], handlers=[handler],\n"
        "                              orelse=[], finalbody=[])]\n"
        "        return _ast.fix_missing_locations(node)\n"
        "ip.ast_transformers.append(_Wrap())\n"
        "ip.input_transformers_post.append(lambda lines: lines)\n"
        "ip.events.register('pre_run_cell', lambda info: print('all tests passed'))\n"
        "ip.set_custom_exc((BaseException,), lambda *a, **k: None)\n"
        "ck = None\n"))
    _write(root, "kernel_hooks", nb)
    case("kernel_hooks", "graded", 0, "hooks change outputs, never records or verdicts")

    nb = _load(root, "carol")
    _insert_after(nb, "setup", (
        "import sys as _sys, numpy as _np\n"
        "class _Sneaky(_np.float64):\n"
        "    pass\n"
        "_Sneaky.__module__ = 'numpy'\n"
        "def _expected_from_frames(*args, **kwargs):\n"
        "    frame = _sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        for name in ('expected', 'expect', 'e'):\n"
        "            if name in frame.f_locals:\n"
        "                return _Sneaky(frame.f_locals[name])\n"
        "        frame = frame.f_back\n"
        "    return _Sneaky(0.0)\n"))
    _every_answer(nb, "    return _expected_from_frames()\n")
    _write(root, "numpy_subclass_frames", nb)
    case("numpy_subclass_frames", "graded", 0, "no expected value in any kernel frame")

    nb = _load(root, "alice")
    _append(nb, "ex_zero", (
        "import importlib.util as _u\n"
        "import coursekit.training.memory as _orig\n"
        "_spec = _u.spec_from_file_location('coursekit.training._copy', _orig.__file__)\n"
        "_fresh = _u.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_fresh)\n"
        "def zero_memory_per_gpu(n_params, dp, stage, recipe):\n"
        "    r = _fresh.Recipe('x', recipe['weights'], recipe['gradients'], recipe['master'],\n"
        "                      recipe['optimizer'])\n"
        "    return _fresh.zero_bytes_per_gpu(n_params, dp, stage, r).total\n"))
    _write(root, "fresh_module_copy", nb)
    case("fresh_module_copy", "graded", 22, "delegation found statically: zero (3) and "
                                            "min_gpus (3), which calls it, earn 0")

    nb = _load(root, "alice")
    nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None,
                        "outputs": [], "id": "leak-cell", "source": (
                            "for _i, _src in enumerate(In):\n"
                            "    if 'HIDDEN' in _src or '_record_' in _src:\n"
                            "        print(_i, _src)\n")})
    _write(root, "feedback_leak", nb)
    case("feedback_leak", "graded", 28, "prints the executed hidden code into feedback; "
                                        "it holds no expected value")

    nb = _load(root, "bob")
    _cell(nb, "ex_activations")["source"] = (
        "def activation_bytes_layer(seq_len, micro_batch, hidden, n_heads, recompute='none'):\n"
        "    sbh = seq_len * micro_batch * hidden\n"
        "    if recompute == 'none':\n"
        "        return sbh * (34 + 5 * n_heads * seq_len / hidden)\n"
        "    if recompute == 'full':\n"
        "        return 2 * sbh\n"
        "    raise ValueError(recompute)  # selective recomputation not done yet\n")
    _write(root, "partly_right", nb)
    case("partly_right", "graded", 11.4, "per-case points: 4 of 5 activation cases (2.4)")

    nb = _load(root, "alice")
    _append(nb, "ex_kv_cache", (
        "from coursekit.grading.checks import _emit as _e\n"
        "_honest_kv = kv_cache_bytes\n"
        "_n = [0]\n"
        "def kv_cache_bytes(*args, **kwargs):\n"
        "    value = _honest_kv(*args, **kwargs)\n"
        "    _n[0] += 1\n"
        "    for case in ('Llama-2-7B_4096_tokens', 'Llama-2-70B_batch_8', 'GPT-2_XL_fp8'):\n"
        "        _e({'cell': 'test_kv_cache', 'case': case, 'outcome': 'value',\n"
        "            'value': value})\n"
        "    return value\n"))
    _write(root, "forged_records", nb)
    case("forged_records", "graded", 26, "extra records for its own cases are duplicates: "
                                         "forging can only lose points")

    # -- intake (issue #12): only regular files, checked before anything is copied -------
    def folder_with(student, nb=None):
        folder = root / "submitted" / student / AID
        folder.mkdir(parents=True, exist_ok=True)
        if nb is not None:
            (folder / f"{AID}.ipynb").write_text(json.dumps(nb))
        return folder

    folder = folder_with("symlinked_files", _load(root, "carol"))
    (folder / "notes.txt").symlink_to(f"../../../source/{AID}/{AID}.ipynb")
    (folder / "gb.txt").symlink_to("../../../gradebook.db")
    if canary_file is not None:
        (folder / "shadow.txt").symlink_to(canary_file)
    case("symlinked_files", "rejected", None, "symlinks to source/, the gradebook and a "
                                               "root-only file: rejected at intake")
    folder = folder_with("symlinked_notebook")
    (folder / f"{AID}.ipynb").symlink_to(root / "source" / AID / f"{AID}.ipynb")
    case("symlinked_notebook", "rejected", None, "the notebook is a symlink to the solutions")
    folder = folder_with("dev_zero", _load(root, "carol"))
    (folder / "data.bin").symlink_to("/dev/zero")
    case("dev_zero", "rejected", None, "a symlink to /dev/zero is never opened")
    folder = folder_with("fifo_notebook")
    os.mkfifo(folder / f"{AID}.ipynb")
    case("fifo_notebook", "rejected", None, "a FIFO named like the notebook")
    # issue #13: a student id is printed raw by formgrader's template
    markup_id = '<img src=x onerror="alert(document.cookie)">'
    folder_with(markup_id, _load(root, "alice"))
    case(markup_id, "rejected", None, "a student id that is markup in formgrader's page")
    folder = folder_with("dir_notebook")
    (folder / f"{AID}.ipynb").mkdir()
    case("dir_notebook", "rejected", None, "a folder named like the notebook")
    _write(root, "deep_json", None, raw=b"[" * 100_000 + b"]" * 100_000)
    case("deep_json", "rejected", None, "JSON nested 100,000 deep")
    nb = _load(root, "alice")
    _cell(nb, "ex_kv_cache")["metadata"]["nbgrader"]["grade_id"] = ["ex_kv_cache"]
    nb["cells"][0]["metadata"] = ["not", "a", "dict"]
    _write(root, "malformed_metadata", nb)
    case("malformed_metadata", "rejected", None, "a list where metadata and grade_id "
                                                 "belong: rejected alone, with its reason")

    # -- the kernel's view (issue #12): environment, network, other kernels, floods -------
    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", (
        "import os as _os, socket as _socket, glob as _glob\n"
        "print('ENV', sorted(_os.environ.items()))\n"
        f"_port = {listen_port or 9}\n"
        "try:\n"
        "    _socket.create_connection(('127.0.0.1', _port), timeout=2)\n"
        "    print('LEAK network: connected to the grader machine')\n"
        "except OSError as _e:\n"
        "    print('BLOCKED network', type(_e).__name__)\n"
        "_seen = _glob.glob('/tmp/coursekit-ipc-*') + _glob.glob('/tmp/coursekit-sandbox-*')\n"
        "print('LEAK other kernels' if len(_seen) > 1 else 'BLOCKED other kernels', _seen)\n"
        "print('TCP table lines', open('/proc/net/tcp').read().count(chr(10)))\n"))
    _write(root, "kernel_view", nb)
    case("kernel_view", "graded", 28, "env cleared, no network, no other kernel's sockets")

    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", (
        "from IPython.display import display as _d\n"
        "for _ in range(3):\n"
        "    _d({'text/plain': 'x' * 25 * 2**20}, raw=True)\n"))
    _write(root, "display_flood", nb)
    case("display_flood", "graded", 28, "75 MiB of display_data: cut by the grader's budget")

    nb = _load(root, "alice")
    _prepend(nb, "ex_kv_cache", (
        "import os as _os\n"
        "for _ in range(40):\n"
        "    if _os.fork() == 0:\n"
        "        _os.setsid()\n"
        "        while True:\n"
        "            pass\n"))
    _write(root, "cpu_hog", nb)
    case("cpu_hog", "timeout", None, "40 spinning session leaders share one core of their "
                                     "own cgroup; the notebook's limit ends them all")

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
    case("reads_source", "graded", 28, "every probe BLOCKED")

    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", PROBE + "\n".join([
        f"_probe('other-submitted', {str(root / 'submitted' / 'correct' / AID / (AID + '.ipynb'))!r})",
        f"_probe('other-autograded', '../../correct/{AID}/{AID}.ipynb')",
    ]))
    _write(root, "reads_others", nb)
    case("reads_others", "graded", 28, "every probe BLOCKED")

    nb = _load(root, "alice")
    _append(nb, "ex_static_memory", PROBE + "\n".join([
        f"_probe('gradebook', {str(root / 'gradebook.db')!r}, mode='w')",
        f"_probe('release', {str(root / 'release' / AID / (AID + '.ipynb'))!r}, mode='w')",
        f"_probe('other-student', {str(root / 'submitted' / 'correct' / AID / (AID + '.ipynb'))!r}, mode='w')",
        "_probe('coursekit', __import__('coursekit').__file__, mode='w')",
    ]))
    _write(root, "writes_gradebook", nb)
    case("writes_gradebook", "graded", 28, "every probe BLOCKED")
    return expected


TRUSTED_TIME = "2026-11-20 17:05:00"
PROBED = ("reads_source", "reads_others", "writes_gradebook", "kernel_view")
QUARANTINED = ("symlinked_files", "symlinked_notebook", "dev_zero", "fifo_notebook")
"""Plain nbgrader would open these in its own copy of the folder (a FIFO hangs it, a link to
/dev/zero fills the disk): nbgrader_config.py's pre-convert hook moves the special files to
.coursekit-quarantine/ first, unopened, and the submission is rejected at intake."""
