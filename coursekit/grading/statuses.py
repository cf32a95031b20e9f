"""Statuses where instructors look: flags in formgrader, averages, a placeholder to grade.

An ``error`` (the kernel died), a ``timeout`` that left nothing graded, or a ``rejected``
file is not a score of 0. After every ``grade`` run (:func:`apply`, called by
``pipeline.grade``) each such submission is, in nbgrader's own terms:

* **flagged**: every grade of the submission gets ``needs_manual_grade`` (formgrader's
  "needs manual grade" mark, in the submission list and on the assignment) and loses any
  ``auto_score`` (a score of an older file is not this file's);
* **explained**: the first answer cell's ``Comment.manual_comment`` starts with a paragraph
  beginning :data:`PREFIX` (``[coursekit]``) that says what happened, with the reason;
  an instructor's own comment stays below it;
* **gradable by hand**: ``autograded/<student>/<aid>/<nb>.ipynb`` is a placeholder (the
  student's answers in the assignment's template, nothing run, a note on top, outputs made
  inert), so formgrader lists the submission and opens it for manual grading, and
  ``nbgrader generate_feedback`` turns it into the student's status page
  (:mod:`coursekit.grading.feedback`);
* **out of the averages**: formgrader's averages (``Gradebook.average_*``, patched by
  :func:`install_averages` from ``nbgrader_config.py``) leave out every flagged submission
  that still needs a manual grade. nbgrader divides by the number of submissions, so a
  submission without scores would still pull the average towards 0: it has to be left out
  of the count, not only of the sum. It counts again once resolved: an instructor has
  entered a score for every cell (formgrader clears ``needs_manual_grade`` per cell), or a
  new file graded successfully.

Which submission carries which flag is recorded in table ``coursekit_flags`` of the
gradebook (status and submission hash). :func:`apply` flags a submission once per
(status, file): a rerun that grades nothing new changes nothing, and a manual grade an
instructor has entered is never flagged again for the same file. A submission graded
successfully later loses the course's comment paragraph and its row (nbgrader's autograde
has already reset every grade's ``needs_manual_grade`` and ``auto_score``).
"""

from __future__ import annotations

import datetime as dt
import functools
import html as htmllib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Column, DateTime, MetaData, String, Table, Text, delete, inspect, select

from . import gradebook as gbmod
from .precheck import MAX_BYTES, STUDENT_ID, intake_problem, nbgrader_meta

PREFIX = "[coursekit]"
TABLE = "coursekit_flags"
FLAGGED = ("error", "timeout", "rejected")
STATUS_KEY = "status"  # nb.metadata.coursekit.status of a placeholder notebook

