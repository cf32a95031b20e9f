"""Unit tests of trusted grading: visible checks, records, cases, template, static analysis
and verdicts (DESIGN.md §4 items 1 and 2)."""

import math
import sys

import nbformat
import numpy as np
import pytest

from coursekit.grading import cases, checks, static, template, verdicts

# ------------------------------------------------------------------- visible checks


def test_visible_checks_name_expected_got_and_unit():
    checks.check_close(84e9, 84e9)
    checks.check_close(np.float64(1.0) + 1e-9, 1.0)
    checks.check_exact(np.int64(7), 7)
    checks.check_exact([1, "a", True], [1, "a", True])
    with pytest.raises(checks.CheckFailed) as exc:
        checks.check_close(83e9, 84e9, name="static_memory_bytes(7e9)", unit="bytes")
    assert str(exc.value) == ("static_memory_bytes(7e9): expected 8.4e+10 bytes (relative "
                              "tolerance 1e-06), got 8.3e+10 bytes")


@pytest.mark.parametrize("got,message", [
    (None, "got None: did you forget `return`?"),
    ([1, 2], "expected a number, got [1, 2]"),
    ("84e9", "expected a number, got '84e9'"),
    (True, "expected a number, got True"),
    (float("nan"), "expected a finite number"),
])
def test_visible_checks_describe_odd_values_readably(got, message):
    with pytest.raises(checks.CheckFailed, match=None) as exc:
        checks.check_close(got, 1.0, name="x")
    assert message in str(exc.value) and "object at 0x" not in str(exc.value)


def test_a_stub_fails_with_one_line_and_no_traceback():
    def weights_bytes(n):
        raise NotImplementedError()

    with pytest.raises(checks.NotImplementedYet) as exc:
        checks.call(weights_bytes, 1)
    assert "weights_bytes is not implemented yet" in str(exc.value)
    assert exc.value.__cause__ is None and exc.value.__suppress_context__
    lines = exc.value._render_traceback_()  # what IPython shows instead of a traceback
    assert len(lines) == 1 and "not implemented yet" in lines[0]


def test_call_runs_in_the_callers_thread():
    import threading

    assert checks.call(lambda: threading.current_thread()) is threading.current_thread()


def test_check_raises():
    def f(x):
        if x < 0:
            raise ValueError("x")
        return x

    checks.check_raises(f, -1)
    with pytest.raises(checks.CheckFailed, match="did not raise ValueError"):
        checks.check_raises(f, 1)
    with pytest.raises(checks.CheckFailed, match="raised ZeroDivisionError, expected"):
        checks.check_raises(lambda: 1 / 0)


# ------------------------------------------------------------------------- records


def test_plain_keeps_types_and_bounds_size():
    assert checks.plain(7) == 7 and type(checks.plain(np.int64(7))) is int
    assert type(checks.plain(7.0)) is float and checks.plain(np.float32(0.5)) == 0.5
    assert checks.plain((1, [2.0, "a"], None, True)) == [1, [2.0, "a"], None, True]
    assert checks.plain(np.arange(3)) == [0, 1, 2]
    assert checks.plain(float("nan")) == {"$float": "nan"}
    assert checks.plain({"a": 1, 2: 3}) == {"$dict": [["a", 1], [2, 3]]}
    assert checks.plain(object()) == {"$object": "object"}
    deep = []
    for _ in range(20):
        deep = [deep]
    assert "too deep" in str(checks.plain(deep))


def test_record_emits_plain_data_and_trips_on_the_reference(monkeypatch):
    from coursekit.training import memory

    sent = []
    monkeypatch.setattr(checks, "_emit", sent.append)
    checks.record("t", "ok", lambda: 2 * 3)
    checks.record("t", "bad", lambda: int("x"))
    forbid = ("coursekit.training.memory.zero_bytes_per_gpu",)
    checks.record("t", "cheat", lambda: memory.zero_bytes_per_gpu(7e9, 8, 1).total, forbid)
    assert sent[0] == {"cell": "t", "case": "ok", "outcome": "value", "value": 6}
    assert sent[1]["outcome"] == "raised" and sent[1]["exception"][0] == "ValueError"
    assert sent[2]["delegated"]
    assert memory.zero_bytes_per_gpu(7.5e9, 64, 0).total == 120e9  # restored afterwards


