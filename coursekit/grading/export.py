"""``nbgrader export`` with statuses: plain ``nbgrader export`` writes this CSV.

nbgrader's own CSV writes 0.0 for a submission whose kernel died, one that timed out
before anything was graded, a rejected file, and a student who submitted nothing, so an
LMS import cannot tell them from a real 0. :class:`StatusCsvExportPlugin` (named by
``c.ExportApp.plugin_class`` in ``nbgrader_config.py``) writes nbgrader's columns in
nbgrader's order, then ``status`` and ``reason``:

* ``graded``: nbgrader's scores, as nbgrader writes them;
* ``timeout``: cells ran past the per-cell limit and the rest was graded (scores given),
  or nothing could be graded (scores blank);
* ``error``, ``rejected``: scores blank, the reason given; once an instructor has graded
  the submission by hand in formgrader, their scores are written and the reason says so;
* ``ungraded``: a folder in ``submitted/`` that ``grade`` has not graded yet;
* ``missing``: a student in the gradebook with no submission of a released assignment
  (``release/<assignment>/`` or the exchange holds it); ``not released`` otherwise.

Statuses come from the grading journal (:mod:`coursekit.grading.journal`) and the flags
(:mod:`coursekit.grading.statuses`), both tables of the same gradebook.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.plugins.export import CsvExportPlugin

NBGRADER_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name",
                    "first_name", "email", "raw_score", "late_submission_penalty", "score",
                    "max_score")
COLUMNS = NBGRADER_COLUMNS + ("status", "reason")
SCORES = ("raw_score", "late_submission_penalty", "score")


def _journal(gradebook) -> dict:
    from sqlalchemy import inspect, select

    from .journal import TABLE, journal_table

    if not inspect(gradebook.engine).has_table(TABLE):
        return {}
    with gradebook.engine.connect() as conn:
        rows = conn.execute(select(journal_table)).fetchall()
    return {(r.student, r.assignment): {"status": r.status, "reason": r.reason or "",
                                        "scored": bool(r.scored)} for r in rows}


def status_of(entry: dict | None, has_submission: bool, flag: str | None,
              submitted: bool, released: bool) -> tuple:
    """``(status, reason, show_scores)`` of one student x assignment (see the module
    docstring). ``flag``: ``"pending"``, ``"resolved"`` or None (:func:`statuses.flag_states`)."""
    if entry:
        status, reason = entry["status"], entry.get("reason", "")
        if status == "graded" and not has_submission:
            return "missing", ("the grading journal says graded but the gradebook holds no "
                               "grade; run grade again"), False
        if flag == "resolved":
            return status, "graded by hand after: " + reason, True
        scored = entry.get("scored", status == "graded") and flag != "pending"
        return status, reason, bool(scored and has_submission)
    if has_submission:
        return "graded", "", True
    if submitted:
        return "ungraded", "submitted but not graded yet: run grade", False
    if released:
        return "missing", "no submission", False
    return "not released", "", False


class StatusCsvExportPlugin(CsvExportPlugin):
    """nbgrader's CSV export plus ``status`` and ``reason`` columns; blank scores for
    anything that has no real score (see the module docstring)."""

    def _root(self) -> Path:
        coursedir = getattr(self.parent, "coursedir", None)
        return Path(coursedir.root if coursedir is not None else os.getcwd())

    def _released(self, root: Path) -> set:
        out = {p.name for p in (root / "release").iterdir() if p.is_dir()} \
            if (root / "release").is_dir() else set()
        exchange = getattr(getattr(self.parent, "config", {}), "Exchange", {})
        course = getattr(getattr(self.parent, "coursedir", None), "course_id", "")
        outbound = Path(exchange.get("root", "") or "/nonexistent") / course / "outbound"
        if course and outbound.is_dir():
            out |= {p.name for p in outbound.iterdir() if p.is_dir()}
        return out

    def export(self, gradebook) -> None:
        from . import statuses

        dest = self.to or "grades.csv"
        students = [str(s) for s in self.student]
        assignments = [str(a) for a in self.assignment]
        root = self._root()
        journal = _journal(gradebook)
        flags = statuses.flag_states(gradebook)
        released = self._released(root)
        self.log.info("Exporting grades with statuses to %s", dest)
        with open(dest, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
            writer.writeheader()
            for assignment in gradebook.assignments:
                if assignments and assignment.name not in assignments:
                    continue
                for student in gradebook.students:
                    if students and student.id not in students:
                        continue
                    writer.writerow(self._row(gradebook, root, assignment, student,
                                              journal, flags, released))

    def _row(self, gradebook, root, assignment, student, journal, flags, released) -> dict:
        row = {"assignment": assignment.name, "duedate": assignment.duedate or "",
               "student_id": student.id, "last_name": student.last_name or "",
               "first_name": student.first_name or "", "email": student.email or "",
               "max_score": assignment.max_score, "timestamp": ""}
        try:
            submission = gradebook.find_submission(assignment.name, student.id)
        except MissingEntry:
            submission = None
        key = (student.id, assignment.name)
        submitted = (root / "submitted" / student.id / assignment.name).is_dir()
        status, reason, show = status_of(journal.get(key), submission is not None,
                                         flags.get(key), submitted,
                                         assignment.name in released)
        row.update(status=status, reason=reason)
        if submission is not None:
            row["timestamp"] = submission.timestamp or ""
        if show and submission is not None:
            penalty = submission.late_submission_penalty or 0.0
            row.update(raw_score=submission.score, late_submission_penalty=penalty,
                       score=max(0.0, submission.score - penalty))
        else:
            row.update({k: "" for k in SCORES})
        return row
