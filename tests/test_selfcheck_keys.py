"""Consistency of the packaged self-check keys, the assignment 07 notebook and the
release: every key accepts its answer and rejects the others; no answer is shipped in
plain text; the reference numbers are recomputed here from their formulas."""

import importlib.util
import itertools
import json
import math
import re
from pathlib import Path

import nbformat
import pytest

from coursekit.grading import selfcheck as sc
from coursekit.grading.authoring import parse, read_py, total_points

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "07_self_checks.py"
RELEASE = ROOT / "release" / "07_self_checks" / "07_self_checks.ipynb"
KEYS = ROOT / "coursekit" / "data" / "selfcheck_keys.json"


def _load_builder():
    spec = importlib.util.spec_from_file_location("build_selfcheck_keys",
                                                  ROOT / "tools" / "build_selfcheck_keys.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BUILD = _load_builder()
ITEMS = [it for _, it in BUILD.all_items(graded_only=False)]
GRADED = [it for _, it in BUILD.all_items()]
IDS = [it["qid"] for it in ITEMS]


def test_outputs_are_up_to_date():
    assert BUILD.main(["--check"]) == 0, "run: .venv/bin/python tools/build_selfcheck_keys.py"


def test_keys_file_has_source_and_every_item():
    data = json.loads(KEYS.read_text(encoding="utf-8"))
    assert "chapter 002" in data["source"] and data["format"] == 1
    assert set(IDS) <= set(data["questions"])


# ------------------------------------------------------------------ key consistency
def _wrong_answers(it):
    kind, a = it["kind"], it["answer"]
    if kind == "choice":
        return [x for x in "ABCD" if x != a]
    if kind == "bool":
        return [not a]
    if kind == "label":
        return [x for x in it["labels"] if x != a]
    if kind == "order":
        return [list(p) for p in itertools.permutations(a) if list(p) != a]
    if it.get("integer"):
        return [a - 1, a + 1, 0]
    return [a * (1 + 5 * it["rel"]), a * (1 - 5 * it["rel"]), -a, 0.0, a * 2]


PRACTICE = [it for it in ITEMS if it["qid"] in BUILD.UNGRADED | BUILD.COMPLETION]
GRADED_IDS = [it["qid"] for it in GRADED if it["qid"] not in BUILD.COMPLETION]


@pytest.mark.parametrize("qid", [it["qid"] for it in PRACTICE])
def test_practice_key_accepts_the_answer_and_rejects_the_others(qid):
    it = next(i for i in ITEMS if i["qid"] == qid)
    result = sc.check(qid, it["answer"])
    assert result.correct is True, qid
    assert result.explanation and len(result.explanation) > 20
    for wrong in _wrong_answers(it):
        r = sc.check(qid, wrong)
        assert r.valid and r.correct is False, (qid, wrong)
        assert r.explanation is None and r.hint


@pytest.mark.parametrize("qid", GRADED_IDS)
def test_graded_items_have_no_local_oracle(qid):
    """DESIGN.md section 7: a graded item is packaged with its format only. Its answer and
    every wrong answer of the right form get the same reply, never "Correct."."""
    it = next(i for i in ITEMS if i["qid"] == qid)
    raw = json.loads(KEYS.read_text(encoding="utf-8"))["questions"][qid]
    assert raw["graded"] is True
    assert (raw["key"], raw["salt"], raw["hints"], raw["explanation"]) == ("", "", [], "")
    # no key that decodes to the answer, whatever salt a future edit might pick
    salt = sc.default_salt(qid)
    text = KEYS.read_text(encoding="utf-8")
    if it["kind"] == "number":
        assert sc.encode_number(qid, salt, it["answer"]) not in text
    else:
        canonical = sc._canonical_string(it["kind"], sc.normalize(
            it["kind"], it["answer"], it.get("labels") or "ABCD"))
        assert sc.digest(qid, salt, canonical) not in text
    right = sc.check(qid, it["answer"])
    assert right.valid and right.correct is None and "Format OK" in right.message
    assert "Correct" not in right.message and right.hint is None and right.explanation is None
    for wrong in _wrong_answers(it):
        if sc.format_problem(qid, wrong) is None:
            assert sc.check(qid, wrong) == right, (qid, wrong)
    assert sc.format_problem(qid, it["answer"]) is None  # the graded form passes the visible test


@pytest.mark.parametrize("qid,answer,says", [
    # issue 14: these were marked "Correct." and then failed check_exact(..., 5) on type
    ("l1_min_gpus", 5.0, "whole number: write 5"),
    ("l1_min_gpus", 4.5, "whole number"),
    ("m2_allreduces", 96.0, "whole number: write 96"),
    # a percent where a fraction is asked, GB where bytes are, ms where seconds are
    ("m5_util", 46.25, "percent; the question asks for a fraction: write 0.4625"),
    ("sc4_q1_mfu", 63.0, "percent"),
    ("sc2_q2", 56, "looks like GB; the question asks for bytes"),
    ("m1_bytes", 840, "looks like GB"),
    ("m4_flops", 1.04, "looks like TFLOPs"),
    ("sc6_q3", 17.5, "looks like ms; the question asks for s: divide by 10^3"),
])
def test_format_checks_catch_unit_slips_before_grading(qid, answer, says):
    problem = sc.format_problem(qid, answer)
    assert problem and says in problem, problem
    r = sc.check(qid, answer)
    assert not r.valid and r.correct is None and says in r.message
    with pytest.raises(AssertionError, match=re.escape(says)):
        sc.require_format(qid, answer)


@pytest.mark.parametrize("qid", GRADED_IDS)
def test_the_hidden_test_accepts_every_answer_the_format_check_passes(qid):
    """The form the format check asks for is the form the hidden case grades: an integer
    item's answer is an int (ck.exactly compares types), a number is inside its range."""
    it = next(i for i in ITEMS if i["qid"] == qid)
    q = sc.get_question(qid)
    if it["kind"] == "number":
        assert q.integer == bool(it.get("integer"))
        assert q.lo <= it["answer"] <= q.hi
        if it.get("integer"):
            assert sc.format_problem(qid, float(it["answer"])) is not None


@pytest.mark.parametrize("qid", IDS)
def test_hints_do_not_state_the_answer(qid):
    it = next(i for i in ITEMS if i["qid"] == qid)
    hints = " ".join(sc.get_question(qid).hints)
    if it["kind"] in ("label",):
        assert it["answer"] not in hints
    if it["kind"] == "number" and not it.get("integer"):
        for form in _number_forms(it["answer"]):
            assert form not in hints, (qid, form)


def test_reflections_reveal_model_answers():
    refl = [q for q in sc.questions().values() if q.kind == "reflection"]
    assert len(refl) >= 8
    for q in refl:
        assert sc.check(q, "one two three four five six").explanation == q.explanation_text()


# ------------------------------------------------------------ recomputed references
def test_numeric_references_are_recomputed():
    a = {it["qid"]: it["answer"] for it in ITEMS}
    assert a["sc1_q3"] == pytest.approx((30 + 45) / (15 + 45))           # 1.25
    assert a["sc2_q2"] == pytest.approx(2 * 4 * 7e9)                      # 56e9 B (002 key)
    tokenize = 32 * 1024 / 500_000                                        # 002 Example 1.1
    copy = 32 * 1024 * 8 / 15.75e9                                        # 262,144 B over PCIe3
    assert a["sc3_q3"] == pytest.approx(0.0844 / (tokenize + copy + 0.0844), rel=1e-4)
    assert a["sc4_q1_mfu"] == pytest.approx(6 * 1e9 * 524_288 / (8 * 312e12 * 2.0), rel=1e-5)
    assert a["sc5_q2"] == pytest.approx((20 + 30 + 5 + 50) / 50)
    assert a["sc5_q6"] == pytest.approx(84.4 / max(65.536, 84.4 * 0.62), rel=1e-5)
    assert a["sc6_q2_bubble"] == pytest.approx(1 - 3 / (16 + 3))
    assert a["sc6_q3"] == pytest.approx(2 * 7 / 8 * 3e9 / 300e9)          # ring all-reduce
    assert a["sc7_q3"] == pytest.approx(0.1 * 4096 / 512)
    assert a["sc8_q2"] == pytest.approx(2 / (2 + 4))
    assert 30e9 * 12 > 4 * 80e9 and a["l1_fits"] is False                # 360 GB > 320 GB
    assert a["l1_min_gpus"] == math.ceil(30e9 * 12 / 80e9) == 5
    assert a["l2_weights"] == pytest.approx(47e9 * 2)
    assert a["l2_flops"] == pytest.approx(2 * 13e9)
    assert a["m1_bytes"] == pytest.approx(70e9 * 12)                      # lesson: 840 GB
    assert a["m2_allreduces"] == 2 * 48
    assert a["m3_speedup"] == pytest.approx(1 / (5 * 0.2 + 1))
    # lesson 003 says ~530e9 FLOPs (600 GB/s, both directions); per direction it is 2x:
    assert a["m4_flops"] == pytest.approx(312e12 * 1e9 / 300e9)
    lengths = [20, 45, 200, 15, 80, 150, 30, 200]
    assert a["m5_util"] == pytest.approx(sum(lengths) / (8 * max(lengths)))  # not 1 - 0.225
    m = next(m for m in range(1, 100) if 3 / (m + 3) < 0.1)
    assert a["lock2_microbatches"] == m == 28


def test_coursekit_agrees_with_the_lesson_numbers():
    from coursekit.hardware import get_accelerator, get_link
    from coursekit.training.memory import model_state_bytes, zero_bytes_per_gpu
    assert model_state_bytes(30e9, "mixed+adam-no-master").total == pytest.approx(360e9)
    assert model_state_bytes(70e9, "mixed+adam-no-master").total == pytest.approx(840e9)
    assert zero_bytes_per_gpu(70e9, 8, 1, "mixed+adam-no-master").total == pytest.approx(350e9)
    assert get_link("NVLink-A100").bandwidth == pytest.approx(300e9)
    assert get_accelerator("A100-80GB").peak("bf16") == pytest.approx(312e12)


# ----------------------------------------------------------------------- the notebook
def test_notebook_points_and_cells():
    text = read_py(NOTEBOOK)
    cells = parse(text)
    assert 40 <= total_points(text) <= 50
    tests = {c.grade_id: c for c in cells if c.kind == "test"}
    for it in GRADED:
        cell = tests[f"test_{it['qid']}"]
        hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1]
        assert it["var"] in hidden and "#" in hidden  # literal answer with its source comment
        if it["qid"] in BUILD.COMPLETION:  # prediction locks: graded on completion
            assert "ck.satisfies(lambda value: " in hidden
        else:
            assert "ck.approx(" in hidden or "ck.exactly(" in hidden
        assert "==" not in hidden
    answers = [c for c in cells if c.kind == "answer"]
    assert 0 < sum(c.partial for c in answers) < len(answers)


