"""Parallel, resumable autograding on top of nbgrader.

Each worker process loads nbgrader and the course config once and then runs
``NbGraderAPI.autograde`` (exactly what ``nbgrader autograde`` runs) for one
submission at a time, so results are the ones serial nbgrader gives. Every kernel
starts through the sandbox (``nbgrader_config.py``).

The run is journaled in the gradebook database itself (:mod:`coursekit.grading.journal`:
one row per submission, written in one transaction as soon as it is in the gradebook), so
every machine grading the class with the same gradebook URL shares one journal.
Interrupting ``grade`` and running it again, here or on another machine, grades only what
is not recorded yet, whose submission files changed, or what failed for the grader's own
reasons. The database keeps the gradebook consistent if a worker dies mid-write; a
submission interrupted before it was journaled is simply graded again with ``--force``.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from . import build as buildmod
from . import gradebook as gbmod
from . import journal as journalmod
from . import precheck

STATE_FILE = journalmod.LEGACY_FILE  # the old JSON journal, migrated on first use
LOG_DIR = Path("reports") / "grading-logs"

_API = None


def open_journal(root: Path, out=print) -> journalmod.Journal:
    """The course's journal (in its gradebook), an old ``.grading-state.json`` migrated."""
    return journalmod.open_journal(Path(root), out=out)


def load_state(root: Path) -> dict:
    """The grading journal as ``{"student/assignment": {...}}`` (empty if none); reads the
    gradebook's journal table and creates nothing."""
    jr = journalmod.Journal(gbmod.gradebook_url(root), create=False)
    return {f"{s}/{a}": e for (s, a), e in jr.entries().items()}


def submission_hash(root: Path, student: str, aid: str) -> str:
    """SHA-256 over the files of ``submitted/<student>/<aid>/`` (names and bytes)."""
    h = hashlib.sha256()
    folder = root / "submitted" / student / aid
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def outcomes_from_state(state: dict) -> dict:
    """(student, assignment) -> {"status", "reason"} for the report."""
    out = {}
    for key, entry in state.items():
        student, aid = key.split("/", 1)
        out[(student, aid)] = {"status": entry["status"], "reason": entry.get("reason", ""),
                               "scored": entry.get("scored", entry["status"] == "graded")}
    return out


# ----------------------------------------------------------------------------- worker


def _worker_init(root: str, log_dir: str) -> None:
    global _API
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    os.chdir(root)
    buildmod.venv_on_path()
    # the worker's own log goes to a file, not interleaved on the console
    log = open(Path(log_dir) / f"worker-{os.getpid()}.log", "a", buffering=1)
    os.dup2(log.fileno(), 2)
    sys.stderr = log
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader("nbgrader_config.py", path=root).load_config()
    _API = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
    logging.getLogger("traitlets").setLevel(logging.WARNING)


def _grade_one(job):
    student, aid, status_file = job
    start = time.monotonic()
    Path(status_file).unlink(missing_ok=True)
    _API.config.SandboxKernelManager.status_file = status_file
    try:
        result = _API.autograde(aid, student, force=True, create=True)
    except BaseException as exc:  # noqa: BLE001 - reported, never raised into the pool
        result = {"success": False, "error": repr(exc), "log": ""}
    sandbox = {}
    if os.path.exists(status_file):
        try:
            sandbox = json.loads(Path(status_file).read_text() or "{}")
        except (OSError, json.JSONDecodeError):
            sandbox = {}
    return {"student": student, "assignment": aid, "success": bool(result.get("success")),
            "log": (result.get("log") or "")[-20000:], "error": (result.get("error") or "")[-4000:],
            "sandbox": sandbox, "seconds": round(time.monotonic() - start, 2),
            "worker": journalmod.worker_id()}


# ----------------------------------------------------------------------------- classify


def _autograded_notebook(root: Path, student: str, aid: str) -> Path:
    return root / "autograded" / student / aid / f"{aid}.ipynb"


def _cell_timeouts(nb_path: Path) -> list:
    if not nb_path.exists():
        return []
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    out = []
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error" and o.get("ename") in (
                    "CellTimeoutError", "TimeoutError") or "CellTimeoutError" in str(
                    o.get("traceback", ""))[:2000]:
                gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "a cell")
                out.append(gid)
    return out


