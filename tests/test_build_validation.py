"""The authoring build checks every file before it writes or deletes anything, and its
errors name the file and line."""

import pytest

from coursekit.grading import build

AID = "01_training_cost"


def _break(course, old, new):
    path = course / "notebooks" / f"{AID}.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return text[:text.index(old)].count("\n") + 1        # line of the broken marker


def _release(course):
    return sorted(p.name for p in (course / "release" / AID).iterdir())


def test_missing_end_hidden_is_caught_before_release_is_deleted(course):
    before = _release(course)
    line = _break(course, "### END HIDDEN TESTS\n", "")
    with pytest.raises(ValueError) as err:
        build.build(course, only=[AID], execute=False, log=lambda *_: None)
    assert f"notebooks/{AID}.py:" in str(err.value)
    assert "END HIDDEN TESTS" in str(err.value)
    assert _release(course) == before                     # nothing deleted
    assert line > 1


def test_fractional_points_name_the_line(course):
    line = _break(course, "points=3]", "points=2.5]")
    with pytest.raises(ValueError, match=rf"notebooks/{AID}\.py:{line}: points=2\.5 must be a "
                                         r"whole number"):
        build.build(course, only=[AID], execute=False, log=lambda *_: None)


def test_misnamed_notebook_file_is_not_skipped_silently(course):
    (course / "notebooks" / "8_reality_check.py").write_text("# %% [markdown]\n# x\n")
    with pytest.raises(ValueError, match=r"notebooks/8_reality_check\.py: not an assignment "
                                         r"file name; name it NN_name\.py"):
        build.build(course, only=[AID], execute=False, log=lambda *_: None)


def test_only_builds_one_assignment(course):
    untouched = (course / "release" / "02_memory_calculator").stat().st_mtime_ns
    assert build.build(course, only=[AID], execute=False, log=lambda *_: None) == [AID]
    assert (course / "release" / "02_memory_calculator").stat().st_mtime_ns == untouched
    with pytest.raises(ValueError, match=r"unknown assignment\(s\) \['99_nope'\]"):
        build.build(course, only=["99_nope"], execute=False, log=lambda *_: None)