metadata = MetaData()
flags_table = Table(
    TABLE, metadata,
    Column("student", String(128), primary_key=True),
    Column("assignment", String(128), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("sha256", String(64), nullable=False, default=""),
    Column("reason", Text, nullable=False, default=""),
    Column("flagged", DateTime(timezone=True), nullable=False),
)


def needs_flag(entry: dict | None) -> bool:
    """Whether a journal entry leaves the submission without a real score: ``error``,
    ``rejected``, or a ``timeout`` that graded nothing (``scored`` False)."""
    if not entry:
        return False
    status = entry.get("status")
    return status in ("error", "rejected") or (status == "timeout" and not entry.get("scored"))


# ----------------------------------------------------------------------------- words


@dataclass(frozen=True)
class Explanation:
    """What happened to a submission, for the student and the instructor."""

    status: str
    title: str
    what: str
    todo: str
    reason: str

    def comment(self, sha256: str = "") -> str:
        """The instructor's comment paragraph (starts with :data:`PREFIX`)."""
        file = f" (file sha256 {sha256[:12]})" if sha256 else ""
        return (f"{PREFIX} {self.status.upper()}: not graded{file}. {self.what} Grader's "
                f"reason: {self.reason or 'none given'}. Grade every cell by hand, or have "
                "the student resubmit; a successful regrade removes this note and the flag.")


_LIMIT = re.compile(r"(\d+) s")
_EXIT = re.compile(r"kernel exited with code (-?\d+)")
_RETRY = re.compile(r"\s*\(graded again at the end of the run.*\)$")


def explain(status: str, reason: str, cell: str = "", cell_timeout: int | None = None
            ) -> Explanation:
    """Plain words for a status and the grader's reason (``cell``: the grade id of the
    cell that ran past the limit, when known). Raises ValueError for a status that is not
    flagged (``error``, ``timeout``, ``rejected``)."""
    if status not in FLAGGED:
        raise ValueError(f"status={status!r}: explanations exist for {', '.join(FLAGGED)}")
    reason = _RETRY.sub("", str(reason or "")).strip()
    where = f" in cell {cell}" if cell else ""
    if status == "timeout":
        limit = _LIMIT.search(reason)
        seconds = limit.group(1) if limit else str(cell_timeout or "the")
        if "whole-notebook" in reason:
            what = (f"Your notebook ran longer than the {seconds} s allowed for the whole "
                    "notebook, so the grader stopped it before the tests could finish.")
        elif "CPU-time" in reason:
            what = ("Your notebook used more CPU time than allowed, so the grader stopped it "
                    "before the tests could finish.")
        else:
            what = (f"Your notebook ran past the {seconds} s per-cell limit{where} and did not "
                    "stop when interrupted, so nothing could be graded.")
        todo = ("Look for a loop that never ends or a computation that is far too large "
                "(a loop that catches KeyboardInterrupt never stops). Restart the kernel, run "
                "every cell from the top, check that each cell finishes in a few seconds, and "
                "submit again.")
        return Explanation(status, "Not graded: time limit", what, todo, reason)
    if status == "error":
        code = _EXIT.search(reason)
        if code:
            what = (f"Python stopped while your notebook was running (exit code "
                    f"{code.group(1)}): a call such as os._exit() or exit() in your code, or "
                    "a crash, ended it before the tests could run.")
        elif "killed" in reason:
            what = ("Your notebook was stopped for using more memory or more processes than "
                    "a submission may use.")
        elif "crashed" in reason or "segmentation" in reason:
            what = "Python crashed (a segmentation fault) while running your notebook."
        else:
            what = "Your notebook stopped the grader before the tests could run."
        todo = ("Restart the kernel and run every cell from the top; it must reach the last "
                "cell without ending the kernel (remove os._exit(), exit() or anything that "
                "shuts Python down) and without using huge amounts of memory. Then submit "
                "again.")
        return Explanation(status, "Not graded: the notebook stopped the grader", what,
                           todo, reason)
    what = "Your file was not accepted before anything ran, for this reason: " + reason + "."
    todo = ("Submit the notebook itself as Jupyter saved it, named exactly like the "
            "assignment's notebook (no copies, links or extra folders), then submit again.")
    return Explanation(status, "Not graded: the file was not accepted", what, todo, reason)


def timed_out_cell(log_text: str, notebook) -> str:
    """The grade id of the cell whose preview nbclient logged with a CellTimeoutError
    (``""`` when none matches). ``notebook``: the notebook the kernel ran (the trusted
    template with the student's answers). Only the id leaves this function, never the
    preview (a test cell's preview holds hidden-test code)."""
    m = re.search(r"Here is a preview of the cell contents:\s*-{5,}[ \t]*\n(.*?)\n\s*-{5,}",
                  log_text or "", re.DOTALL)
    if not m or notebook is None:
        return ""
    logged = _dedent_log(m.group(1)).strip()
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        lines = source.strip().split("\n")
        preview = source if len(lines) < 11 else f"{lines[:5]}\n...\n{lines[-5:]}"
        if _dedent_log(preview).strip() == logged:
            meta = nbgrader_meta(cell)
            gid = meta.get("grade_id") if isinstance(meta, dict) else None
            return gid or f"#{index + 1} (a cell you added)"
    return ""


def _dedent_log(text: str) -> str:
    """Log lines come indented by nbgrader's logger: compare without leading spaces."""
    return "\n".join(line.strip() for line in text.split("\n"))


# ----------------------------------------------------------------------------- comments


def without_ours(comment: str | None) -> str | None:
    """``comment`` without the course's paragraphs (those starting with :data:`PREFIX`);
    None when nothing else is left."""
    if not comment:
        return comment
    kept = [p for p in re.split(r"\n\s*\n", comment) if not p.lstrip().startswith(PREFIX)]
    text = "\n\n".join(kept).strip()
    return text or None


def with_ours(comment: str | None, ours: str) -> str:
    """``ours`` first, then whatever the instructor wrote (an old note of ours replaced)."""
    rest = without_ours(comment)
    return ours + ("\n\n" + rest if rest else "")


# ----------------------------------------------------------------------------- the table


def _ensure_table(url: str) -> None:
    gbmod.ensure_table(url, metadata, TABLE)


def flag_rows(url: str, assignment: str | None = None) -> dict:
    """``{(student, assignment): {"status", "sha256", "reason"}}`` of ``coursekit_flags``
    (empty when the table or the database does not exist yet)."""
    if not gbmod.exists(url) or not inspect(gbmod.engine(url)).has_table(TABLE):
        return {}
    t = flags_table
    query = select(t)
    if assignment is not None:
        query = query.where(t.c.assignment == assignment)
    with gbmod.engine(url).connect() as conn:
        rows = conn.execute(query).fetchall()
    return {(r.student, r.assignment): {"status": r.status, "sha256": r.sha256,
                                        "reason": r.reason} for r in rows}


def _set_row(url: str, student: str, aid: str, entry: dict) -> None:
    t = flags_table
    values = {"student": student, "assignment": aid, "status": entry["status"],
              "sha256": str(entry.get("sha256") or ""), "reason": str(entry.get("reason") or ""),
              "flagged": dt.datetime.now(dt.timezone.utc)}
    with gbmod.engine(url).begin() as conn:
        conn.execute(delete(t).where(t.c.student == student, t.c.assignment == aid))
        conn.execute(t.insert().values(**values))


def _drop_row(url: str, student: str, aid: str) -> None:
    t = flags_table
    with gbmod.engine(url).begin() as conn:
        conn.execute(delete(t).where(t.c.student == student, t.c.assignment == aid))


# ----------------------------------------------------------------------------- notebooks


def _read_json(path: Path, limit: int = MAX_BYTES):
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > limit:
            return None
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None


def notebook_ids(root: Path, aid: str) -> list:
    """The assignment's notebook names (``source/<aid>/*.ipynb`` without the suffix)."""
    return sorted(p.stem for p in (Path(root) / "source" / aid).glob("*.ipynb"))


def ran_notebook(root: Path, student: str, aid: str, nb_id: str, use_submission: bool):
    """The notebook the grading kernel runs for this submission (the trusted template with
    the student's answer texts; with ``use_submission`` False, the release stubs only).
    None when the instructor's notebooks are missing."""
    import nbformat

    from .template import merge, stub_sources

    root = Path(root)
    try:
        source = nbformat.read(root / "source" / aid / f"{nb_id}.ipynb", as_version=4)
        release = nbformat.read(root / "release" / aid / f"{nb_id}.ipynb", as_version=4)
    except (OSError, ValueError):
        return None
    submission = {}
    folder = root / "submitted" / student / aid
    if use_submission and folder.is_dir() and not intake_problem(folder):
        submission = _read_json(folder / f"{nb_id}.ipynb") or {}
    try:
        nb, _ = merge(source, stub_sources(release), submission)
    except Exception:  # noqa: BLE001 - a template that cannot merge: the stubs alone
        nb, _ = merge(source, stub_sources(release), {})
    return nb


def placeholder(nb, explanation: Explanation, sha256: str = ""):
    """``nb`` (a template notebook, nothing run) made inert, with the status note as its
    first cell and the status in ``metadata.coursekit.status`` (in place; returned)."""
    import nbformat

    from .inert import make_inert

    make_inert(nb)
    note = nbformat.v4.new_markdown_cell(
        f"**{htmllib.escape(explanation.title)}** ({explanation.status.upper()})\n\n"
        f"{htmllib.escape(explanation.what)}\n\n"
        f"**What to do:** {htmllib.escape(explanation.todo)}\n\n"
        "*Placed by the course's grader: below are the submitted answers in the "
        "assignment's template, not run. Grade them by hand in formgrader, or wait for a "
        "resubmission.*", id="coursekit-status")
    note.metadata = {"coursekit": {"status_note": True}}
    nb.cells.insert(0, note)
    nb.metadata.setdefault("coursekit", {})[STATUS_KEY] = {
        "status": explanation.status, "reason": explanation.reason, "sha256": sha256,
        "title": explanation.title, "what": explanation.what, "todo": explanation.todo}
    return nb


def status_of(path: Path) -> dict | None:
    """``metadata.coursekit.status`` of an autograded notebook (None when it is a real
    autograded notebook, or unreadable)."""
    nb = _read_json(Path(path), limit=50 * 2**20)
    if not isinstance(nb, dict):
        return None
    status = nb.get("metadata", {}).get("coursekit", {}).get(STATUS_KEY)
    return status if isinstance(status, dict) else None


def _copy_submission_files(root: Path, student: str, aid: str, dest: Path) -> None:
    """timestamp.txt and submission_secret.txt of the submission (regular files only), so
    feedback made from the placeholder is released to the right student."""
    folder = root / "submitted" / student / aid
    if folder.is_symlink():
        return
    for name in ("timestamp.txt", "submission_secret.txt"):
        src = folder / name
        if src.is_file() and not src.is_symlink() and src.stat().st_size < 4096:
            (dest / name).write_bytes(src.read_bytes())


def write_placeholders(root: Path, student: str, aid: str, entry: dict,
                       explanation: Explanation) -> list:
    """Write ``autograded/<student>/<aid>/<nb>.ipynb`` placeholders (any old autograded
    folder of this submission replaced); their paths."""
    import shutil

    import nbformat

    root = Path(root)
    dest = root / "autograded" / student / aid
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    paths = []
    for nb_id in notebook_ids(root, aid):
        nb = ran_notebook(root, student, aid, nb_id, entry.get("status") != "rejected")
        if nb is None:
            continue
        path = dest / f"{nb_id}.ipynb"
        nbformat.write(placeholder(nb, explanation, str(entry.get("sha256") or "")), path)
        paths.append(path)
    _copy_submission_files(root, student, aid, dest)
    return paths


# ----------------------------------------------------------------------------- gradebook


def _submitted_timestamp(root: Path, student: str, aid: str):
    """The submission time nbgrader reads from ``submitted/.../timestamp.txt`` (None when
    absent or unreadable), so formgrader sees the flagged submission as autograded."""
    from nbgrader.utils import parse_utc

    folder = Path(root) / "submitted" / student / aid
    path = folder / "timestamp.txt"
    try:
        if folder.is_symlink() or path.is_symlink() or not path.is_file() \
                or path.stat().st_size > 4096:  # a rejected folder may hold anything
            return None
        text = path.read_text(encoding="utf-8").strip()
        return parse_utc(text) if text else None
    except (OSError, ValueError, OverflowError):
        return None


def first_answer_ids(root: Path, aid: str) -> dict:
    """``{notebook: grade id of its first answer cell}`` from ``source/<aid>/``."""
    out = {}
    for nb_id in notebook_ids(root, aid):
        nb = _read_json(Path(root) / "source" / aid / f"{nb_id}.ipynb") or {}
        for cell in nb.get("cells", []):
            meta = nbgrader_meta(cell)
            if isinstance(meta, dict) and meta.get("solution"):
                out[nb_id] = meta["grade_id"]
                break
    return out


def flag_in_gradebook(gb, root: Path, student: str, aid: str, comment: str) -> None:
    """Flag one submission in nbgrader's tables (see the module docstring): the submission
    is created when nbgrader never recorded it (a rejected file), and its time is the one
    formgrader compares with ``submitted/`` (else formgrader lists it as not graded)."""
    from nbgrader.api import MissingEntry

    gb.update_or_create_student(student)
    try:
        sub = gb.find_submission(aid, student)
    except MissingEntry:
        sub = gb.add_submission(aid, student)
    sub.timestamp = _submitted_timestamp(root, student, aid)
    answers = first_answer_ids(root, aid)
    for nb in sub.notebooks:
        for grade in nb.grades:
            grade.auto_score = None
            grade.needs_manual_grade = True
        gid = answers.get(nb.name)
        for c in nb.comments:
            if c.name == gid:
                c.manual_comment = with_ours(c.manual_comment, comment)
    gb.db.commit()


def unflag_in_gradebook(gb, student: str, aid: str) -> bool:
    """Remove the course's comment paragraphs from a submission; whether it existed."""
    from nbgrader.api import MissingEntry

    try:
        sub = gb.find_submission(aid, student)
    except MissingEntry:
        return False
    for nb in sub.notebooks:
        for c in nb.comments:
            if c.manual_comment and PREFIX in c.manual_comment:
                c.manual_comment = without_ours(c.manual_comment)
    gb.db.commit()
    return True


def _log_text(root: Path, student: str, aid: str) -> str:
    path = Path(root) / "reports" / "grading-logs" / f"{student}--{aid}.log"
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-200_000:]
    except OSError:
        return ""


