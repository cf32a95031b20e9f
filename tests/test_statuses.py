"""Statuses where instructors look (issue #16, item 5): a submission without a real score
(error, timeout, rejected) is flagged in formgrader with the reason, left out of the
averages until resolved, exported with its status by plain ``nbgrader export``, and its
student gets a feedback page saying what happened; a good resubmission clears it all."""

import csv
import json
import os
import warnings

import pytest

from coursekit.grading import build, export, pipeline, statuses

AID = "02_memory_calculator"
STUDENTS = ("erin", "tim", "rex")  # kernel exits, ignores the interrupt, invalid JSON


def _notebook(course, student="alice") -> dict:
    return json.loads((course / "samples" / student / AID / f"{AID}.ipynb").read_text())


def _cell(nb, grade_id):
    return next(c for c in nb["cells"]
                if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _submit(course, student, nb=None, raw=None):
    folder = course / "submitted" / student / AID
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{AID}.ipynb").write_text(raw if raw is not None else json.dumps(nb))


def _class(course):
    nb = _notebook(course)
    cell = _cell(nb, "ex_zero")
    cell["source"] = _source(cell) + "\nimport os\nos._exit(1)"
    _submit(course, "erin", nb)
    nb = _notebook(course)
    cell = _cell(nb, "ex_kv_cache")
    cell["source"] = ("import time\nwhile True:\n    try:\n        time.sleep(0.2)\n"
                      "    except KeyboardInterrupt:\n        pass\n" + _source(cell))
    _submit(course, "tim", nb)
    _submit(course, "rex", raw='{"cells": [')


def _api(course):
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    warnings.filterwarnings("ignore", message=".*not in session.*")
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)


def _grades(api, student):
    with api.gradebook as gb:
        sub = gb.find_submission(AID, student)
        return ([(g.name, g.auto_score, g.manual_score, g.needs_manual_grade)
                 for nb in sub.notebooks for g in nb.grades],
                [c.manual_comment for nb in sub.notebooks for c in nb.comments
                 if c.manual_comment])


def _grade_by_hand(api, student, points: float):
    """What formgrader's grade handler does when an instructor enters a score per cell."""
    with api.gradebook as gb:
        sub = gb.find_submission(AID, student)
        grades = [g for nb in sub.notebooks for g in nb.grades]
        for i, g in enumerate(grades):
            g.manual_score = points if i == 0 else 0.0
            g.needs_manual_grade = g.manual_score is None and g.auto_score is None
        gb.db.commit()


def test_unscored_submissions_in_formgrader_export_and_feedback(course, monkeypatch):
    monkeypatch.setenv("COURSEKIT_CELL_TIMEOUT", "3")
    _class(course)
    results = pipeline.grade(course, assignments=[AID], workers=2, out=lambda *_: None)
    assert {s: results[(s, AID)]["status"] for s in STUDENTS} == \
        {"erin": "error", "tim": "timeout", "rex": "rejected"}
    assert not results[("tim", AID)]["scored"]

    api = _api(course)
    with api.gradebook as gb:
        gb.update_or_create_student("mia")  # in the class, submitted nothing
    subs = {s["student"]: s for s in api.get_submissions(AID)}
    for sid in STUDENTS:  # listed as graded (openable), needing a manual grade, no score
        assert subs[sid]["autograded"] and subs[sid]["needs_manual_grade"], subs[sid]
        assert subs[sid]["score"] == 0.0
        grades, comments = _grades(api, sid)
        assert grades and all(auto is None and flag for _, auto, _, flag in grades)
        assert len(comments) == 1 and comments[0].startswith(statuses.PREFIX)
        assert results[(sid, AID)]["status"].upper() in comments[0]
        assert (course / "autograded" / sid / AID / f"{AID}.ipynb").is_file()
    assert "kernel exited with code 1" in _grades(api, "erin")[1][0]
    assert "per-cell limit" in _grades(api, "tim")[1][0]
    # every submission is flagged: nothing to average (nbgrader alone: 0 / 3 submissions)
    assert api.get_assignment(AID)["average_score"] == 0.0

    # plain `nbgrader export`: statuses, blank scores, a missing student
    build.run_nbgrader(course, "export")
    rows = {r["student_id"]: r for r in csv.DictReader(open(course / "grades.csv"))
            if r["assignment"] == AID}
    assert list(rows["erin"]) == list(export.COLUMNS)
    assert {s: rows[s]["status"] for s in (*STUDENTS, "mia")} == \
        {"erin": "error", "tim": "timeout", "rex": "rejected", "mia": "missing"}
    assert all(rows[s]["score"] == rows[s]["raw_score"] == "" for s in (*STUDENTS, "mia"))
    assert "not valid JSON" in rows["rex"]["reason"]

    # feedback: a status page saying what happened, with the reason; releasable
    pipeline.feedback(course, [AID])
    pages = {s: (course / "feedback" / s / AID / f"{AID}.html").read_text() for s in STUDENTS}
    assert "exit code 1" in pages["erin"] and "kernel exited with code 1" in pages["erin"]
    assert "per-cell limit in cell ex_kv_cache" in pages["tim"]
    assert "not valid JSON" in pages["rex"]
    for sid, page in pages.items():
        assert "Content-Security-Policy" in page and "<script" not in page
        assert "Score:" not in page and "BEGIN HIDDEN TESTS" not in page
        folder = course / "feedback" / sid / AID
        assert (folder / "timestamp.txt").is_file() and (folder / "submission_secret.txt").is_file()

    # resolved by hand: tim counts again (5 of 1 submission; nbgrader alone: 5 / 3)
    _grade_by_hand(api, "tim", 5.0)
    assert api.get_assignment(AID)["average_score"] == pytest.approx(5.0)
    assert api.get_notebooks(AID)[0]["average_score"] == pytest.approx(5.0)
    # a rerun that grades nothing new leaves the same flags (tim's manual grade stands)
    before = {s: _grades(api, s) for s in STUDENTS}
    again = pipeline.grade(course, assignments=[AID], workers=2, out=lambda *_: None)
    assert statuses.apply(course, again)["flagged"] == []
    assert {s: _grades(api, s) for s in STUDENTS} == before

    # a good resubmission clears erin's flag and comment: (5 + 28) / 2, rex still left out
    _submit(course, "erin", _notebook(course))
    results = pipeline.grade(course, assignments=[AID], workers=2, out=lambda *_: None)
    assert results[("erin", AID)]["status"] == "graded"
    grades, comments = _grades(api, "erin")
    assert not any(flag for *_, flag in grades) and comments == []
    erin = {s["student"]: s for s in api.get_submissions(AID)}["erin"]
    assert not erin["needs_manual_grade"] and erin["score"] == erin["max_score"] > 0
    assert api.get_assignment(AID)["average_score"] == pytest.approx(
        (5.0 + erin["max_score"]) / 2)
    assert statuses.status_of(course / "autograded" / "erin" / AID / f"{AID}.ipynb") is None


