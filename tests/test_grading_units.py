"""Unit tests of the grading glue: checks, authoring, pre-check, feedback, reports."""

import json
import math
import sys

import numpy as np
import pytest

from coursekit.grading import authoring, checks, feedback, precheck, report
from coursekit.training import memory


# --------------------------------------------------------------------------- checks


def test_check_close_accepts_plain_numbers():
    checks.check_close(84e9, 84e9)
    checks.check_close(np.float64(1.0) + 1e-9, 1.0, rel=1e-6)
    checks.check_close(np.array(3.0), 3.0)
    checks.check_exact(np.int64(7), 7)
    checks.check_exact([1, "a", True], [1, "a", True])


def test_always_equal_objects_are_rejected_by_type():
    class AlwaysEqual(float):
        def __eq__(self, other):
            return True

    class Weird:
        def __eq__(self, other):
            return True

    for bad in (AlwaysEqual(0.0), Weird(), "84e9", True, None, [84e9]):
        with pytest.raises(AssertionError):
            checks.check_close(bad, 84e9)
    with pytest.raises(AssertionError):
        checks.check_exact(Weird(), 7)
    with pytest.raises(AssertionError):
        checks.check_exact(AlwaysEqual(7.0), 7)


def test_hidden_messages_do_not_reveal_the_answer():
    with pytest.raises(AssertionError) as exc:
        checks.check_close(1.0, 123456.0, name="kv")
    assert "123456" not in str(exc.value) and "got 1.0" in str(exc.value)
    with pytest.raises(AssertionError) as exc:
        checks.check_close(1.0, 123456.0, name="kv", reveal=True)
    assert "123456" in str(exc.value)


@pytest.mark.parametrize("module,name", [(math, "isclose"), (np, "isclose"),
                                         (np, "allclose")])
def test_patched_comparators_are_detected(monkeypatch, module, name):
    monkeypatch.setattr(module, name, lambda *a, **k: True)
    with pytest.raises(checks.GradingIntegrityError, match=name):
        checks.check_close(1.0, 1.0)


def test_patched_builtins_are_detected(monkeypatch):
    import builtins

    monkeypatch.setattr(builtins, "abs", lambda x: 0)
    with pytest.raises(checks.GradingIntegrityError, match="builtins.abs"):
        checks.check_close(5.0, 1.0)


def test_call_forbids_the_reference_even_through_an_alias():
    from coursekit.training.memory import zero_bytes_per_gpu as alias

    def cheating(n):
        return alias(n, 8, 1).total

    def honest(n):
        return n * 2

    with pytest.raises(AssertionError, match="coursekit reference"):
        checks.call(cheating, 7e9, forbid=[memory.zero_bytes_per_gpu])
    assert checks.call(honest, 2, forbid=[memory.zero_bytes_per_gpu]) == 4
    # the reference works again afterwards
    assert memory.zero_bytes_per_gpu(7.5e9, 64, 0).total == 120e9
    assert not checks.reference_calls_blocked(cheating, 7e9, forbid=[memory.zero_bytes_per_gpu])


def test_call_hides_the_test_frame():
    def reader():
        frame = sys._getframe(1)
        found = []
        while frame is not None:
            found += [v for v in frame.f_locals.values() if v == 4242.0]
            frame = frame.f_back
        return found

    expected_answer = 4242.0  # noqa: F841 - what a frame-reading submission looks for
    assert reader() == [4242.0]  # a plain call exposes the caller's locals
    assert checks.call(reader) == []  # through checks.call it sees nothing


def test_call_reraises_student_errors_and_check_raises():
    def boom():
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        checks.call(boom)
    checks.check_raises(memory.zero_bytes_per_gpu, 1e9, 8, 4)
    with pytest.raises(AssertionError, match="did not raise"):
        checks.check_raises(lambda: 1)


def test_check_array_close():
    checks.check_array_close([1.0, 2.0], [1.0, 2.0])
    checks.check_array_close(np.array([1.0, 2.0]), [1.0, 2.0])
    with pytest.raises(AssertionError, match="element 1"):
        checks.check_array_close([1.0, 2.5], [1.0, 2.0])
    with pytest.raises(AssertionError, match="shape"):
        checks.check_array_close([1.0], [1.0, 2.0])


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
assert f(2) == 4
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