def _number_forms(v):
    forms = {repr(float(v)), f"{v:g}", f"{v:.4g}", f"{v:.5g}"}
    if abs(v) >= 1e6:
        for scale, unit in ((1e9, "GB"), (1e9, "e9"), (1e12, "e12")):
            forms.add(f"{v / scale:g}{unit}" if unit.startswith("e") else f"{v / scale:g} {unit}")
    return {f for f in forms if len(f) >= 3}


# numbers that legitimately appear in the prompts as givens (not answers)
GIVEN_FORMS: set = set()  # numbers that may appear as givens; none so far


def leaks(text: str) -> list:
    """Answer literals, answer-key phrases and explanations found in ``text``."""
    found = []
    for it in ITEMS:
        var = re.escape(it["var"])
        if it["kind"] in ("choice", "label"):
            lit = r"""["']\s*""" + re.escape(it["answer"]) + r"""\s*["']"""
        elif it["kind"] == "order":
            lit = r"\[\s*" + r"\s*,\s*".join(map(str, it["answer"])) + r"\s*\]"
        elif it["kind"] == "bool":
            lit = str(it["answer"])
        else:
            lit = "|".join(re.escape(f) for f in _number_forms(it["answer"]) | {str(it["answer"])})
        if re.search(rf"\b{var}\s*=\s*(?:{lit})", text):
            found.append(f"{it['var']} = answer")
        if it["kind"] == "number" and not it.get("integer"):
            for form in _number_forms(it["answer"]) - GIVEN_FORMS:
                if re.search(rf"(?<![\w.]){re.escape(form)}(?![\w])", text):
                    found.append(f"{it['qid']}: {form}")
        expl = sc.get_question(it["qid"]).explanation_text()
        if expl and expl[:60] in text:
            found.append(f"{it['qid']}: explanation")
    for phrase in ("correct answer is", "### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS",
                   "ck.exactly(", "ck.approx("):
        if phrase.lower() in text.lower():
            found.append(phrase)
    return found