def classify(root: Path, result: dict, cell_timeout: int) -> dict:
    """Status and reason for one worker result (never a silent 0)."""
    sb = result.get("sandbox") or {}
    reason = sb.get("reason")
    nb_path = _autograded_notebook(root, result["student"], result["assignment"])
    if reason == "time-limit":
        return {"status": "timeout", "reason": f"whole-notebook limit of "
                f"{sb.get('time_limit')} s exceeded; kernel killed"}
    if reason == "cpu-limit":
        return {"status": "timeout", "reason": "CPU-time limit exceeded; kernel killed"}
    if reason == "sandbox-error":
        return {"status": "error", "machinery": True,
                "reason": f"the grader's sandbox could not start (not the student's fault; "
                          f"retried on the next run): {sb.get('detail')}"}
    if not result["success"] or not nb_path.exists():
        if reason in ("killed", "crashed", "exit") or (reason or "").startswith("signal"):
            detail = {"killed": "kernel was killed (memory or process limit?)",
                      "crashed": "kernel crashed (segmentation fault)",
                      "exit": f"kernel exited with code {sb.get('exit_code')} "
                              "(os._exit or a crash)"}.get(reason, f"kernel ended by {reason}")
            return {"status": "error", "reason": detail}
        text = result["log"] + "\n" + result["error"]
        if "CellTimeoutError" in text or "Timeout waiting for execute reply" in text:
            return {"status": "timeout", "reason": f"a cell ran past the {cell_timeout} s "
                    "per-cell limit and ignored the interrupt; nothing could be graded"}
        lines = [ln for ln in text.splitlines() if "[ERROR]" in ln or "Error" in ln]
        message = next((ln for ln in lines if "died" in ln.lower() or "dead" in ln.lower()),
                       lines[-1] if lines else "nbgrader autograde failed")
        message = re.sub(r"^\[ERROR\]\s*", "", message.strip())
        return {"status": "error", "reason": message[:240]}
    timeouts = _cell_timeouts(nb_path)
    if timeouts:
        return {"status": "timeout", "scored": True,
                "reason": f"cell(s) {', '.join(timeouts)} exceeded the {cell_timeout} s "
                          "per-cell limit (graded; tests that needed them score 0)"}
    return {"status": "graded", "scored": True, "reason": ""}


# ----------------------------------------------------------------------------- driver


def _ensure_students(root: Path, students) -> None:
    with gbmod.open_gradebook(gbmod.gradebook_url(root)) as gb:
        for sid in sorted(students):
            gb.update_or_create_student(sid)


def record_result(jr: journalmod.Journal, root: Path, result: dict, digest: str,
                  cell_timeout: int, retry: bool = False) -> dict:
    """Classify one worker result (:func:`classify`) and journal it (one upsert); the
    entry as stored. The driver below calls it; a distributed worker can too."""
    verdict = classify(root, result, cell_timeout)
    entry = {"status": verdict["status"], "reason": verdict["reason"],
             "scored": verdict.get("scored", False),
             "machinery": verdict.get("machinery", False),
             "sha256": digest, "seconds": result["seconds"]}
    if retry:
        load = os.getloadavg()[0]
        entry["retried"] = True
        entry["reason"] += (f" (graded again at the end of the run, load "
                            f"{load:.1f} on {os.cpu_count()} cores: same outcome)"
                            if entry["status"] != "graded" else "")
    return jr.record(result["student"], result["assignment"], entry,
                     worker=result.get("worker"))