def test_record_notices_a_fresh_copy_of_the_reference_module(monkeypatch):
    import importlib.util

    from coursekit.training import memory

    spec = importlib.util.spec_from_file_location("coursekit.training._fresh_memory", memory.__file__)
    fresh = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, fresh)
    spec.loader.exec_module(fresh)
    sent = []
    monkeypatch.setattr(checks, "_emit", sent.append)
    checks.record("t", "c", lambda: fresh.zero_bytes_per_gpu(7e9, 8, 1).total,
                  ("coursekit.training.memory.zero_bytes_per_gpu",))
    assert sent[0]["delegated"] == ["zero_bytes_per_gpu"]


# --------------------------------------------------------------------------- cases

REGION = '''ck.forbid(ref.zero_bytes_per_gpu)
_x = 2
# a comment with the answer 24e9 stays in the authoring file
ck.case("a", lambda: f(1.5e9), expect=ck.approx(24e9, rel=1e-3), name="f(1.5e9)")
ck.case("b", lambda: f(-1), expect=ck.raises(ValueError), weight=2)
ck.case("c", lambda: g(_x), expect=ck.exactly([1, 2**-14]))
ck.case("d", lambda: plan, expect=ck.satisfies(lambda p: p["tp"] <= 8))
'''


def test_split_hidden_keeps_expectations_out_of_the_kernel_code():
    code, found = cases.split_hidden(REGION, "test_x",
                                     {"ref": "coursekit.training.memory"})
    assert "24e9" not in code and "2e10" not in code and "24000000000" not in code
    assert "comment" not in code and "ValueError" not in code and "<= 8" not in code
    assert "_record_('test_x', 'a', lambda: f(1500000000.0), _forbid_)" in code
    assert "_forbid_ = ('coursekit.training.memory.zero_bytes_per_gpu',)" in code
    assert [c["id"] for c in found] == ["a", "b", "c", "d"]
    assert found[0]["expect"] == {"kind": "approx", "value": 24e9, "rel": 1e-3, "abs": 0.0}
    assert found[1]["expect"] == {"kind": "raises", "exception": "ValueError"}
    assert found[1]["weight"] == 2
    assert found[2]["expect"]["value"] == [1, 2**-14]
    assert found[3]["expect"]["source"] == "lambda p: p['tp'] <= 8"


# ------------------------------------------------------------------------ template


def _cell(kind, source, gid=None, cid=None, **nbg):
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    cell = make(source, id=cid or gid or "c")
    if gid:
        cell.metadata["nbgrader"] = {"grade_id": gid, "schema_version": 3, "grade": False,
                                     "solution": False, "locked": True, **nbg}
    return cell


@pytest.fixture
def source_and_release():
    src = nbformat.v4.new_notebook()
    src.cells = [_cell("markdown", "intro", cid="intro"),
                 _cell("code", "import x", gid="setup"),
                 _cell("code", "def f():\n    return 1  # solution", gid="ex_f",
                       solution=True, locked=False),
                 _cell("code", "### BEGIN HIDDEN TESTS\nrecord()\n### END HIDDEN TESTS",
                       gid="test_f", grade=True, points=2)]
    src.cells[3].metadata["tags"] = ["raises-exception"]
    stubs = {"ex_f": "def f():\n    raise NotImplementedError()"}
    return src, stubs


