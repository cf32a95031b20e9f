"""``nbgrader zip_collect`` reads the downloads of Canvas, Moodle and Blackboard (issue #16,
item 6) with the course's configuration alone: no ``named_regexp`` to write."""

import csv
import zipfile

import pytest

from coursekit.grading import build, lms

from .conftest import copy_course

AID = "01_training_cost"

# One realistic file name per LMS (paths inside the downloaded zip), and the student id
# each maps to without a roster. Canvas: sortable name, optional LATE_, user id, file id,
# the file (a resubmission gets -1); Moodle: full name, participant id,
# assignsubmission_file_, the file (flat, or in a folder per student); Blackboard:
# assignment, username, attempt time, the file (plus the attempt's .txt).
FORMATS = {
    "canvas": ([f"smith_jane_12345_67890_{AID}.ipynb",
                f"doejohn_LATE_23456_78901_{AID}-1.ipynb"], ["12345", "23456"]),
    "moodle": ([f"Ann Lee_334455_assignsubmission_file_/{AID}.ipynb",
                f"Bo Chen_334456_assignsubmission_file_{AID}.ipynb"], ["ann.lee", "bo.chen"]),
    "blackboard": ([f"{AID}_kpatel_attempt_2026-11-20-14-03-12_{AID}.ipynb"], ["kpatel"]),
}
BLACKBOARD_TXT = f"{AID}_kpatel_attempt_2026-11-20-14-03-12.txt"


@pytest.mark.parametrize("lms_name", sorted(FORMATS))
def test_file_names_parse(lms_name):
    names, ids = FORMATS[lms_name]
    for name, sid in zip(names, ids):
        info = lms.parse(f"/course/downloaded/{AID}/extracted/x/{name}")
        assert info is not None and info.lms == lms_name, name
        assert lms.student_id(info, None) == sid
        assert info.file.startswith(AID) and info.file.endswith(".ipynb")
    if lms_name == "blackboard":
        assert info.time == "2026-11-20 14:03:12"
    if lms_name == "canvas":
        assert lms.parse(names[1]).late and not lms.parse(names[0]).late


def test_roster_maps_lms_ids(tmp_path):
    (tmp_path / lms.ROSTER).write_text("lms_id,student_id\n12345,jsmith\nAnn Lee,alee\n")
    roster = lms.read_roster(tmp_path)
    assert lms.student_id(lms.parse(FORMATS["canvas"][0][0]), roster) == "jsmith"
    assert lms.student_id(lms.parse("x/" + FORMATS["moodle"][0][0]), roster) == "alee"
    assert lms.student_id(lms.parse(FORMATS["blackboard"][0][0]), roster) == ""  # unlisted
    (tmp_path / lms.ROSTER).write_text("id,name\n")
    with pytest.raises(ValueError, match="lms_id,student_id"):
        lms.read_roster(tmp_path)
    assert lms.parse("notes.ipynb") is None


def test_zip_collect_collects_every_format(tmp_path):
    course = copy_course(tmp_path / "course")
    nb = (course / "samples" / "alice" / AID / f"{AID}.ipynb").read_bytes()
    archive = course / "downloaded" / AID / "archive"
    archive.mkdir(parents=True)
    for name, (files, _) in FORMATS.items():
        with zipfile.ZipFile(archive / f"{name}_submissions.zip", "w") as z:
            for f in files:
                z.writestr(f, nb)
            if name == "blackboard":
                z.writestr(BLACKBOARD_TXT, "Name: K Patel (kpatel)\nAssignment: 01\n")
    proc = build.run_nbgrader(course, "zip_collect", AID)
    everyone = [sid for _, ids in FORMATS.values() for sid in ids]
    for sid in everyone:
        got = course / "submitted" / sid / AID / f"{AID}.ipynb"
        assert got.is_file(), (sid, proc.stdout[-3000:] + proc.stderr[-3000:])
        assert got.read_bytes() == nb
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(everyone)
    # Blackboard's attempt time: nbgrader's timestamp.txt and the instructor's timestamps.csv
    assert (course / "submitted" / "kpatel" / AID / "timestamp.txt").read_text() == \
        "2026-11-20 14:03:12"
    rows = list(csv.DictReader(open(course / "timestamps.csv")))
    assert rows == [{"student_id": "kpatel", "assignment_id": AID,
                     "timestamp": "2026-11-20 14:03:12"}]


def test_record_time_keeps_the_latest(tmp_path):
    assert lms.record_time(tmp_path, "k", AID, "2026-11-20 14:03:12")
    assert not lms.record_time(tmp_path, "k", AID, "2026-11-19 10:00:00")
    assert lms.record_time(tmp_path, "k", AID, "2026-11-21 09:00:00")
    assert lms.record_time(tmp_path, "j", AID, "2026-11-21 09:00:00")
    rows = list(csv.DictReader(open(tmp_path / "timestamps.csv")))
    assert [(r["student_id"], r["timestamp"]) for r in rows] == \
        [("k", "2026-11-21 09:00:00"), ("j", "2026-11-21 09:00:00")]