def _fmt_eta(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


def grade(root: Path, assignments=None, students=None, workers=None, regrade=False,
          out=print, progress=True) -> dict:
    """Pre-check, then autograde with ``workers`` processes; returns the journal entries
    of this run's submissions keyed by (student, assignment)."""
    from . import pipeline

    workers = max(1, int(workers or os.cpu_count() or 1))
    root = Path(root).resolve()
    findings = precheck.check_submissions(root, assignments, students, fix=True)
    for f in findings:
        if f.level != "ok":
            out(f"[check] {f.level.upper()} {f.student}/{f.assignment}: {f.message}")
    rejected = precheck.rejected(findings)
    subs = pipeline.submissions(root, assignments, students)
    jr = open_journal(root, out)
    if regrade:
        jr.forget(subs)
    state = jr.entries(subs)  # (student, assignment) -> entry, this run's submissions only
    here, in_gradebook = socket.gethostname(), []

    def have_output(entry, student, aid):
        host = journalmod.host_of(entry)
        if not host or host == here:  # graded here: its autograded notebook must be here
            return _autograded_notebook(root, student, aid).exists()
        if not in_gradebook:  # graded on another machine: the gradebook must hold it
            in_gradebook.append(gbmod.submitted_pairs(jr.url))
        return (student, aid) in in_gradebook[0]

    todo = []
    for student, aid in subs:
        digest = submission_hash(root, student, aid)
        if (student, aid) in rejected:
            state[(student, aid)] = jr.record(student, aid, {
                "status": "rejected", "reason": rejected[(student, aid)], "sha256": digest,
                "seconds": 0})
            continue
        if journalmod.needs_grading(state.get((student, aid)), digest,
                                    lambda e, s=student, a=aid: have_output(e, s, a)):
            todo.append((student, aid, digest))
    skipped = len(subs) - len(todo) - len(rejected)
    pipeline.register_assignments(root, {aid for _, aid, _ in todo})
    _ensure_students(root, {s for s, _, _ in todo})
    from .sandbox import capabilities, describe, remove_stale

    caps = capabilities()
    out(describe(caps))
    out(f"[grade] {len(todo)} to grade with {workers} worker(s); {skipped} already graded "
        f"(journal: table {journalmod.TABLE} of {gbmod.mask(jr.url)}); {len(rejected)} "
        "rejected at pre-check")

    def asked_entries():  # the journal entries of the submissions this run was asked about
        return {(s, a): state[(s, a)] for s, a in subs if (s, a) in state}

    if not todo:
        return asked_entries()
    log_dir = root / LOG_DIR
    log_dir.mkdir(parents=True, exist_ok=True)
    remove_stale()
    status_dir = Path(tempfile.mkdtemp(prefix=f"coursekit-status-{os.getpid()}-"))
    cell_timeout = int(os.environ.get("COURSEKIT_CELL_TIMEOUT", "60"))
    jobs = [(s, a, str(status_dir / f"{s}--{a}.json")) for s, a, _ in todo]
    digests = {(s, a): d for s, a, d in todo}
    ctx = multiprocessing.get_context("spawn")
    pool = ctx.Pool(min(workers, len(jobs)), initializer=_worker_init,
                    initargs=(str(root), str(log_dir)))
    started = time.monotonic()
    n_done = 0

    def run(batch, label):
        nonlocal n_done
        results = pool.imap_unordered(_grade_one, batch) if label == "first" else (
            pool.apply(_grade_one, (job,)) for job in batch)  # retries: one at a time
        for result in results:
            student, aid = result["student"], result["assignment"]
            (log_dir / f"{student}--{aid}.log").write_text(
                result["log"] + ("\n" + result["error"] if result["error"] else ""),
                encoding="utf-8")
            entry = record_result(jr, root, result, digests[(student, aid)], cell_timeout,
                                  retry=label == "retry")
            state[(student, aid)] = entry
            n_done += 1
            elapsed = time.monotonic() - started
            total = len(jobs) + (len(batch) if label == "retry" else 0)
            eta = elapsed / n_done * max(0, total - n_done)
            if progress:
                bar = "#" * int(20 * min(1, n_done / total))
                out(f"[{bar:<20}] {n_done:>3}/{total} {student}/{aid}: "
                    f"{entry['status']}{' (retry)' if label == 'retry' else ''} in "
                    f"{result['seconds']:.1f} s (elapsed {_fmt_eta(elapsed)}, "
                    f"ETA {_fmt_eta(eta)})")

    try:
        run(jobs, "first")
        # a timeout or error may come from a loaded machine, not the student: grade those
        # once more, one at a time, and keep the load next to the outcome
        again = [j for j in jobs if state[(j[0], j[1])]["status"] in ("timeout", "error")]
        if again:
            out(f"[grade] grading {len(again)} timeout/error submission(s) once more")
            run(again, "retry")
        pool.close()
    except KeyboardInterrupt:
        pool.terminate()
        out(f"[grade] interrupted: {n_done}/{len(jobs)} journaled; run `grade` again to "
            "finish the rest")
        raise
    finally:
        pool.join()
        shutil.rmtree(status_dir, ignore_errors=True)
    return asked_entries()
