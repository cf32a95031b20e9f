"""Tests for coursekit.grading.selfcheck: encoding, normalization, check(), display."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.grading import selfcheck as sc


def _q(kind, answer, **kw):
    kw.setdefault("prompt", "a question")
    return sc.make_question("t_" + kind, kind, answer, **kw)


# ----------------------------------------------------------------- encoding round trips
@settings(max_examples=50, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.text(min_size=1, max_size=8))
def test_number_encoding_round_trips(value, salt):
    token = sc.encode_number("q", salt, value)
    assert sc.decode_number("q", salt, token) == value
    assert repr(value) not in token or len(repr(value)) < 3


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=200))
def test_text_encoding_round_trips(text):
    assert sc.decode_text("q", "s", sc.encode_text("q", "s", text)) == text


def test_encodings_depend_on_id_and_salt():
    assert sc.encode_number("a", "s", 56e9) != sc.encode_number("b", "s", 56e9)
    assert sc.digest("a", "s1", "B") != sc.digest("a", "s2", "B")
    assert sc.default_salt("x") == sc.default_salt("x") != sc.default_salt("y")


# --------------------------------------------------------------------- normalization
@pytest.mark.parametrize("raw", ["B", "b", " b ", "(b)", "b)", "B.", "B:"])
def test_choice_normalization(raw):
    assert sc.normalize("choice", raw, "ABCD") == "B"


@pytest.mark.parametrize("raw", ["E", "AB", "", 2, None, True, "option B"])
def test_choice_rejects_unreadable(raw):
    with pytest.raises(ValueError, match="answer="):
        sc.normalize("choice", raw, "ABCD")


@pytest.mark.parametrize("raw,expected", [(True, True), (False, False), ("true", True),
                                          ("No", False), ("T", True)])
def test_bool_normalization(raw, expected):
    assert sc.normalize("bool", raw) is expected


@pytest.mark.parametrize("raw", [1, 0, "maybe", None])
def test_bool_rejects_non_bools(raw):
    with pytest.raises(ValueError):
        sc.normalize("bool", raw)


def test_label_normalization_ignores_case_spaces_and_separators():
    labels = ("compute-bound", "data-bound")
    for raw in ("data-bound", "Data Bound", "data_bound", " DATA-bound "):
        assert sc.normalize("label", raw, labels) == "data-bound"
    with pytest.raises(ValueError, match="labels"):
        sc.normalize("label", "io-bound", labels)


@pytest.mark.parametrize("raw", [[3, 1, 2], (3, 1, 2), "3,1,2", "3 1 2", "[3, 1, 2]", "312",
                                 ["3", "1", "2"]])
def test_order_normalization(raw):
    assert sc.normalize("order", raw) == [3, 1, 2]


@pytest.mark.parametrize("raw", [[], [True, 1], [1.5, 2], "abc", None, 312])
def test_order_rejects(raw):
    with pytest.raises(ValueError):
        sc.normalize("order", raw)


def test_number_normalization():
    assert sc.normalize("number", "56e9") == 56e9
    assert sc.normalize("number", "1,000") == 1000.0
    for bad in (True, "lots", float("nan"), float("inf"), None, [1]):
        with pytest.raises(ValueError):
            sc.normalize("number", bad)


def test_unknown_kind_is_rejected():
    with pytest.raises(ValueError, match="kind='essay'"):
        sc.normalize("essay", "x")
    with pytest.raises(ValueError, match="kind="):
        sc.make_question("q", "essay", "x", prompt="p")


# ------------------------------------------------------------------------- make_question
def test_make_question_validates():
    with pytest.raises(ValueError, match="qid"):
        sc.make_question("bad id!", "bool", True, prompt="p")
    with pytest.raises(ValueError, match="tolerance"):
        sc.make_question("q", "number", 1.0, prompt="p", rel=0, abs_tol=0)
    with pytest.raises(ValueError, match="rel="):
        sc.make_question("q", "number", 1.0, prompt="p", rel=-1)
    with pytest.raises(ValueError, match="options"):
        sc.make_question("q", "label", "a", prompt="p", options=("a",))
    with pytest.raises(ValueError, match="reveal_after"):
        sc.make_question("q", "bool", True, prompt="p", reveal_after=0)
    with pytest.raises(ValueError, match="not a choice"):
        sc.make_question("q", "choice", "E", prompt="p")


def test_question_does_not_store_plain_answer_or_explanation():
    q = _q("number", 123456.789, explanation="because 123456.789")
    blob = repr(q.to_dict())
    assert "123456" not in blob and "because" not in blob
    assert q.explanation_text() == "because 123456.789"


def test_token_round_trip_and_damage():
    q = _q("label", "data-bound", options=("compute-bound", "data-bound"))
    token = q.to_token()
    assert token.startswith(sc.TOKEN_PREFIX) and "data-bound" not in token
    assert sc.get_question(token) == q
    assert sc.check(token, "Data Bound").correct is True
    with pytest.raises(ValueError, match="damaged"):
        sc.get_question(sc.TOKEN_PREFIX + "%%%")


# ------------------------------------------------------------------------------ check()
def test_choice_check_accepts_right_and_rejects_wrong():
    q = _q("choice", "C", hints=("h1", "h2"), explanation="why C")
    right = sc.check(q, "c")
    assert right.correct is True and right.valid and right.explanation == "why C"
    for letter in "ABD":
        r = sc.check(q, letter)
        assert r.correct is False and r.valid and r.explanation is None and r.hint == "h1"


def test_hints_advance_and_explanation_revealed_after_n_attempts():
    q = _q("bool", False, hints=("first", "second"), explanation="model", reveal_after=3)
    r1, r2, r3, r4 = (sc.check(q, True, attempt=a) for a in (1, 2, 3, 4))
    assert (r1.hint, r2.hint, r3.hint, r4.hint) == ("first", "second", "second", "second")
    assert r1.explanation is None and r2.explanation is None
    assert r3.explanation == "model" and r3.revealed
    assert "Try again" in r1.message and "Try again" not in r3.message


def test_invalid_answer_is_not_graded_and_says_the_format():
    q = _q("choice", "A")
    r = sc.check(q, "E")
    assert r.valid is False and r.correct is None and "one letter" in r.message
    assert sc.is_correct(q, "E") is False


def test_number_tolerance_is_explicit():
    q = _q("number", 100.0, rel=1e-2)
    assert sc.check(q, 100.99).correct and sc.check(q, 99.01).correct
    assert not sc.check(q, 101.01).correct and not sc.check(q, -100).correct
    q_abs = _q("number", 0.0, rel=0.0, abs_tol=0.5)
    assert sc.check(q_abs, 0.4).correct and not sc.check(q_abs, 0.6).correct


@settings(max_examples=50, deadline=None)
@given(st.floats(min_value=-1e15, max_value=1e15).filter(lambda v: abs(v) > 1e-12),
       st.floats(min_value=1e-9, max_value=0.1))
def test_number_check_matches_tolerance_rule(value, rel):
    q = _q("number", value, rel=rel)
    assert sc.check(q, value).correct
    assert sc.check(q, value * (1 + rel * 0.5)).correct
    assert not sc.check(q, value * (1 + rel * 2)).correct


@settings(max_examples=50, deadline=None)
@given(st.permutations([1, 2, 3, 4]))
def test_order_check_accepts_only_the_key(perm):
    q = _q("order", [2, 4, 1, 3])
    assert sc.check(q, list(perm)).correct is (list(perm) == [2, 4, 1, 3])


def test_reflection_reveals_model_answer_after_an_attempt():
    q = sc.make_question("r1", "reflection", None, prompt="Why?", explanation="Because.")
    short = sc.check(q, "dunno")
    assert short.valid is False and short.explanation is None
    r = sc.check(q, "Because the data term is not hidden by compute here.")
    assert r.valid and r.correct is None and r.explanation == "Because."


def test_check_rejects_bad_attempt_and_question():
    q = _q("bool", True)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="attempt="):
            sc.check(q, True, attempt=bad)
    with pytest.raises(TypeError, match="question must be"):
        sc.check(42, True)
    with pytest.raises(ValueError, match="not a known self-check id"):
        sc.check("sc1_q99", "A")


# ------------------------------------------------------------------------ format checks
def test_format_problem_demands_the_graded_form():
    q = _q("choice", "B", variable="x")
    assert sc.format_problem(q, "B") is None
    assert "still None" in sc.format_problem(q, None)
    assert "exactly as 'D'" in sc.format_problem(q, "d")   # echoes the student's own letter
    assert "cannot be read" in sc.format_problem(q, "E")
    qn = _q("number", 5.0)
    assert sc.format_problem(qn, 5) is None
    assert "not a string" in sc.format_problem(qn, "5")
    qo = _q("order", [1, 2])
    assert sc.format_problem(qo, [2, 1]) is None and sc.format_problem(qo, (2, 1))
    qb = _q("bool", True)
    assert sc.format_problem(qb, False) is None and sc.format_problem(qb, "false")
    with pytest.raises(AssertionError, match="still None"):
        sc.require_format(qb, None)


# ---------------------------------------------------------------------- purity, display
def test_library_functions_do_not_print(capsys):
    q = _q("choice", "A", explanation="e")
    sc.check(q, "A"), sc.check(q, "B"), sc.feedback({"sc1_q1": "A", "sc1_q2": None})
    sc.render(sc.check(q, "A")), sc.format_problem(q, "B"), sc.questions()
    assert capsys.readouterr().out == ""


def test_display_helpers_print_results(capsys):
    q = _q("choice", "A", hints=("look again",), explanation="e")
    r = sc.show(q, "B")
    assert r.correct is False
    out = capsys.readouterr().out
    assert "Not quite" in out and "look again" in out
    results = sc.show_all({"sc1_q1": None, "sc1_q4": True}, explain=True)
    out = capsys.readouterr().out
    assert "sc1_q1: not answered yet" in out and len(results) == 2


def test_feedback_never_raises_on_unanswered():
    results = sc.feedback({"sc2_q4": None, "sc2_q2": "lots"})
    assert [r.valid for r in results] == [False, False]


def test_widget_builds_headless_for_every_kind():
    pytest.importorskip("ipywidgets")
    kinds = {"choice": "A", "bool": True, "label": "x", "order": [1, 2], "number": 3.0,
             "reflection": None}
    for kind, ans in kinds.items():
        q = sc.make_question("w_" + kind, kind, ans, prompt="<p>", options=("x", "y")
                             if kind == "label" else ())
        box = sc.widget(q)
        assert box is not None and len(box.children) == 4
        entry, button, out = box.children[1:]
        if kind == "number":
            entry.value = "3"
        elif kind == "reflection":
            entry.value = "a long enough answer with words"
        elif kind == "order":
            entry.value = "1,2"
        else:
            entry.value = ans
        button.click()
        assert "[w_" in out.value and "&lt;" not in box.children[0].value[:3]
        assert ("Correct" in out.value) or kind == "reflection"


def test_packaged_keys_load_and_are_complete():
    qs = sc.questions()
    assert len(qs) >= 50
    assert all(q.kind in sc.KINDS for q in qs.values())
    assert all(math.isfinite(q.rel) for q in qs.values())
    # every chapter self-check question (37) has a packaged item
    chapter = {k for k in qs if k.startswith("sc") and not k.endswith("_reflect")}
    base = {k.split("_")[0] + "_" + k.split("_")[1] for k in chapter}
    expected_counts = {1: 5, 2: 5, 3: 5, 4: 4, 5: 6, 6: 5, 7: 4, 8: 3}
    for n, count in expected_counts.items():
        assert len({b for b in base if b.startswith(f"sc{n}_")}) == count, n



def test_predict_prints_feedback_and_echoes_nothing(capsys):
    """A prediction cell's last line is `sc.predict(...)`: it prints the feedback and returns
    None, so the cell shows no `Result(...)` repr (issue #14, noise)."""
    q = sc.make_question("t_echo", "number", 42.0, prompt="How many?", rel=0.01)
    assert sc.predict(q, 41.0) is None
    assert sc.predict(q, None) is None
    assert capsys.readouterr().out.strip() != ""


@pytest.mark.parametrize("expected, unit, given, words", [
    (56e9, "bytes", 56.0, "1/10^9"),                  # issue #14: GB given, bytes asked
    (56e9, "bytes", 56e9 / 2**30, "2^30"),            # GiB given, bytes asked
    (0.4625, "fraction", 46.25, "percent"),           # issue #14: m5_util = 46.25
])
def test_unit_and_percent_slips_get_a_unit_hint(expected, unit, given, words):
    q = sc.make_question("t_units", "number", expected, prompt="How much?", rel=0.01,
                         unit=unit, hints=("Add the four terms.",))
    r = sc.check(q, given)
    assert r.correct is False and words in r.hint and unit in r.hint, r.hint


def test_no_unit_hint_for_a_plain_miss_or_a_magnitude_guess():
    q = sc.make_question("t_units2", "number", 56e9, prompt="Bytes?", rel=0.01, unit="bytes",
                         hints=("Add the four terms.",))
    assert sc.check(q, 60e9).hint == "Add the four terms."
    guess = sc.make_question("t_units3", "number", 1e23, prompt="FLOPs?", rel=0.95,
                             hints=("Use 6ND.",))
    assert sc.check(guess, 1e25).hint == "Use 6ND."