def test_template_takes_answer_text_and_added_cells_only(source_and_release):
    src, stubs = source_and_release
    sub = nbformat.v4.new_notebook()
    sub.metadata["kernelspec"] = {"name": "evil"}
    sub.cells = [_cell("code", "import x; EVIL", gid="setup"),
                 _cell("code", "def f():\n    return 2", gid="ex_f", solution=True),
                 _cell("code", "helper = 3", cid="mine"),
                 _cell("code", "print('edited test')", gid="test_f", grade=True,
                       points=200)]
    sub.cells[3].metadata["tags"] = ["skip-execution"]
    sub.cells[1].metadata["nbgrader"]["grade"] = True
    merged, summary = template.merge(src, stubs, sub)
    sources = [c.source for c in merged.cells]
    assert sources == ["intro", "import x", "def f():\n    return 2", "helper = 3",
                       src.cells[3].source]
    assert merged.cells[3].metadata == {"coursekit": {"added": True}}
    assert merged.cells[4].metadata["tags"] == ["raises-exception"]
    assert merged.cells[4].metadata["nbgrader"]["points"] == 2
    assert merged.cells[2].metadata["nbgrader"]["grade"] is False
    assert "kernelspec" not in merged.metadata or merged.metadata["kernelspec"] != {
        "name": "evil"}
    assert summary["answers"] == ["ex_f"] and summary["added_cells"] == 1


def test_template_never_runs_the_solution(source_and_release):
    src, stubs = source_and_release
    empty = nbformat.v4.new_notebook()
    merged, summary = template.merge(src, stubs, empty)
    assert "NotImplementedError" in merged.cells[2].source
    assert "solution" not in merged.cells[2].source
    assert summary["stubbed"] == ["ex_f"]
    odd = {"cells": [{"cell_type": "code", "id": "ex_f", "source": {"not": "text"},
                      "metadata": []}, "junk", {"cell_type": "raw", "source": "x"}]}
    merged, summary = template.merge(src, stubs, odd)
    assert summary["unreadable"] == ["ex_f"] and "NotImplementedError" in merged.cells[2].source


def test_template_matches_an_answer_by_cell_id_when_metadata_is_gone(source_and_release):
    src, stubs = source_and_release
    sub = nbformat.v4.new_notebook()
    sub.cells = [nbformat.v4.new_code_cell("def f():\n    return 5", id="ex_f")]
    merged, _ = template.merge(src, stubs, sub)
    assert merged.cells[2].source == "def f():\n    return 5"


# ------------------------------------------------------------------ static analysis

FORBID = {"zero_bytes_per_gpu", "kv_cache_bytes"}


@pytest.mark.parametrize("code", [
    "from coursekit.training.memory import zero_bytes_per_gpu as z\ndef f(n): return z(n)",
    "import coursekit.training.memory as m\ndef f(n): return m.zero_bytes_per_gpu(n)",
    "import importlib\nm = importlib.import_module('coursekit.training.memory')\n"
    "f = m.zero_bytes_per_gpu",
    "def f(n): return getattr(ref_memory, 'zero_bytes_per_gpu')(n)",
    "exec(open(path).read())\ndef f(n): return zero_bytes_per_gpu(n)",
])
def test_static_analysis_finds_delegation(code):
    assert static.analyze([code], FORBID).references == {"zero_bytes_per_gpu"}


def test_static_analysis_allows_a_function_of_the_same_name():
    code = "def kv_cache_bytes(l, h, d, s):\n    return 2 * l * h * d * s * 2"
    found = static.analyze([code, "%matplotlib inline\nx = kv_cache_bytes(1, 2, 3, 4)"], FORBID)
    assert found.references == frozenset() and found.dynamic == ()


@pytest.mark.parametrize("code,flag", [
    ("exec('x=1')", "exec()"), ("import importlib", "importlib"),
    ("get_ipython().events.register('pre_run_cell', f)", ".events"),
    ("get_ipython().ast_transformers.append(t)", ".ast_transformers"),
    ("import sys\nsys._getframe(1)", "._getframe"), ("getattr(m, 'zero_' + s)", "computed"),
    ("get_ipython().displayhook('x')", ".displayhook"), ("x = In[-1]\n__import__('os')",
                                                          "__import__"),
])
def test_static_analysis_flags_dynamic_code(code, flag):
    assert any(flag in d for d in static.analyze([code], FORBID).dynamic)


# ------------------------------------------------------------------------ verdicts

SPEC = {"points": 3, "cases": [
    {"id": "a", "name": "A", "weight": 1, "forbid": [],
     "expect": {"kind": "approx", "value": 24e9, "rel": 1e-6, "abs": 0.0}},
    {"id": "b", "name": "B", "weight": 1, "forbid": [],
     "expect": {"kind": "exactly", "value": 7}},
    {"id": "c", "name": "C", "weight": 1, "forbid": [],
     "expect": {"kind": "raises", "exception": "ValueError"}}]}


