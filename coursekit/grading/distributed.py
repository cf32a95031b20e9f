"""Grading one submission anywhere: the course and the submission travel as data.

:func:`grade_submission` is the one grading function of the course. ``grade`` runs it on
Dask distributed (a ``LocalCluster`` on this machine by default, or any cluster through
``--scheduler tcp://HOST:8786``) or, as the benchmark's baseline, in a local
``multiprocessing`` pool (``--executor pool``). Either way the worker needs no shared
filesystem with the driver:

* the driver ships the **course files** nbgrader's configuration reads, once per
  assignment (:class:`CourseFiles`: ``nbgrader_config.py``, ``pyproject.toml``,
  ``timestamps.csv``, ``source/<aid>/``, ``release/<aid>/``, ``notebooks/<aid>.py``),
  and each **submission** with its task (:class:`Submission`);
* the worker writes them into a scratch course directory of its own (under the Dask
  worker's local directory, or a temporary folder), points ``COURSEKIT_GRADEBOOK`` at the
  driver's gradebook URL, loads ``NbGraderAPI`` for that directory once (cached per
  process, keyed by the course files and settings), and autogrades exactly as
  ``nbgrader autograde`` does, every kernel inside the sandbox the shipped
  ``nbgrader_config.py`` configures;
* it returns the autograded folder's files (relative path -> bytes) and the outcome
  (success, log, error, the sandbox's status, seconds, worker id); the driver writes
  ``autograded/<student>/<aid>/`` and journals the outcome (:mod:`.grader`).

nbgrader writes the scores into the gradebook itself, so the gradebook URL must be
reachable from every worker: a PostgreSQL URL on a cluster, the SQLite file only on the
driver's own machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .journal import worker_id

# Course-wide files nbgrader's configuration reads (TrustedTemplate, SaveVerdicts, the
# pre-convert hook's trusted submission times); the assignment's own files come from
# ASSIGNMENT_FOLDERS and notebooks/<aid>.py (the answer key).
COURSE_FILES = ("nbgrader_config.py", "pyproject.toml", "timestamps.csv")
ASSIGNMENT_FOLDERS = ("source", "release")
# Settings nbgrader_config.py reads from the environment, shipped with the course files
# so a worker on another machine grades with the driver's limits. The per-kernel status
# file is the worker's own.
ENV_PREFIX = "COURSEKIT_"
ENV_LOCAL = ("COURSEKIT_SANDBOX_STATUS",)
GRADEBOOK_ENV = "COURSEKIT_GRADEBOOK"
MAX_LOG = 20000
MAX_COURSES = 8  # scratch course directories (and loaded nbgraders) one worker keeps


@dataclass(frozen=True)
class CourseFiles:
    """What a worker needs of the course to grade one assignment, as data.

    ``common``: course-wide files; ``files``: the assignment's files; ``env``: the
    driver's ``COURSEKIT_*`` settings with the gradebook URL. ``key`` names a scratch
    course directory and its loaded nbgrader (common files and settings); ``files_key``
    says whether the assignment's files there are current."""

    assignment: str
    common: tuple
    files: tuple
    env: tuple
    key: str
    files_key: str


@dataclass(frozen=True)
class Submission:
    """One student's submission folder as data: ``files`` is ``((relpath, bytes), ...)``."""

    student: str
    assignment: str
    files: tuple


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        for name, data in part:
            h.update(str(name).encode() + b"\0" + (data if isinstance(data, bytes)
                                                   else str(data).encode()) + b"\0")
    return h.hexdigest()


def read_tree(folder: Path, prefix: str = "") -> list:
    """``[(relpath, bytes)]`` of the regular files under ``folder`` (sorted; symlinks and
    special files are skipped, never opened: the pre-check rejects submissions with any)."""
    folder = Path(folder)
    out = []
    if not folder.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            with open(path, "rb") as fh:
                out.append((f"{prefix}{rel}", fh.read()))
    return sorted(out)


