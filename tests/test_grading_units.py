"""Unit tests of the grading glue: checks, authoring, pre-check, feedback, reports."""

import json
import math
import os
import stat
import re
import sys

import numpy as np
import pytest

from coursekit.grading import authoring, checks, feedback, precheck, report
from coursekit.training import memory


# --------------------------------------------------------------------------- authoring

GOOD = """# %% [markdown]
# # Title
#
# text
# %% [setup]
import math
# %% [answer id=ex_a partial]
def f(x):
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION
# %% [test id=test_a points=2]
assert f(1) == 2
### BEGIN HIDDEN TESTS
ck.case("two", lambda: f(2), expect=ck.exactly(4))
### END HIDDEN TESTS
# %%
# NBVAL_CHECK_OUTPUT
print(1)
"""


def test_authoring_builds_nbgrader_metadata():
    nb = authoring.py_to_notebook(GOOD, "99_demo")
    kinds = [c.cell_type for c in nb.cells]
    assert kinds == ["markdown", "code", "code", "code", "code"]
    assert nb.cells[0].source == "# Title\n\ntext"
    answer, test = nb.cells[2].metadata.nbgrader, nb.cells[3].metadata.nbgrader
    assert answer == {"grade": False, "grade_id": "ex_a", "locked": False,
                      "schema_version": 3, "solution": True}
    assert test["points"] == 2 and test["grade"] and test["locked"]
    # the recording code comes first, the expected value stays out of the notebook
    assert nb.cells[3].source.startswith("### BEGIN HIDDEN TESTS\n")
    assert "_record_('test_a', 'two', lambda: f(2), _forbid_)" in nb.cells[3].source
    assert "exactly" not in nb.cells[3].source and "4)" not in nb.cells[3].source
    assert nb.cells[3].metadata.tags == ["raises-exception"]
    assert authoring.answer_key(GOOD)["test_a"]["cases"][0]["expect"] == {
        "kind": "exactly", "value": 4}
    assert nb.cells[1].metadata.nbgrader["grade_id"] == "setup"
    assert [c.id for c in nb.cells][1:4] == ["setup", "ex_a", "test_a"]
    assert authoring.pinned(nb.cells[4])
    assert authoring.dumps(nb) == authoring.dumps(authoring.py_to_notebook(GOOD, "99_demo"))
    assert authoring.total_points(GOOD) == 2
    assert authoring.partial_ids(GOOD) == {"ex_a"}


@pytest.mark.parametrize("text,match", [
    ("# %% [answer]\nx = 1\n", "needs id="),
    ("# %% [answer id=a]\nx = 1\n", "BEGIN SOLUTION"),
    ("# %% [test id=t points=1]\nassert True\n", "no hidden tests"),
    ("# %% [test id=t]\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS\n", "points"),
    ("# %% [test id=t points=2.5]\n### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS\n",
     "line 1: points=2.5 must be a whole number"),
    ("# %% [test id=t points=1]\n### BEGIN HIDDEN TESTS\nx = 1\n### END HIDDEN TESTS\n",
     "at least one ck.case"),
    ("# %% [test id=t points=1]\nx = 1\n### BEGIN HIDDEN TESTS\n"
     "ck.check_close(f(1), 2.0)\n### END HIDDEN TESTS\n", "line 4: .*never compares"),
    ("# %% [test id=t points=1]\n### BEGIN HIDDEN TESTS\n"
     "ck.case('a', lambda: 1, expect=ck.approx(x))\n### END HIDDEN TESTS\n",
     "line 3: .*literal"),
    ("# %% [test id=t points=1]\n### BEGIN HIDDEN TESTS\n"
     "ck.case('a', lambda: 1, expect=ck.exactly(1))\n"
     "ck.case('a', lambda: 2, expect=ck.exactly(2))\n### END HIDDEN TESTS\n",
     "line 4: .*duplicate case"),
    ("# %% [locked id=a b]\nx = 1\n", "unknown cell tag"),
    ("# %% [locked id=bad!]\nx = 1\n", "letters, digits"),
    ("# %% [locked id=a]\nx\n# %% [locked id=a]\ny\n", "duplicate id"),
    ("# %% [markdown]\nnot a comment\n", "must start with"),
])
def test_authoring_rejects_bad_sources(text, match):
    with pytest.raises(authoring.AuthoringError, match=match):
        authoring.parse(text)


def test_fill_answers_strips_markers():
    src = authoring.py_to_notebook(GOOD, "99_demo")
    filled = authoring.fill_answers(src, src, {"ex_a"})
    assert "BEGIN SOLUTION" not in filled.cells[2].source
    assert "return 2 * x" in filled.cells[2].source


