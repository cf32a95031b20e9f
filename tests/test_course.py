"""The course round trip: build is up to date, source passes, release fails every graded
test, no leaks, and autograding the sample class gives the expected scores."""

import os
import re

import nbformat
import pytest

from coursekit.grading import authoring, build, pipeline
from coursekit.grading import report as reportmod

from .conftest import ROOT, copy_course

ASSIGNMENTS = build.assignments(ROOT)

# Expected autograde scores of the sample class. alice submits every solution (full marks),
# bob the answers tagged `partial` in notebooks/<id>.py (the points of those answers' tests),
# carol the untouched release notebook (0). Max = sum of the test cells' points.
EXPECTED = {
    "01_training_cost": {"max": 22, "alice": 22, "bob": 7, "carol": 0},
    "02_memory_calculator": {"max": 28, "alice": 28, "bob": 9, "carol": 0},
    "03_bottlenecks": {"max": 24, "alice": 24, "bob": 9, "carol": 0},
    "04_parallelism_advisor": {"max": 27, "alice": 27, "bob": 11, "carol": 0},
    "05_speculative_decoding": {"max": 20, "alice": 20, "bob": 9, "carol": 0},
    "06_continuous_batching": {"max": 21, "alice": 21, "bob": 9, "carol": 0},
    "07_self_checks": {"max": 49, "alice": 49, "bob": 26, "carol": 0},
    "08_reality_check": {"max": 13, "alice": 13, "bob": 4, "carol": 0},
}


def test_every_assignment_has_expected_scores():
    assert sorted(EXPECTED) == ASSIGNMENTS


def test_generated_files_are_up_to_date():
    assert build.check_up_to_date(ROOT, log=lambda *_: None) == []


def test_release_has_no_solution_or_hidden_tests():
    assert build.release_leaks(ROOT) == []
    for path in (ROOT / "release").rglob("*.ipynb"):
        text = path.read_text()
        for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            assert marker not in text, f"{path}: {marker}"


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_points_match_expected_max(aid):
    text = authoring.read_py(ROOT / "notebooks" / f"{aid}.py")
    assert authoring.total_points(text) == EXPECTED[aid]["max"]


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """The sample class graded once in a scratch course."""
    root = copy_course(tmp_path_factory.mktemp("graded") / "course")
    old = os.environ.get("COURSEKIT_GRADEBOOK")
    os.environ["COURSEKIT_GRADEBOOK"] = str(root / "gradebook.db")
    try:
        pipeline.collect_samples(root)
        outcomes = pipeline.grade(root)
        feedback = pipeline.feedback(root)
        rows, paths = pipeline.report(root, outcomes)
        yield root, outcomes, feedback, rows, paths
    finally:
        if old is None:
            os.environ.pop("COURSEKIT_GRADEBOOK", None)
        else:
            os.environ["COURSEKIT_GRADEBOOK"] = old


def test_sample_class_scores(graded_class):
    _, outcomes, _, rows, _ = graded_class
    assert all(o["status"] == "graded" for o in outcomes.values()), outcomes
    got = {(r.student, r.assignment): (r.score, r.max_score) for r in rows}
    for aid, exp in EXPECTED.items():
        for student in ("alice", "bob", "carol"):
            assert got[(student, aid)] == (exp[student], exp["max"]), (student, aid)


def _verdicts(root, student, aid):
    nb = nbformat.read(root / "autograded" / student / aid / f"{aid}.ipynb", as_version=4)
    return nb.metadata["coursekit"]["verdicts"]


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_every_case_passes_on_the_solution_and_fails_on_the_release(graded_class, aid):
    root = graded_class[0]
    full, empty = _verdicts(root, "alice", aid), _verdicts(root, "carol", aid)
    key = authoring.answer_key(authoring.read_py(ROOT / "notebooks" / f"{aid}.py"))
    assert set(full) == set(empty) == set(key)
    for gid in key:
        assert [v["status"] for v in full[gid]["verdicts"]] == ["pass"] * len(key[gid]["cases"])
        assert [v["status"] for v in empty[gid]["verdicts"]] != ["pass"] * len(
            key[gid]["cases"]), f"{aid}/{gid}: the release stub passes"
        assert empty[gid]["score"] == 0, f"{aid}/{gid}: the release stub earns points"


def test_report_files(graded_class):
    _, _, _, rows, paths = graded_class
    csv_text = paths["csv"].read_text()
    assert csv_text.splitlines()[0] == "student,assignment,status,score,max_score,reason"
    assert len(csv_text.splitlines()) == 1 + len(rows)
    assert "alice" in reportmod.to_table(rows)


def test_feedback_hides_hidden_tests(graded_class):
    root, _, feedback, _, _ = graded_class
    assert len(feedback) == 3 * len(ASSIGNMENTS)
    hidden_lines = set()
    for aid in ASSIGNMENTS:
        src = nbformat.read(root / "source" / aid / f"{aid}.ipynb", as_version=4)
        for cell in src.cells:
            for block in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS",
                                    cell.source, re.S):
                hidden_lines |= {ln.strip() for ln in block.splitlines()
                                 if len(ln.strip()) > 15}
    assert hidden_lines
    for html_path in feedback:
        html = html_path.read_text()
        assert "BEGIN HIDDEN TESTS" not in html
        assert "hidden tests were run here" in html
        for line in hidden_lines:
            # HTML escapes quotes and angle brackets; compare on an identifier-only fragment
            fragment = re.sub(r"[^A-Za-z0-9_]", "", line)
            assert line not in html and fragment not in re.sub(r"[^A-Za-z0-9_]", "", html), \
                f"{html_path.name} shows hidden test code: {line[:60]}"


def test_feedback_holds_no_reference_answer(graded_class):
    """What the grader and the template put into feedback holds no reference answer.
    Checked on carol, who wrote nothing: every number in her feedback came from the course.
    (A full solution's feedback shows what the student's own functions printed, answers
    included; that is their own work, not a leak.)"""
    from .test_leaks import distinctive_answers, find_answers

    root, _, feedback, _, _ = graded_class
    carol = [p for p in feedback if p.parent.parent.name == "carol"]
    assert len(carol) == len(ASSIGNMENTS)
    problems = []
    for html_path in carol:
        aid = html_path.parent.name
        text = re.sub(r"<(style|script)\b.*?</\1>", "", html_path.read_text(), flags=re.S)
        hits = find_answers(text, distinctive_answers(aid))  # page text, not nbconvert's CSS
        if hits:
            problems.append(f"{aid}: {hits}")
    assert problems == []


def test_failing_feedback_keeps_pass_fail_and_message(graded_class):
    root, _, _, _, _ = graded_class
    html = (root / "feedback" / "carol" / "02_memory_calculator" /
            "02_memory_calculator.html").read_text()
    assert "NotImplementedError" in html  # the one-line error message stays
    assert "most recent call last" not in html and "----&gt;" not in html  # no traceback