def explain_entry(root: Path, student: str, aid: str, entry: dict) -> Explanation:
    """:func:`explain` for a journal entry, with the timed-out cell found in the grading
    log when the reason is a per-cell timeout."""
    cell = ""
    status, reason = entry["status"], str(entry.get("reason") or "")
    if status == "timeout" and "per-cell" in reason:
        for nb_id in notebook_ids(root, aid):
            cell = timed_out_cell(_log_text(root, student, aid),
                                  ran_notebook(root, student, aid, nb_id, True))
            if cell:
                break
    timeout = int(os.environ.get("COURSEKIT_CELL_TIMEOUT", "60"))
    return explain(status, reason, cell=cell, cell_timeout=timeout)


def apply(root: Path, entries: dict, out=print) -> dict:
    """Flag, in the gradebook and in ``autograded/``, every submission of ``entries``
    (``{(student, aid): journal entry}``, what ``grade`` returns) that :func:`needs_flag`,
    and unflag those now scored. Idempotent: a submission already flagged for the same
    status and file is left as it is (an instructor's manual grades stand). Returns
    ``{"flagged": [...], "unflagged": [...], "kept": [...]}`` of (student, aid) pairs."""
    root = Path(root)
    url = gbmod.gradebook_url(root)
    done = {"flagged": [], "unflagged": [], "kept": []}
    if not entries:
        return done
    current = flag_rows(url)  # {} while there is no gradebook yet
    todo_flag, todo_unflag = [], []
    for (student, aid), entry in sorted(entries.items()):
        if needs_flag(entry):
            if not STUDENT_ID.fullmatch(student) or not notebook_ids(root, aid):
                continue  # a folder that is no student id, or no such assignment
            row = current.get((student, aid))
            here = all((root / "autograded" / student / aid / f"{n}.ipynb").is_file()
                       for n in notebook_ids(root, aid))
            if row and row["status"] == entry["status"] and \
                    row["sha256"] == str(entry.get("sha256") or "") and here:
                done["kept"].append((student, aid))
            else:
                todo_flag.append((student, aid, entry))
        elif (student, aid) in current:
            todo_unflag.append((student, aid))
    if not todo_flag and not todo_unflag:
        return done
    from . import pipeline

    pipeline.register_assignments(root, {aid for _, aid, _ in todo_flag})  # makes the gradebook
    _ensure_table(url)
    with gbmod.open_gradebook(url) as gb:
        for student, aid, entry in todo_flag:
            why = explain_entry(root, student, aid, entry)
            row = current.get((student, aid))
            same_file = bool(row) and row["sha256"] == str(entry.get("sha256") or "") and \
                row["status"] == entry["status"]
            if not same_file:  # a new outcome: flag it (a manual grade of it stands)
                flag_in_gradebook(gb, root, student, aid, why.comment(entry.get("sha256", "")))
            write_placeholders(root, student, aid, entry, why)
            _set_row(url, student, aid, entry)
            done["flagged"].append((student, aid))
        for student, aid in todo_unflag:
            unflag_in_gradebook(gb, student, aid)
            _drop_row(url, student, aid)
            done["unflagged"].append((student, aid))
    if done["flagged"]:
        out(f"[grade] flagged for the instructor (needs manual grade in formgrader, not "
            f"in the averages, a status page as feedback): {len(done['flagged'])} "
            "submission(s)")
    if done["unflagged"]:
        out(f"[grade] flag removed (graded now): {len(done['unflagged'])} submission(s)")
    return done