# --------------------------------------------------------------------------- pre-check


def _nb(cells):
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _graded(gid, grade):
    meta = {"grade": grade, "grade_id": gid, "locked": grade, "schema_version": 3,
            "solution": not grade}
    return {"cell_type": "code", "metadata": {"nbgrader": meta}, "source": "",
            "outputs": [], "execution_count": None}


@pytest.fixture
def release_nb(tmp_path):
    path = tmp_path / "release.ipynb"
    path.write_text(json.dumps(_nb([_graded("ex_a", False), _graded("test_a", True)])))
    return path


def _folder(tmp_path, files):
    folder = tmp_path / "submitted" / "sam" / "01_x"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize("name", ["Copy of 01_x.ipynb", "01_x (1).ipynb", "01_x-Copy1.ipynb",
                                  "Copy of 01_x (2).ipynb"])
def test_precheck_renames_colab_copies(tmp_path, release_nb, name):
    good = json.dumps(_nb([_graded("ex_a", False), _graded("test_a", True)])).encode()
    folder = _folder(tmp_path, {name: good})
    found = precheck.check_folder(folder, "01_x", release_nb)
    assert [f.level for f in found] == ["fixed"]
    assert (folder / "01_x.ipynb").exists() and not (folder / name).exists()


@pytest.mark.parametrize("files,level,match", [
    ({"01_x.ipynb": b"{not json"}, "rejected", "not valid JSON"),
    ({"01_x.ipynb": b'{"a": 1}'}, "rejected", "not a Jupyter notebook"),
    ({"01_x.ipynb": json.dumps(_nb([{"cell_type": "code", "metadata": {}, "source": ""}]))
      .encode()}, "rejected", "metadata stripped"),
    ({"notes.txt": b"hi"}, "rejected", "no notebook named"),
    ({"Copy of 01_x.ipynb": b"{}", "01_x (1).ipynb": b"{}"}, "rejected", "several copies"),
    ({"01_x.ipynb": json.dumps(_nb([_graded("ex_a", False)])).encode()}, "warning",
     "test cells deleted"),
])
def test_precheck_findings(tmp_path, release_nb, files, level, match):
    folder = _folder(tmp_path, files)
    found = precheck.check_folder(folder, "01_x", release_nb)
    assert any(f.level == level and match in f.message for f in found), found


def test_student_written_timestamp_is_replaced_by_the_instructors(tmp_path, release_nb):
    good = json.dumps(_nb([_graded("ex_a", False), _graded("test_a", True)])).encode()
    folder = _folder(tmp_path, {"01_x.ipynb": good, "timestamp.txt": b"1999-01-01 00:00:00"})
    # no instructor time: the student's file is moved out, none is recorded
    found = precheck.check_folder(folder, "01_x", release_nb)
    assert [f.level for f in found] == ["fixed"], found
    assert "not trusted" in found[0].message and "without one" in found[0].message
    assert not (folder / "timestamp.txt").exists()
    kept = tmp_path / precheck.QUARANTINE / "sam" / "01_x" / "timestamp.student.txt"
    assert kept.read_text() == "1999-01-01 00:00:00"
    # the instructor's table wins, and a rerun changes nothing (same submission hash)
    (tmp_path / precheck.TIMESTAMPS).write_text(
        "student_id,assignment_id,timestamp\nsam,01_x,2026-11-20 17:05:00\n")
    (folder / "timestamp.txt").write_text("1999-01-01 00:00:00")
    found = precheck.check_folder(folder, "01_x", release_nb)
    assert "2026-11-20 17:05:00 from timestamps.csv" in found[0].message
    assert (folder / "timestamp.txt").read_text() == "2026-11-20 17:05:00\n"
    assert [f.level for f in precheck.check_folder(folder, "01_x", release_nb)] == ["ok"]


@pytest.mark.parametrize("table,match", [
    ("student,assignment,time\n", "header must be student_id,assignment_id,timestamp"),
    ("student_id,assignment_id,timestamp\nsam,01_x,yesterday\n", ":2: timestamp 'yesterday'"),
])
def test_bad_timestamps_table_names_the_line(tmp_path, table, match):
    (tmp_path / precheck.TIMESTAMPS).write_text(table)
    with pytest.raises(ValueError, match=match):
        precheck.trusted_timestamps(tmp_path)