def shipped_env(gradebook_url: str, environ=None) -> tuple:
    """``((name, value), ...)``: the driver's ``COURSEKIT_*`` settings and gradebook URL."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items()
           if k.startswith(ENV_PREFIX) and k not in ENV_LOCAL}
    env[GRADEBOOK_ENV] = gradebook_url
    return tuple(sorted(env.items()))


def course_files(root: Path, aid: str, gradebook_url: str, environ=None) -> CourseFiles:
    """The course files of assignment ``aid`` at ``root`` (see :class:`CourseFiles`)."""
    root = Path(root)
    common = []
    for name in COURSE_FILES:
        if (root / name).is_file():
            common.append((name, (root / name).read_bytes()))
    if not common or common[0][0] != "nbgrader_config.py":
        raise FileNotFoundError(f"{root / 'nbgrader_config.py'}: not a course directory")
    files = []
    for folder in ASSIGNMENT_FOLDERS:
        files += read_tree(root / folder / aid, f"{folder}/{aid}/")
    key_file = root / "notebooks" / f"{aid}.py"
    if key_file.is_file():
        files.append((f"notebooks/{aid}.py", key_file.read_bytes()))
    if not any(name.startswith(f"source/{aid}/") for name, _ in files):
        raise FileNotFoundError(f"{root / 'source' / aid}: no source notebooks for assignment "
                                f"{aid!r}; run `make build`")
    env = shipped_env(gradebook_url, environ)
    common, files = tuple(common), tuple(sorted(files))
    return CourseFiles(aid, common, files, env, key=_digest(common, env),
                       files_key=_digest(files))


def submission(root: Path, student: str, aid: str) -> Submission:
    """``submitted/<student>/<aid>/`` of the course at ``root`` as data."""
    return Submission(student, aid, tuple(read_tree(Path(root) / "submitted" / student / aid)))


def safe_relpath(rel: str) -> str:
    """``rel`` if it is a relative path inside its folder; ValueError otherwise."""
    parts = str(rel).replace("\\", "/").split("/")
    if not rel or str(rel).startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"path {rel!r}: a file of a shipped folder must be a plain relative "
                         "path")
    return "/".join(parts)


def write_tree(folder: Path, files) -> None:
    """Replace ``folder`` with exactly ``files`` (``[(relpath, bytes)]`` or a dict)."""
    shutil.rmtree(folder, ignore_errors=True)
    add_files(folder, files)


def add_files(folder: Path, files) -> None:
    """Write ``files`` (``[(relpath, bytes)]`` or a dict) under ``folder``, keeping the rest."""
    items = files.items() if isinstance(files, dict) else files
    for rel, data in items:
        path = Path(folder) / safe_relpath(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


# --------------------------------------------------------------------------- worker side

_LOCK = threading.Lock()  # one grading at a time per process (os.environ, cwd, fds)
_COURSES: dict = {}  # CourseFiles.key -> (scratch course root, NbGraderAPI)
_PLACED: dict = {}  # (scratch root, assignment) -> CourseFiles.files_key written there
_SCRATCH: list = []  # a base folder set by the pool's initializer


def set_scratch(base: str) -> None:
    """Where this process keeps its scratch course directories (the local pool)."""
    _SCRATCH[:] = [str(base)]


def _scratch_base() -> Path:
    if _SCRATCH:
        return Path(_SCRATCH[0])
    try:
        from distributed import get_worker

        return Path(get_worker().local_directory) / "coursekit"
    except (ImportError, ValueError):
        base = Path(tempfile.gettempdir()) / f"coursekit-worker-{os.getpid()}"
        _SCRATCH[:] = [str(base)]
        return base


def _set_env(env: tuple) -> None:
    for name in [k for k in os.environ if k.startswith(ENV_PREFIX) and k not in ENV_LOCAL]:
        os.environ.pop(name, None)
    os.environ.update(dict(env))


def _course(course: CourseFiles):
    """This process's scratch course directory and NbGraderAPI for ``course``."""
    cached = _COURSES.get(course.key)
    if cached is None or not (cached[0] / "nbgrader_config.py").is_file():
        root = _scratch_base() / f"course-{course.key[:16]}"
        shutil.rmtree(root, ignore_errors=True)
        write_tree(root, course.common)
        for folder in ("submitted", "autograded", ".status"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        from . import build as buildmod

        buildmod.venv_on_path()  # nbgrader runs `alembic` from PATH
        from nbgrader.apps.api import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config.loader import PyFileConfigLoader

        try:
            cfg = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
            api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
        except (Exception, SystemExit) as exc:  # nbgrader_config.py stops on a bad setting
            raise RuntimeError(f"{worker_id()}: cannot load the course's nbgrader "
                               f"configuration: {exc}") from None
        import logging

        logging.getLogger("traitlets").setLevel(logging.WARNING)
        while len(_COURSES) >= MAX_COURSES:  # a long-lived worker: forget the oldest
            old_root, _ = _COURSES.pop(next(iter(_COURSES)))
            shutil.rmtree(old_root, ignore_errors=True)
        cached = _COURSES[course.key] = (root, api)
        for key in [k for k in _PLACED if k[0] == root]:
            _PLACED.pop(key)
    root = cached[0]
    if _PLACED.get((root, course.assignment)) != course.files_key:
        for folder in ASSIGNMENT_FOLDERS:
            shutil.rmtree(root / folder / course.assignment, ignore_errors=True)
        add_files(root, course.files)
        _PLACED[(root, course.assignment)] = course.files_key
    return cached


class _CaptureFds:
    """Send this process's stdout and stderr (file descriptors 1 and 2, which kernels and
    the sandbox launcher inherit) to a file while grading, not to the worker's console."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        self.fh = open(self.path, "w+b")
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.fh.fileno(), 1)
        os.dup2(self.fh.fileno(), 2)
        return self

    def __exit__(self, *exc):
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        for fd, saved in zip((1, 2), self.saved):
            os.dup2(saved, fd)
            os.close(saved)
        self.fh.seek(0, os.SEEK_END)
        size = self.fh.tell()
        self.fh.seek(max(0, size - MAX_LOG))
        self.text = self.fh.read().decode("utf-8", errors="replace")
        self.fh.close()
        self.path.unlink(missing_ok=True)
        return False


def grade_submission(course: CourseFiles, sub: Submission) -> dict:
    """Autograde one submission in this process's scratch copy of the course; the outcome
    and the autograded folder's files (see the module docstring). Never raises for a
    failed grading: the failure is in the outcome."""
    if course.assignment != sub.assignment:
        raise ValueError(f"course files of {course.assignment!r} sent with a submission of "
                         f"{sub.assignment!r}")
    with _LOCK:
        start = time.monotonic()
        _set_env(course.env)
        root, api = _course(course)
        folder = root / "submitted" / sub.student / sub.assignment
        out = root / "autograded" / sub.student / sub.assignment
        status_file = root / ".status" / f"{sub.student}--{sub.assignment}.json"
        write_tree(folder, sub.files)
        shutil.rmtree(out, ignore_errors=True)
        status_file.unlink(missing_ok=True)
        api.config.SandboxKernelManager.status_file = str(status_file)
        cwd = os.getcwd()
        capture = _CaptureFds(root / ".status" / f"{sub.student}--{sub.assignment}.out")
        try:
            os.chdir(root)
            with capture:
                try:
                    result = api.autograde(sub.assignment, sub.student, force=True,
                                           create=True)
                except BaseException as exc:  # noqa: BLE001 - reported, never raised
                    result = {"success": False, "error": repr(exc), "log": ""}
        finally:
            os.chdir(cwd)
        sandbox = {}
        try:
            sandbox = json.loads(status_file.read_text() or "{}")
        except (OSError, json.JSONDecodeError):
            sandbox = {}
        files = dict(read_tree(out))
        for path in (folder, out):
            shutil.rmtree(path, ignore_errors=True)
        status_file.unlink(missing_ok=True)
        log = (result.get("log") or "")
        if capture.text.strip():
            log += "\n--- output of the kernel and its launcher ---\n" + capture.text
        return {"student": sub.student, "assignment": sub.assignment,
                "success": bool(result.get("success")), "log": log[-MAX_LOG:],
                "error": (result.get("error") or "")[-4000:], "sandbox": sandbox,
                "seconds": round(time.monotonic() - start, 2), "worker": worker_id(),
                "files": files}


# --------------------------------------------------------------------------- local pool

_POOL_COURSES: dict = {}


def course_on_worker(course: CourseFiles) -> CourseFiles:
    """The Dask task that holds an assignment's course files on the cluster: its result is
    fetched by every grading task of that assignment. Unlike scattered data, a task's
    result that is lost with its workers (or dropped by Dask's memory manager) is simply
    computed again from the task, which the scheduler keeps."""
    return course


def pool_init(courses: dict, scratch: str) -> None:
    """Initializer of the local pool's processes: the course files of every assignment
    (sent once per process) and a scratch folder of its own."""
    import warnings

    warnings.filterwarnings("ignore")
    _POOL_COURSES.clear()
    _POOL_COURSES.update(courses)
    set_scratch(os.path.join(scratch, f"worker-{os.getpid()}"))


def pool_grade(sub: Submission) -> dict:
    """:func:`grade_submission` in a local pool process."""
    return grade_submission(_POOL_COURSES[sub.assignment], sub)


# --------------------------------------------------------------------------- Dask

def quiet_dask() -> dict:
    """Silence Dask's own loggers on the driver's console (the progress line is the
    output); the previous levels, for :func:`restore_logging`."""
    import logging

    saved = {}
    for name in ("distributed", "dask"):
        log = logging.getLogger(name)
        saved[name] = log.level
        log.setLevel(logging.CRITICAL)
    return saved


def restore_logging(saved: dict) -> None:
    """Undo :func:`quiet_dask`."""
    import logging

    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


# Dask's own background work, priced by bench/grade_throughput.py: the statistical profiler
# samples every worker thread's stack 100 times a second (nbgrader's stacks are deep), and
# the system and GIL monitors poll twice a second. A grading task takes seconds; none of
# that is needed. Workers started by hand take the same settings from the environment:
# DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False (see the README).
DASK_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.admin.tick.interval": "200ms",
}


def local_cluster(workers: int, **kwargs):
    """A ``LocalCluster`` of ``workers`` single-threaded processes, no dashboard, its
    logs silenced, no memory limit of its own (each kernel has the sandbox's), and
    :data:`DASK_CONFIG` (which its worker processes inherit)."""
    import logging

    import dask
    from distributed import LocalCluster

    # no dashboard; the scheduler's small HTTP server (health, metrics) on a free local
    # port rather than 8787, which another cluster may hold
    opts = dict(n_workers=workers, threads_per_worker=1, processes=True,
                dashboard_address=None, silence_logs=logging.CRITICAL, memory_limit=0,
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    opts.update(kwargs)
    with dask.config.set(DASK_CONFIG):
        return LocalCluster(**opts)