def _release_like_text() -> str:
    """What nbgrader ships: solution regions replaced by a stub, hidden tests removed."""
    text = read_py(NOTEBOOK)
    text = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION",
                  "# YOUR CODE HERE\nraise NotImplementedError()", text, flags=re.S)
    return re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", text, flags=re.S)


def test_leak_detector_finds_planted_answers():
    source = read_py(NOTEBOOK)
    found = leaks(source)
    assert "sc1_q1 = answer" in found and "sc2_q4 = answer" in found
    assert "sc4_q1_mfu = answer" in found and "ck.exactly(" in found


def test_release_like_notebook_has_no_answers():
    assert leaks(_release_like_text()) == []


def test_packaged_keys_hold_no_plain_answers():
    data = json.loads(KEYS.read_text(encoding="utf-8"))
    for qid, d in data["questions"].items():
        plain = " ".join(str(d[k]) for k in ("prompt", "hints", "option_texts", "unit",
                                             "section", "variable"))
        assert "correct answer" not in plain.lower()
        q = sc.get_question(qid)
        if q.explanation:
            assert q.explanation_text()[:40] not in KEYS.read_text(encoding="utf-8")
    texts = " ".join(" ".join(map(str, (d["prompt"], *d["hints"], *d["option_texts"],
                                        d["section"], d["source"])))
                     for d in data["questions"].values())
    for it in ITEMS:
        if it["kind"] == "number" and not it.get("integer"):
            for form in _number_forms(it["answer"]) - GIVEN_FORMS:
                assert not re.search(rf"(?<![\w.]){re.escape(form)}(?![\w])", texts), \
                    (it["qid"], form)