def test_precheck_size_limit(tmp_path, release_nb):
    big = json.dumps(_nb([_graded("ex_a", False), _graded("test_a", True)])
                     | {"pad": "x" * 3000}).encode()
    folder = _folder(tmp_path, {"01_x.ipynb": big})
    found = precheck.check_folder(folder, "01_x", release_nb, max_bytes=1000)
    assert found[0].level == "rejected" and "over the" in found[0].message


# --------------------------------------------------------------------------- feedback


def test_strip_hidden_source_and_tracebacks():
    src = ("ck.check(1)\n### BEGIN HIDDEN TESTS\nsecret_check(42)\n### END HIDDEN TESTS\n"
           "print('after')")
    out = feedback.strip_hidden_source(src, "# hidden")
    assert "secret_check" not in out and "# hidden" in out and "print('after')" in out
    error = {"output_type": "error", "ename": "AssertionError",
             "evalue": "zero is not right (got 1.0)\nmore", "traceback": ["\x1b[0;31mlong"]}
    assert feedback.one_line_error(error) == ["AssertionError: zero is not right (got 1.0)"]


def test_preprocessor_keeps_hidden_tests_when_asked():
    import nbformat

    cell = nbformat.v4.new_code_cell("### BEGIN HIDDEN TESTS\nx\n### END HIDDEN TESTS\n")
    cell.metadata["nbgrader"] = {"grade": True}
    shown = feedback.StripHiddenTests(show_hidden_tests=True).preprocess_cell(
        nbformat.from_dict(dict(cell)), {}, 0)[0]
    assert "BEGIN HIDDEN TESTS" in shown.source
    hidden = feedback.StripHiddenTests().preprocess_cell(cell, {}, 0)[0]
    assert "BEGIN HIDDEN TESTS" not in hidden.source


# --------------------------------------------------------------------------- report


def test_report_table_and_csv_mark_errors():
    rows = [report.Row("ann", "01_x", "graded", 7.0, 10.0),
            report.Row("ben", "01_x", "error", None, 10.0, "kernel exited with code 3"),
            report.Row("cat", "01_x", "timeout", 4.0, 10.0, "cell ex_a exceeded 60 s")]
    table = report.to_table(rows)
    assert "7/10" in table and "ERROR" in table and "4/10 TIMEOUT" in table
    assert "kernel exited with code 3" in table
    csv_text = report.to_csv(rows)
    assert "ben,01_x,error,,10,kernel exited with code 3" in csv_text


def test_hidden_tests_revealed_after_the_deadline():
    from datetime import datetime, timezone

    strip = feedback.StripHiddenTests(show_after="2026-12-15T23:59:00+00:00")
    assert not strip.revealing(datetime(2026, 12, 1, tzinfo=timezone.utc))
    assert strip.revealing(datetime(2026, 12, 16, tzinfo=timezone.utc))
    assert not feedback.StripHiddenTests().revealing()
    with pytest.raises(ValueError, match="show_after='next week'"):
        feedback.StripHiddenTests(show_after="next week").revealing()


def test_pinned_outputs_merge_stream_chunks():
    from coursekit.grading.build import _clean_outputs

    chunks = [{"output_type": "stream", "name": "stdout", "text": "a\n"},
              {"output_type": "stream", "name": "stdout", "text": "b\n"},
              {"output_type": "stream", "name": "stderr", "text": "w\n"},
              {"output_type": "execute_result", "execution_count": 9, "data": {},
               "metadata": {}}]
    out = _clean_outputs(chunks, 4)
    assert [o.get("text") for o in out[:2]] == ["a\nb\n", "w\n"]
    assert out[2]["execution_count"] == 4 and len(out) == 3


def test_feedback_scrubs_hidden_code_echoed_by_a_student_cell():
    echoed = ("3 ### BEGIN HIDDEN TESTS\nfrom coursekit.grading.checks import record as _record_\n"
              "_record_('t', 'a', lambda: f(1.5e9), _forbid_)\n### END HIDDEN TESTS\nok\n")
    out = feedback.scrub_output_text(echoed, "[hidden]")
    assert "_record_" not in out and "1.5e9" not in out and out.endswith("ok\n")
    assert feedback.scrub_output_text("x = _record_('t', 'a', g)\nfine\n", "") == "fine\n"


# --------------------------------------------------------------------------- intake


