"""Score reports from the nbgrader gradebook (never a silent 0 for an error).

Each (student, assignment) row has a status: ``graded``, ``timeout`` (a cell or the
whole notebook ran past its limit), ``error`` (the notebook could not be graded:
kernel died or exited), ``rejected`` (the pre-check refused the file), or
``missing`` (nothing submitted). A row carries a score only when the gradebook holds
a real grade for it (``graded``, ``timeout`` of single cells, or a flagged submission an
instructor has graded by hand in formgrader); the others carry the reason instead, never
a 0. ``nbgrader export`` writes the same statuses (:mod:`coursekit.grading.export`).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path

STATUSES = ("graded", "error", "timeout", "rejected", "missing")


@dataclass(frozen=True)
class Row:
    """One student x assignment line of the report."""

    student: str
    assignment: str
    status: str
    score: float | None
    max_score: float
    reason: str = ""


def _gradebook(db_url):
    from .gradebook import open_gradebook

    return open_gradebook(db_url)  # driver checked, `alembic` findable, warning filtered


def read_rows(db_url: str, outcomes: dict | None = None) -> list:
    """Rows for every student x assignment in the gradebook.

    ``outcomes`` maps (student, assignment) to ``{"status": ..., "reason": ...}`` from
    the grading run (errors, timeouts, pre-check rejections); a graded submission
    without such an entry is ``graded``.
    """
    from .statuses import flag_states

    outcomes = outcomes or {}
    rows = []
    with _gradebook(db_url) as gb:
        flags = flag_states(gb)  # submissions flagged for a manual grade, and resolved ones
        students = sorted({s.id for s in gb.students} | {s for s, _ in outcomes})
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            max_score = float(assignment.max_score)
            for student_id in students:
                key = (student_id, assignment.name)
                info = outcomes.get(key, {})
                try:
                    sub = gb.find_submission(assignment.name, student_id)
                    score = float(sub.score)
                    graded = True
                except Exception:  # noqa: BLE001 - MissingEntry: nothing graded
                    score, graded = None, False
                status = info.get("status") or ("graded" if graded else "missing")
                reason = info.get("reason", "")
                if status == "graded" and not graded:  # a stale journal: never a crash or a 0
                    status, reason = "missing", ("the journal says graded but the gradebook "
                                                 "has no grade; run `grade` again")
                resolved = graded and flags.get(key) == "resolved"
                if resolved:  # an instructor graded it by hand in formgrader
                    reason = "graded by hand after: " + reason
                elif not graded or not info.get("scored", status == "graded") \
                        or flags.get(key) == "pending":
                    score = None  # an error is never shown as a score of 0
                rows.append(Row(student_id, assignment.name, status, score, max_score, reason))
    return rows


def to_csv(rows) -> str:
    """The rows as CSV (empty score for anything not graded)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(Row.__dataclass_fields__), lineterminator="\n")
    writer.writeheader()
    for r in rows:
        d = asdict(r)
        d["score"] = "" if r.score is None else f"{r.score:g}"
        d["max_score"] = f"{r.max_score:g}"
        writer.writerow(d)
    return buf.getvalue()


def to_table(rows) -> str:
    """A readable students x assignments table: ``score/max`` or the status in capitals."""
    students = sorted({r.student for r in rows})
    aids = sorted({r.assignment for r in rows})
    cell = {(r.student, r.assignment): r for r in rows}
    width = max([len("student")] + [len(s) for s in students]) + 2
    cols = [max(len(a), 13) + 2 for a in aids]
    lines = ["student".ljust(width) + "".join(a.ljust(w) for a, w in zip(aids, cols))]
    for s in students:
        parts = []
        for a, w in zip(aids, cols):
            r = cell.get((s, a))
            if r is None:
                text = "-"
            elif r.status == "graded":
                text = f"{r.score:g}/{r.max_score:g}"
            elif r.score is not None:
                text = f"{r.score:g}/{r.max_score:g} {r.status.upper()}"
            else:
                text = r.status.upper()
            parts.append(text.ljust(w))
        lines.append(s.ljust(width) + "".join(parts))
    notes = [f"  {r.student}/{r.assignment}: {r.status}: {r.reason}"
             for r in rows if r.status != "graded" and r.reason]
    if notes:
        lines += ["", "needs attention:"] + notes
    return "\n".join(lines)


CASE_FIELDS = ("student", "assignment", "cell", "case", "name", "points", "earned",
               "status", "detail")


def case_rows(autograded: Path) -> tuple:
    """Per-case verdicts and review flags from ``autograded/*/*/*.ipynb`` (written by the
    grader outside the kernel): ``(rows, {(student, assignment): [flags]})``."""
    rows, flags = [], {}
    for path in sorted(Path(autograded).glob("*/*/*.ipynb")):
        student, aid = path.parent.parent.name, path.parent.name
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
            results = meta.get("coursekit", {}).get("verdicts", {})
        except (OSError, ValueError, KeyError, AttributeError):
            continue
        for gid, result in sorted(results.items()):
            for v in result.get("verdicts", []):
                rows.append({"student": student, "assignment": aid, "cell": gid,
                             **{k: v.get(k) for k in CASE_FIELDS[3:]}})
            if result.get("dynamic"):
                flags[(student, aid)] = result["dynamic"]
    return rows, flags


def cases_csv(rows) -> str:
    """Per-case verdicts as CSV (no expected values: they never leave the key)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CASE_FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(r)
    return buf.getvalue()


def write_reports(rows, folder: Path, cases=None, flags=None) -> dict:
    """Write ``grades.csv``, ``grades.json``, ``grades.txt`` and (given per-case rows)
    ``cases.csv`` into ``folder``; ``flags`` (dynamic code) are listed for review."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"csv": folder / "grades.csv", "json": folder / "grades.json",
             "txt": folder / "grades.txt"}
    if cases is not None:
        paths["cases"] = folder / "cases.csv"
        paths["cases"].write_text(cases_csv(cases), encoding="utf-8")
    paths["csv"].write_text(to_csv(rows), encoding="utf-8")
    paths["json"].write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n",
                             encoding="utf-8")
    review = [f"  {s}/{a}: flagged for review (the score stands until a person looks): "
              + "; ".join(f) for (s, a), f in sorted((flags or {}).items())]
    paths["txt"].write_text(to_table(rows) + "\n" + (
        "\nflagged for review:\n" + "\n".join(review) + "\n" if review else ""),
        encoding="utf-8")
    return paths