# ----------------------------------------------------------------------------- averages


def unresolved(gb, assignment: str) -> set:
    """SubmittedAssignment ids of ``assignment`` flagged by the course that still need a
    manual grade (an instructor has not scored every cell yet)."""
    from nbgrader.api import (Assignment, Grade, SubmittedAssignment, SubmittedNotebook)
    from sqlalchemy import and_, exists

    if not inspect(gb.engine).has_table(TABLE):
        return set()
    t = flags_table
    pending = exists().where(and_(SubmittedNotebook.assignment_id == SubmittedAssignment.id,
                                  Grade.notebook_id == SubmittedNotebook.id,
                                  Grade.needs_manual_grade))
    rows = gb.db.query(SubmittedAssignment.id).join(
        Assignment, SubmittedAssignment.assignment_id == Assignment.id).join(
        t, and_(t.c.student == SubmittedAssignment.student_id,
                t.c.assignment == Assignment.name)).filter(
        Assignment.name == assignment, pending).all()
    return {r[0] for r in rows}


def average(gb, assignment: str, notebook: str | None = None, kind: str | None = None):
    """Formgrader's average score of ``assignment`` (or of one ``notebook``), total or of
    one ``kind`` (``code``, ``written``, ``task``), leaving out :func:`unresolved`
    submissions; None when there are none to leave out (nbgrader's own value stands)."""
    from nbgrader.api import (Assignment, Grade, GradeCell, Notebook, SubmittedAssignment,
                              SubmittedNotebook, TaskCell)
    from sqlalchemy import func

    if kind not in (None, "code", "written", "task"):
        raise ValueError(f"kind={kind!r}: use None, 'code', 'written' or 'task'")
    left_out = unresolved(gb, assignment)
    if not left_out:
        return None
    if notebook is None:
        count = gb.db.query(func.count(SubmittedAssignment.id)).join(
            Assignment, SubmittedAssignment.assignment_id == Assignment.id).filter(
            Assignment.name == assignment, SubmittedAssignment.id.notin_(left_out)).scalar()
    else:
        count = gb.db.query(func.count(SubmittedNotebook.id)).join(
            Notebook, SubmittedNotebook.notebook_id == Notebook.id).join(
            Assignment, Notebook.assignment_id == Assignment.id).filter(
            Assignment.name == assignment, Notebook.name == notebook,
            SubmittedNotebook.assignment_id.notin_(left_out)).scalar()
    if not count:
        return 0.0
    query = gb.db.query(func.coalesce(func.sum(Grade.score), 0.0)).select_from(Grade).join(
        SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id).join(
        Notebook, SubmittedNotebook.notebook_id == Notebook.id).join(
        Assignment, Notebook.assignment_id == Assignment.id).filter(
        Assignment.name == assignment, SubmittedNotebook.assignment_id.notin_(left_out))
    if notebook is not None:
        query = query.filter(Notebook.name == notebook)
    if kind in ("code", "written"):
        query = query.join(GradeCell, Grade.cell_id == GradeCell.id).filter(
            GradeCell.cell_type == ("code" if kind == "code" else "markdown"))
    elif kind == "task":
        query = query.join(TaskCell, Grade.cell_id == TaskCell.id).filter(
            TaskCell.cell_type == "markdown")
    return float(query.scalar()) / count


