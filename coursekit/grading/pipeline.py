"""Grading steps on a course directory: collect, grade, feedback, report.

Thin wrappers around nbgrader's own commands, run with the course's
``nbgrader_config.py`` (absolute gradebook path, timeouts, feedback stripping).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from . import build as buildmod
from . import gradebook as gbmod
from . import report as reportmod


def db_url(root: Path) -> str:
    """The course's gradebook URL: :func:`coursekit.grading.gradebook.gradebook_url`, the
    one function ``nbgrader_config.py`` and every part of the course use."""
    return gbmod.gradebook_url(root)


def collect_samples(root: Path) -> int:
    """Copy samples/<student>/<assignment>/ into submitted/ (the demo class)."""
    n = 0
    for nb in sorted((root / "samples").glob("*/*/*.ipynb")):
        student, aid = nb.parent.parent.name, nb.parent.name
        dest = root / "submitted" / student / aid
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(nb, dest / nb.name)
        n += 1
    return n


def submissions(root: Path, assignments=None, students=None) -> list:
    """(student, assignment) pairs present in submitted/."""
    out = []
    for folder in sorted((root / "submitted").glob("*/*")):
        if not folder.is_dir():
            continue
        student, aid = folder.parent.name, folder.name
        if (assignments and aid not in assignments) or (students and student not in students):
            continue
        out.append((student, aid))
    return out


def registered_assignments(root: Path) -> set:
    """Assignments whose notebooks are in the gradebook (needed before autograde)."""
    url = db_url(root)
    if not gbmod.exists(url):
        return set()
    with gbmod.open_gradebook(url) as gb:
        return {a.name for a in gb.assignments if a.notebooks}


def register_assignments(root: Path, aids) -> list:
    """Put assignments into the gradebook (grade cells, checksums) without touching
    release/: nbgrader generate_assignment into a scratch release folder."""
    missing = sorted(set(aids) - registered_assignments(root))
    for aid in missing:
        with tempfile.TemporaryDirectory(prefix="coursekit-register-") as tmp:
            buildmod.run_nbgrader(root, "generate_assignment", aid, "--force",
                                  f"--CourseDirectory.release_directory={tmp}")
    return missing


def grade(root: Path, assignments=None, students=None, workers=None, regrade=False,
          out=print, **options) -> dict:
    """Pre-check and autograde (see :mod:`coursekit.grading.grader`; ``options`` such as
    ``executor`` and ``scheduler`` go to it), then flag in the gradebook every submission
    that could not be scored and unflag those graded now
    (:func:`coursekit.grading.statuses.apply`). Returns the journal entries of the
    submissions asked about."""
    from . import grader
    from . import statuses

    results = grader.grade(root, assignments, students, workers=workers, regrade=regrade,
                           out=out, **options)
    statuses.apply(Path(root).resolve(), results, out=out)
    return results


def feedback(root: Path, assignments=None, show_hidden=False) -> list:
    """``nbgrader generate_feedback`` for each graded assignment; the feedback HTML paths.

    Hidden-test code and tracebacks are stripped (``nbgrader_config.py``) unless
    ``show_hidden`` (e.g. after the deadline). A submission that could not be graded gets
    its status page (placeholder in autograded/, :mod:`coursekit.grading.statuses`), and
    every feedback folder the files ``nbgrader release_feedback`` needs
    (:func:`coursekit.grading.feedback.ensure_release_files`)."""
    from . import statuses
    from .feedback import ensure_release_files
    from .journal import Journal

    present = submissions(root, assignments)
    aids = sorted({aid for _, aid in present})
    if gbmod.exists(db_url(root)):  # flags and placeholders of the journal, if any is missing
        entries = Journal(db_url(root), create=False).entries(present)
        statuses.apply(Path(root).resolve(), entries, out=lambda *_: None)
    env = {"COURSEKIT_SHOW_HIDDEN_TESTS": "1" if show_hidden else "0"}
    for aid in aids:
        if any((root / "autograded").glob(f"*/{aid}/*.ipynb")):
            buildmod.run_nbgrader(root, "generate_feedback", aid, "--force", env=env)
        for folder in sorted((root / "feedback").glob(f"*/{aid}")):
            if folder.is_dir() and any(folder.glob("*.html")):
                ensure_release_files(folder)
    return sorted((root / "feedback").glob("*/*/*.html"))


def report(root: Path, outcomes=None, out=print):
    """Rows and written report files (reports/grades.csv, .json, .txt); statuses come
    from the grading journal (in the gradebook) unless ``outcomes`` is given."""
    if outcomes is None:
        from .grader import open_journal, outcomes_from_state

        jr = open_journal(root, out)
        outcomes = outcomes_from_state({f"{s}/{a}": e for (s, a), e in jr.entries().items()})
    rows = reportmod.read_rows(db_url(root), outcomes)
    cases, flags = reportmod.case_rows(root / "autograded")
    return rows, reportmod.write_reports(rows, root / "reports", cases, flags)
