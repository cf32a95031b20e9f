"""Parallel, resumable autograding on top of nbgrader, on Dask distributed.

Each submission is graded by :func:`coursekit.grading.distributed.grade_submission`: a
worker process writes the course files and the submission it was sent into a scratch
course directory of its own, loads nbgrader and the course config once, and runs
``NbGraderAPI.autograde`` (exactly what ``nbgrader autograde`` runs), so results are the
ones serial nbgrader gives. Every kernel starts through the sandbox
(``nbgrader_config.py``). The workers are a Dask ``LocalCluster`` on this machine by
default, or any Dask cluster (``grade --scheduler tcp://HOST:8786``: Kubernetes, Slurm, a
few machines); ``--executor pool`` runs the same function in a local multiprocessing pool
(the benchmark's baseline). The driver (this module) writes the autograded folders, the
logs and the journal.

The run is journaled in the gradebook database itself (:mod:`coursekit.grading.journal`:
one row per submission, written in one transaction as soon as it is in the gradebook), so
every machine grading the class with the same gradebook URL shares one journal.
Interrupting ``grade`` and running it again, here or on another machine, grades only what
is not recorded yet, whose submission files changed, or what failed for the grader's own
reasons. The database keeps the gradebook consistent if a worker dies mid-write; Dask runs
a task whose worker died again, and the driver journals each submission once.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path

from . import distributed as distmod
from . import gradebook as gbmod
from . import journal as journalmod
from . import precheck

STATE_FILE = journalmod.LEGACY_FILE  # the old JSON journal, migrated on first use
LOG_DIR = Path("reports") / "grading-logs"


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
    if result.get("lost"):  # the task never returned (its worker died too often)
        return {"status": "error", "machinery": True,
                "reason": f"the grader lost this submission (not the student's fault; "
                          f"retried on the next run): {result['error'][:200]}"}
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


EXECUTORS = ("dask", "pool")


def check_cluster_gradebook(url: str, scheduler: str) -> None:
    """Refuse an SQLite gradebook for a cluster given by ``--scheduler``: nbgrader on the
    workers writes the scores into the gradebook, and workers on other machines cannot
    reach a file on this one."""
    if gbmod.backend(url) == "sqlite":
        raise ValueError(
            f"grade --scheduler {scheduler}: the gradebook {gbmod.mask(url)} is an SQLite "
            "file, which Dask workers on other machines cannot reach; set "
            f"{gbmod.ENV}=postgresql+psycopg://USER@HOST/DB (a database every worker can "
            "reach), or leave out --scheduler to grade on this machine")


class _Pool:
    """``--executor pool``: a local multiprocessing pool (the benchmark's baseline),
    running the same :func:`~coursekit.grading.distributed.grade_submission`."""

    def __init__(self, workers: int, courses: dict, scratch: Path):
        ctx = multiprocessing.get_context("spawn")
        self.pool = ctx.Pool(workers, initializer=distmod.pool_init,
                             initargs=(courses, str(scratch)))

    def results(self, subs):
        return self.pool.imap_unordered(distmod.pool_grade, subs)

    def one(self, sub) -> dict:
        return self.pool.apply(distmod.pool_grade, (sub,))

    def close(self) -> None:
        self.pool.close()
        self.pool.join()

    def abort(self) -> None:
        self.pool.terminate()
        self.pool.join()


class _Dask:
    """The default executor: a ``LocalCluster`` of ``workers`` processes, or the cluster
    of ``scheduler``. The course files of each assignment go to the cluster once, as the
    result of a small task (:func:`~coursekit.grading.distributed.course_on_worker`) that
    every grading task of the assignment depends on; each grading task carries one
    submission. A task whose worker died is run again by Dask (the scheduler's allowed
    failures); one that is cancelled (its course files lost) is submitted once more, with
    the course files in the task; one that is lost for good comes back as a machinery
    error, journaled and retried like any other. The driver sees one result per
    submission."""

    def __init__(self, workers: int, courses: dict, scheduler: str | None = None,
                 connect_timeout: float = 30, wait_workers: float = 120):
        from distributed import Client

        self.cluster, self.courses, self.scheduler = None, courses, scheduler
        if scheduler:
            try:
                self.client = Client(scheduler, timeout=connect_timeout)
            except (OSError, TimeoutError) as exc:
                raise RuntimeError(f"grade --scheduler {scheduler}: cannot reach the Dask "
                                   f"scheduler ({exc})") from None
            try:
                self.client.wait_for_workers(1, timeout=wait_workers)
            except TimeoutError:
                self.client.close()
                raise RuntimeError(f"grade --scheduler {scheduler}: no Dask worker joined "
                                   f"in {wait_workers:.0f} s") from None
            threads = sum(self.client.nthreads().values())
            self.where = f"the Dask cluster at {scheduler} ({threads} worker thread(s) now)"
        else:
            self.cluster = distmod.local_cluster(workers)
            self.client = Client(self.cluster)
        self.run_id = uuid.uuid4().hex[:8]
        self.shipped = {aid: self.client.submit(distmod.course_on_worker, c, pure=False,
                                                key=f"course-{aid}-{self.run_id}")
                        for aid, c in courses.items()}

    def _submit(self, sub, course=None):
        return self.client.submit(distmod.grade_submission,
                                  course if course is not None else self.shipped[sub.assignment],
                                  sub, pure=False,
                                  key=f"grade-{sub.student}-{sub.assignment}-"
                                      f"{uuid.uuid4().hex[:8]}")

    @staticmethod
    def _outcome(future, sub) -> tuple:
        """``(result, None)``, or ``(a machinery-error result, the exception)``."""
        try:
            return future.result(), None
        except Exception as exc:  # noqa: BLE001 - KilledWorker, lost data, a bug: journaled
            return {"student": sub.student, "assignment": sub.assignment, "success": False,
                    "lost": True, "log": "", "error": f"{type(exc).__name__}: {exc}",
                    "sandbox": {}, "seconds": 0.0, "worker": "", "files": {}}, exc
        finally:
            future.release()

    def results(self, subs):
        from distributed import as_completed
        from distributed.scheduler import KilledWorker

        subs, pending, again, done = iter(subs), {}, set(), as_completed()

        def add(sub, course=None):
            future = self._submit(sub, course)
            pending[future.key] = sub
            done.add(future)

        def top_up():  # a bounded window: submissions are read as the workers get free
            window = max(4, 2 * sum(self.client.nthreads().values()))
            while done.count() < window:
                sub = next(subs, None)
                if sub is None:
                    return
                add(sub)

        top_up()
        for future in done:
            sub = pending.pop(future.key)
            result, exc = self._outcome(future, sub)
            pair = (sub.student, sub.assignment)
            if exc is not None and not isinstance(exc, KilledWorker) and pair not in again:
                again.add(pair)  # cancelled, e.g. its course files were lost: once more
                add(sub, self.courses[sub.assignment])
                continue
            top_up()
            yield result

    def one(self, sub) -> dict:
        # end-of-run retries: the course files go with the task
        return self._outcome(self._submit(sub, self.courses[sub.assignment]), sub)[0]

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()

    abort = close


def write_autograded(root: Path, result: dict) -> None:
    """Replace ``autograded/<student>/<aid>/`` with the files a worker returned (none when
    nbgrader failed: it removes a failed submission's folder too)."""
    folder = root / "autograded" / result["student"] / result["assignment"]
    distmod.write_tree(folder, result.get("files") or {})
    if not result.get("files"):
        shutil.rmtree(folder, ignore_errors=True)


def grade(root: Path, assignments=None, students=None, workers=None, regrade=False,
          out=print, progress=True, executor: str = "dask", scheduler: str | None = None
          ) -> dict:
    """Pre-check, then autograde; returns the journal entries of this run's submissions
    keyed by (student, assignment).

    ``executor="dask"`` (default): on a Dask ``LocalCluster`` of ``workers`` processes,
    or on the existing cluster at ``scheduler`` (``tcp://HOST:8786``; the gradebook must
    then be a database every worker reaches, e.g. PostgreSQL). ``executor="pool"``: a
    local multiprocessing pool (the benchmark's baseline). Both run
    :func:`coursekit.grading.distributed.grade_submission`."""
    from . import pipeline

    if executor not in EXECUTORS:
        raise ValueError(f"executor={executor!r}: use one of {', '.join(EXECUTORS)}")
    if scheduler and executor != "dask":
        raise ValueError(f"scheduler={scheduler!r} needs executor='dask' (got {executor!r})")
    workers = max(1, int(workers or os.cpu_count() or 1))
    root = Path(root).resolve()
    url = gbmod.gradebook_url(root)
    if scheduler:
        check_cluster_gradebook(url, scheduler)
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
    where = (f"the Dask cluster at {scheduler}" if scheduler else
             f"{workers} worker(s) ({'Dask LocalCluster' if executor == 'dask' else 'local pool'})")
    out(f"[grade] {len(todo)} to grade with {where}; {skipped} already graded "
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
    digests = {(s, a): d for s, a, d in todo}
    courses = {aid: distmod.course_files(root, aid, url) for aid in sorted({a for _, a, _ in todo})}

    def jobs(pairs):  # each submission is read when a worker is about to get it
        for student, aid in pairs:
            yield distmod.submission(root, student, aid)

    pairs = [(s, a) for s, a, _ in todo]
    started = time.monotonic()
    n_done = 0
    saved_logging = distmod.quiet_dask()
    runner = None

    def run(batch, label):
        nonlocal n_done
        results = runner.results(jobs(batch)) if label == "first" else (
            runner.one(sub) for sub in jobs(batch))  # retries: one at a time
        for result in results:
            student, aid = result["student"], result["assignment"]
            write_autograded(root, result)
            (log_dir / f"{student}--{aid}.log").write_text(
                result["log"] + ("\n" + result["error"] if result["error"] else ""),
                encoding="utf-8")
            entry = record_result(jr, root, result, digests[(student, aid)], cell_timeout,
                                  retry=label == "retry")
            state[(student, aid)] = entry
            n_done += 1
            elapsed = time.monotonic() - started
            total = len(pairs) + (len(batch) if label == "retry" else 0)
            eta = elapsed / n_done * max(0, total - n_done)
            if progress:
                bar = "#" * int(20 * min(1, n_done / total))
                out(f"[{bar:<20}] {n_done:>3}/{total} {student}/{aid}: "
                    f"{entry['status']}{' (retry)' if label == 'retry' else ''} in "
                    f"{result['seconds']:.1f} s (elapsed {_fmt_eta(elapsed)}, "
                    f"ETA {_fmt_eta(eta)})")

    try:
        if executor == "pool":
            runner = _Pool(min(workers, len(pairs)), courses, status_dir / "pool")
        else:
            runner = _Dask(min(workers, len(pairs)), courses, scheduler)
            if scheduler:
                out(f"[grade] grading on {runner.where}")
        run(pairs, "first")
        # a timeout or error may come from a loaded machine, not the student: grade those
        # once more, one at a time, and keep the load next to the outcome
        again = [p for p in pairs if state[p]["status"] in ("timeout", "error")]
        if again:
            out(f"[grade] grading {len(again)} timeout/error submission(s) once more")
            run(again, "retry")
        runner.close()
        runner = None
    except KeyboardInterrupt:
        out(f"[grade] interrupted: {n_done}/{len(pairs)} journaled; run `grade` again to "
            "finish the rest (it grades only what is not journaled yet)")
        raise
    finally:
        if runner is not None:
            runner.abort()
        distmod.restore_logging(saved_logging)
        shutil.rmtree(status_dir, ignore_errors=True)
    return asked_entries()