_AVERAGES = {
    "average_assignment_score": (False, None),
    "average_assignment_code_score": (False, "code"),
    "average_assignment_written_score": (False, "written"),
    "average_assignment_task_score": (False, "task"),
    "average_notebook_score": (True, None),
    "average_notebook_code_score": (True, "code"),
    "average_notebook_written_score": (True, "written"),
    "average_notebook_task_score": (True, "task"),
}


def _patched(original, per_notebook: bool, kind):
    if per_notebook:
        @functools.wraps(original)
        def method(self, notebook_id, assignment_id):
            value = average(self, assignment_id, notebook_id, kind)
            return original(self, notebook_id, assignment_id) if value is None else value
    else:
        @functools.wraps(original)
        def method(self, assignment_id):
            value = average(self, assignment_id, None, kind)
            return original(self, assignment_id) if value is None else value
    method.coursekit_original = original
    return method


def install_averages() -> None:
    """Make nbgrader's ``Gradebook.average_*`` (formgrader's assignment and notebook
    averages) leave out :func:`unresolved` submissions. Idempotent; called from
    ``nbgrader_config.py`` so formgrader and every nbgrader command get it."""
    from nbgrader.api import Gradebook

    for name, (per_notebook, kind) in _AVERAGES.items():
        current = getattr(Gradebook, name)
        if getattr(current, "coursekit_original", None) is None:
            setattr(Gradebook, name, _patched(current, per_notebook, kind))


def flag_states(gb) -> dict:
    """``{(student, assignment): "pending" | "resolved"}`` for every submission the course
    flagged: pending while any of its grades still needs a manual grade."""
    from nbgrader.api import Assignment, Grade, SubmittedAssignment, SubmittedNotebook
    from sqlalchemy import and_, exists

    if not inspect(gb.engine).has_table(TABLE):
        return {}
    t = flags_table
    pending = exists().where(and_(SubmittedNotebook.assignment_id == SubmittedAssignment.id,
                                  Grade.notebook_id == SubmittedNotebook.id,
                                  Grade.needs_manual_grade))
    rows = gb.db.query(SubmittedAssignment.student_id, Assignment.name, pending).join(
        Assignment, SubmittedAssignment.assignment_id == Assignment.id).join(
        t, and_(t.c.student == SubmittedAssignment.student_id,
                t.c.assignment == Assignment.name)).all()
    return {(s, a): "pending" if p else "resolved" for s, a, p in rows}