def _rec(case, value=None, cell="t", **kw):
    data = {"cell": cell, "case": case, "outcome": "value", "value": value}
    data.update(kw)
    return data


def test_per_case_points_and_partial_credit():
    recs = {"t": [_rec("a", 24e9), _rec("b", 7.0),
                  {"cell": "t", "case": "c", "outcome": "raised",
                   "exception": ["ValueError", "Exception"]}]}
    got = verdicts.judge_cell("t", SPEC, recs)
    assert [v.status for v in got] == ["pass", "wrong", "pass"]  # 7.0 is not the int 7
    assert verdicts.cell_score(SPEC, got) == 2.0
    assert got[1].detail == "got 7.0" and "7" not in got[1].name


def test_missing_duplicated_malformed_and_misplaced_records_score_zero():
    recs = {"t": [_rec("a", 24e9), _rec("a", 24e9), {"case": "b", "cell": "t"}],
            "other": [_rec("c", None)]}
    got = verdicts.judge_cell("t", SPEC, recs)
    assert [v.status for v in got] == ["duplicated", "malformed", "misplaced"]
    assert verdicts.cell_score(SPEC, got) == 0
    assert [v.status for v in verdicts.judge_cell("t", SPEC, {})] == ["missing"] * 3


def test_delegation_zeroes_the_cell():
    recs = {"t": [_rec("a", 24e9), _rec("b", 7), _rec("c", delegated=["tripwire"])]}
    got = verdicts.judge_cell("t", SPEC, recs, delegated=["zero_bytes_per_gpu"])
    assert {v.status for v in got} == {"delegated"}
    got = verdicts.judge_cell("t", SPEC, {"t": [_rec("a", 24e9, delegated=["x"])]})
    assert got[0].status == "delegated"


@pytest.mark.parametrize("value,ok", [
    (24e9, True), (24e9 * (1 + 2e-6), False), (24_000_000_000, True), (True, False),
    ("24e9", False), ({"$float": "nan"}, False), (None, False), ([24e9], False)])
def test_approx_accepts_only_plain_numbers(value, ok):
    assert verdicts.compare(SPEC["cases"][0]["expect"], _rec("a", value)) is ok


def test_satisfies_predicates_run_on_plain_data_only():
    expect = {"kind": "satisfies", "source": "lambda p: p['tp'] * p['pp'] == 64"}
    assert verdicts.compare(expect, _rec("x", {"tp": 8, "pp": 8}))
    assert not verdicts.compare(expect, _rec("x", {"tp": 8}))  # KeyError: wrong, not a crash
    assert not verdicts.compare(expect, _rec("x", [1]))
    with pytest.raises(NameError):  # predicates get no builtins beyond a short list
        verdicts._safe_predicate("lambda v: __import__('os')")(0)


def test_summary_never_shows_expected_values():
    recs = {"t": [_rec("a", 1.0), _rec("b", 8)]}
    got = verdicts.judge_cell("t", SPEC, recs)
    text = verdicts.summary_text(got, verdicts.cell_score(SPEC, got), 3)
    assert "24" not in text and "7" not in text and "got 1.0" in text
    assert text.splitlines()[0] == "Autograder: 0 / 3 points"
    assert math.isclose(sum(v.points for v in got), 3, abs_tol=1e-3)


def test_reach_follows_calls_between_cells_not_shared_argument_names():
    item = [("def min_gpus(n, recipe):\n    return zero(n, recipe)", False)]
    others = [("def zero(n, recipe):\n    return ref.zero_bytes_per_gpu(n)", False),
              ("def static(n, recipe):\n    return n * recipe", False),
              ("helper = 1", True)]
    got = static.reach(item, others)
    assert others[0][0] in got and "helper = 1" in got and others[1][0] not in got
    # an item using only its own arguments does not pull in a cell that shares their names
    assert static.reach([("def static(n, recipe):\n    return n * recipe", False)],
                        others[:1]) == ["def static(n, recipe):\n    return n * recipe"]