@pytest.mark.skipif(not RELEASE.exists(), reason="release/ not built yet (make build)")
def test_release_notebook_has_no_answers():
    nb = nbformat.read(RELEASE, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert leaks(text) == []
    assert leaks(outputs) == []


@pytest.mark.parametrize("qid", sorted(BUILD.COMPLETION))
def test_prediction_locks_are_graded_on_completion(qid):
    """Every answer in the asked form earns the lock's point (issue #15: grading a guess on
    correctness punishes honesty); a wrong prediction still gets instant feedback."""
    from coursekit.grading import verdicts

    it = next(i for i in ITEMS if i["qid"] == qid)
    cell = next(c for c in parse(read_py(NOTEBOOK)) if c.grade_id == f"test_{qid}")
    (case,) = cell.cases
    forms = [True, False] if it["kind"] == "bool" else list(it["labels"])
    for value in forms:
        assert verdicts.compare(case["expect"], {"outcome": "value", "value": value}), value
    for bad in (None, 1, "maybe"):
        assert not verdicts.compare(case["expect"], {"outcome": "value", "value": bad}), bad
    wrong = next(v for v in forms if v != it["answer"])
    assert sc.check(qid, wrong).correct is False and sc.check(qid, it["answer"]).correct


def test_multiple_choice_options_do_not_give_the_answer_away():
    """Issue #15: the correct option was the longest in 25 of 25 items. Now at most a
    quarter of the items (chance) has it strictly longest, and no option is more than 1.5x
    the length of another in the same item."""
    choice = [it for it in ITEMS if it["kind"] == "choice"]
    longest = 0
    for it in choice:
        lengths = [len(o) for o in it["options"]]
        right = lengths["ABCD".index(it["answer"])]
        longest += right == max(lengths) and lengths.count(right) == 1
        assert max(lengths) <= 1.5 * min(lengths), (it["qid"], lengths)
    assert len(choice) >= 20 and longest <= len(choice) // 4, longest