# ----------------------------------------------------------------------------- units


def test_needs_flag():
    assert statuses.needs_flag({"status": "error"})
    assert statuses.needs_flag({"status": "rejected"})
    assert statuses.needs_flag({"status": "timeout", "scored": False})
    assert not statuses.needs_flag({"status": "timeout", "scored": True})
    assert not statuses.needs_flag({"status": "graded", "scored": True})
    assert not statuses.needs_flag(None)


def test_explanations_in_plain_words():
    e = statuses.explain("timeout", "a cell ran past the 60 s per-cell limit and ignored the "
                         "interrupt; nothing could be graded (graded again at the end of "
                         "the run, load 3.1 on 2 cores: same outcome)", cell="ex_kv_cache")
    assert "ran past the 60 s per-cell limit in cell ex_kv_cache" in e.what
    assert "load" not in e.reason  # the machine's load is for the instructor's log only
    assert "300 s allowed for the whole notebook" in statuses.explain(
        "timeout", "whole-notebook limit of 300 s exceeded; kernel killed").what
    assert "exit code 3" in statuses.explain(
        "error", "kernel exited with code 3 (os._exit or a crash)").what
    assert "not accepted" in statuses.explain("rejected", "symlink x").title
    with pytest.raises(ValueError, match="status='graded'"):
        statuses.explain("graded", "")


def test_comments_keep_the_instructors_text():
    ours = statuses.PREFIX + " ERROR: not graded."
    mixed = statuses.with_ours("Nice try.", ours)
    assert mixed == ours + "\n\nNice try."
    assert statuses.with_ours(mixed, ours + " again") == ours + " again\n\nNice try."
    assert statuses.without_ours(mixed) == "Nice try."
    assert statuses.without_ours(ours) is None


def test_timed_out_cell_names_only_the_cell():
    nb = {"cells": [{"cell_type": "code", "source": "x = 1",
                     "metadata": {"nbgrader": {"grade_id": "ex_a", "solution": True}}},
                    {"cell_type": "code", "source": "while True:\n    pass",
                     "metadata": {"nbgrader": {"grade_id": "ex_b", "solution": True}}}]}
    log = ("    nbclient.exceptions.CellTimeoutError: A cell timed out while it was being "
           "executed, after 3 seconds.\n    Here is a preview of the cell contents:\n"
           "    -------------------\n    while True:\n        pass\n"
           "    -------------------\n")
    assert statuses.timed_out_cell(log, nb) == "ex_b"
    assert statuses.timed_out_cell("no preview", nb) == ""


@pytest.mark.parametrize("entry,has,flag,submitted,released,want", [
    ({"status": "graded", "scored": True}, True, None, True, True, ("graded", True)),
    ({"status": "error", "reason": "x"}, True, "pending", True, True, ("error", False)),
    ({"status": "error", "reason": "x"}, True, "resolved", True, True, ("error", True)),
    ({"status": "timeout", "scored": True}, True, None, True, True, ("timeout", True)),
    ({"status": "graded", "scored": True}, False, None, True, True, ("missing", False)),
    (None, True, None, True, True, ("graded", True)),
    (None, False, None, True, True, ("ungraded", False)),
    (None, False, None, False, True, ("missing", False)),
    (None, False, None, False, False, ("not released", False)),
])
def test_export_status(entry, has, flag, submitted, released, want):
    status, reason, show = export.status_of(entry, has, flag, submitted, released)
    assert (status, show) == want
    assert ("by hand" in reason) == (flag == "resolved")


def test_average_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind='oral'"):
        statuses.average(None, AID, kind="oral")


def test_release_files_are_added_once(tmp_path):
    from coursekit.grading.feedback import ensure_release_files

    assert sorted(ensure_release_files(tmp_path)) == ["submission_secret.txt", "timestamp.txt"]
    secret = (tmp_path / "submission_secret.txt").read_text()
    assert ensure_release_files(tmp_path) == []
    assert (tmp_path / "submission_secret.txt").read_text() == secret
    os.remove(tmp_path / "timestamp.txt")
    assert ensure_release_files(tmp_path) == ["timestamp.txt"]