def test_intake_accepts_only_regular_files(tmp_path):
    folder = tmp_path / "alice" / "01_x"
    folder.mkdir(parents=True)
    (folder / "01_x.ipynb").write_text("{}")
    (folder / "data").mkdir()
    (folder / "data" / "table.csv").write_text("a,b\n")
    assert precheck.intake_problem(folder) == ""
    (folder / "notes.txt").symlink_to("/etc/passwd")
    assert "symbolic link" in precheck.intake_problem(folder)
    (folder / "notes.txt").unlink()
    os.mkfifo(folder / "pipe")
    assert "FIFO" in precheck.intake_problem(folder)
    (folder / "pipe").unlink()
    assert "more than 1 files" in precheck.intake_problem(folder, max_files=1)
    assert "MiB" in precheck.intake_problem(folder, max_bytes=1)


@pytest.mark.parametrize("make,match", [
    (lambda f: (f / "01_x.ipynb").mkdir(), "is a folder"),
    (lambda f: os.mkfifo(f / "01_x.ipynb"), "FIFO"),
    (lambda f: (f / "01_x.ipynb").write_bytes(b"[" * 100_000 + b"]" * 100_000),
     "nested too deeply"),
])
def test_precheck_rejects_hostile_notebook_files_without_hanging(tmp_path, release_nb,
                                                                 make, match):
    folder = tmp_path / "bob" / "01_x"
    folder.mkdir(parents=True)
    make(folder)
    found = precheck.check_folder(folder, "01_x", release_nb)
    assert found[0].level == "rejected" and re.search(match, found[0].message), found


def test_precheck_rejects_malformed_metadata_alone(tmp_path, release_nb):
    folder = tmp_path / "carl" / "01_x"
    folder.mkdir(parents=True)
    cells = [_graded("ex_a", False), _graded("test_a", True),
             {"cell_type": "code", "metadata": ["a"], "source": "", "outputs": []},
             {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": ["x"]}},
              "source": "", "outputs": []}]
    (folder / "01_x.ipynb").write_text(json.dumps(_nb(cells)))
    found = precheck.check_folder(folder, "01_x", release_nb)
    assert [f.level for f in found] == ["rejected"]
    assert "2 cell(s) with malformed" in found[0].message


def test_grader_output_budget_covers_every_output_type():
    import nbformat

    from coursekit.grading import outputs

    nb = nbformat.v4.new_notebook()
    big = {"text/plain": "x" * 3_000_000}
    nb.cells = [nbformat.v4.new_code_cell("a", outputs=[
        nbformat.v4.new_output("display_data", data=big),
        nbformat.v4.new_output("execute_result", data={"text/plain": "ok"}, execution_count=1),
        nbformat.v4.new_output("error", ename="E", evalue="y" * 3_000_000, traceback=[])])]
    assert outputs.limit_outputs(nb, per_output=2**20, total=4 * 2**20) == 2
    kinds = [o.output_type for o in nb.cells[0].outputs]
    assert kinds == ["stream", "execute_result", "stream"]
    assert "removed by the grader" in nb.cells[0].outputs[0].text
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="z" * 900_000)
                           for _ in range(6)]
    assert outputs.limit_outputs(nb, per_output=2**20, total=2 * 2**20) == 4


def test_special_files_are_quarantined_unopened_before_nbgrader_copies(tmp_path):
    """Autograde.pre_convert_hook: plain nbgrader's copy would open a FIFO (hang) or follow
    a link to /dev/zero (fill the disk); the hook moves them out first, without opening."""
    folder = tmp_path / "submitted" / "mallory" / "01_x"
    (folder / "data").mkdir(parents=True)
    (folder / "01_x.ipynb").write_text("{}")
    (folder / "data" / "table.csv").write_text("a,b\n")
    (folder / "zero.bin").symlink_to("/dev/zero")
    (folder / "data" / "link").symlink_to("/etc/shadow")
    os.mkfifo(folder / "pipe")
    precheck.before_nbgrader_copy("01_x", "mallory", [str(folder / "01_x.ipynb")])
    left = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    assert left == ["01_x.ipynb", "data", "data/table.csv"]
    q = tmp_path / precheck.QUARANTINE / "mallory" / "01_x"
    assert os.path.islink(q / "zero.bin") and os.path.islink(q / "data" / "link")
    assert stat.S_ISFIFO(os.lstat(q / "pipe").st_mode)
    assert "zero.bin" in (q / "REASON.txt").read_text()
    assert "moved unopened" in precheck.intake_problem(folder)
    clean = tmp_path / "submitted" / "alice" / "01_x"
    clean.mkdir(parents=True)
    (clean / "01_x.ipynb").write_text("{}")
    assert precheck.quarantine_special_files(clean) == []
    assert precheck.intake_problem(clean) == ""
