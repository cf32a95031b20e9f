"""``nbgrader zip_collect`` for the download formats of Canvas, Moodle and Blackboard.

nbgrader's ``FileNameCollectorPlugin`` needs one ``named_regexp`` written by the
instructor and collects nothing without it; it matches the whole extracted path, and
nbgrader cannot parse the timestamp format its own documentation shows
(``2016-01-30-15-00-00``). :class:`LMSCollectorPlugin` (named by
``c.ZipCollectApp.collector_plugin`` in ``nbgrader_config.py``) reads the file names each
LMS writes into its "download all submissions" archive:

========== ============================================================================
Canvas     ``{name}_{LATE_}{user id}_{file id}_{file}``: ``smithjane_12345_67890_
           01_training_cost.ipynb``, ``smithjane_LATE_12345_67890_01_training_cost-1.ipynb``
           (the name is the sortable name, lower case, punctuation removed; a resubmitted
           file gets ``-1``, ``-2`` before its extension; see canvas-lms issue #2406,
           "studenttest_3143_207797_zipsubmission.zip")
Moodle     ``{Full Name}_{participant id}_assignsubmission_file_{file}``, or a folder of that
           name holding the file (Moodle 3.1+ "download submissions in folders"; the format
           Moodle's own upload test names "StudentName_StudentID_PluginType_Plugin_
           FilePathAndName"). The participant id changes from one assignment to the next:
           the full name identifies the student
Blackboard ``{assignment}_{username}_attempt_{YYYY-MM-DD-HH-MM-SS}_{file}``, plus
           ``{assignment}_{username}_attempt_{...}.txt`` (the submission's text, skipped);
           the attempt time becomes the submission time
========== ============================================================================

Student ids: the LMS id is mapped through ``<course root>/lms_students.csv`` when it
exists (columns ``lms_id,student_id``; ``lms_id`` is the Canvas user id, the Moodle full
name or the Blackboard username, as in the file names); a file whose LMS id is not listed
is skipped with a warning. Without that file: the Canvas user id, the Blackboard username,
and for Moodle the full name in lower case with dots for spaces (``jane.smith``). An id
that is not a valid student id (letters, digits, ``._@+-``) is skipped with a warning.

Blackboard's attempt time is the LMS's record, not the student's: it is written into
``timestamps.csv`` (the instructor's submission times, which ``check``/``grade`` use;
a later attempt wins) as well as into nbgrader's ``timestamp.txt``.
``c.FileNameCollectorPlugin.named_regexp``, when set, is tried first (nbgrader's own way).
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path

from nbgrader.plugins.zipcollect import FileNameCollectorPlugin
from traitlets import Unicode

from .precheck import STUDENT_ID, TIMESTAMP_COLUMNS, TIMESTAMPS

ROSTER = "lms_students.csv"
ROSTER_COLUMNS = ("lms_id", "student_id")
LMSES = ("canvas", "moodle", "blackboard")

MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<participant>\d+)_assignsubmission_file_?/?"
                    r"(?P<file>[^/]+)$")
BLACKBOARD = re.compile(r"^(?P<title>.+)_(?P<login>[^_/]+)_attempt_"
                        r"(?P<time>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<file>.+))?$")
CANVAS = re.compile(r"^(?P<name>[^/]+?)_(?P<late>LATE_)?(?P<user>\d+)_(?P<attachment>\d+)_"
                    r"(?P<file>.+)$")
RESUBMITTED = re.compile(r"-\d+(?=\.[A-Za-z0-9]+$)")


@dataclass(frozen=True)
class LMSFile:
    """What an LMS file name says: which LMS, the keys naming the student (most specific
    first), the submitted file's own name, the submission time (ISO, or "") and lateness."""

    lms: str
    keys: tuple
    default_id: str
    file: str
    time: str = ""
    late: bool = False


def moodle_default_id(name: str) -> str:
    """``Jane Smith`` -> ``jane.smith`` (letters, digits and ``._@+-`` kept)."""
    return re.sub(r"[^a-z0-9._@+-]", "", re.sub(r"\s+", ".", name.strip().lower()))


def parse(path: str) -> LMSFile | None:
    """The :class:`LMSFile` of an extracted file's path, or None when no LMS format fits.
    The file's own name is tried first, then (Moodle's folders) its folder and name."""
    base = os.path.basename(path)
    folder = os.path.basename(os.path.dirname(path))
    for text in (base, f"{folder}/{base}"):
        m = MOODLE.match(text)
        if m:
            name = m["name"].strip()
            return LMSFile("moodle", (name, m["participant"]), moodle_default_id(name),
                           m["file"])
    m = BLACKBOARD.match(base)
    if m:
        stamp = dt.datetime.strptime(m["time"], "%Y-%m-%d-%H-%M-%S")
        return LMSFile("blackboard", (m["login"],), m["login"], m["file"] or "",
                       stamp.isoformat(sep=" "))
    m = CANVAS.match(base)
    if m:
        return LMSFile("canvas", (m["user"], m["name"]), m["user"], m["file"],
                       late=bool(m["late"]))
    return None


def read_roster(root) -> dict | None:
    """``lms_id -> student_id`` from ``<root>/lms_students.csv`` (None when there is none).
    A bad header raises ValueError naming the file and the columns it needs."""
    path = Path(root) / ROSTER
    if not path.is_file():
        return None
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != ROSTER_COLUMNS:
            raise ValueError(f"{path}: the header must be {','.join(ROSTER_COLUMNS)} (found "
                             f"{','.join(reader.fieldnames or ()) or 'nothing'})")
        return {row["lms_id"].strip(): row["student_id"].strip() for row in reader}


def student_id(info: LMSFile, roster: dict | None) -> str:
    """The nbgrader student id of a parsed file ("" when the roster does not list it)."""
    if roster is None:
        return info.default_id
    for key in info.keys:
        if key in roster:
            return roster[key]
    return ""


def record_time(root, student: str, assignment: str, stamp: str) -> bool:
    """Put the LMS's submission time into ``timestamps.csv`` (added, or replacing an
    earlier time of the same submission); whether the file changed."""
    path = Path(root) / TIMESTAMPS
    rows = []
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    for row in rows:
        if (row.get("student_id"), row.get("assignment_id")) == (student, assignment):
            if row.get("timestamp", "") >= stamp:
                return False
            row["timestamp"] = stamp
            break
    else:
        rows.append({"student_id": student, "assignment_id": assignment, "timestamp": stamp})
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=TIMESTAMP_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: r.get(k, "") for k in TIMESTAMP_COLUMNS} for r in rows)
    return True


class LMSCollectorPlugin(FileNameCollectorPlugin):
    """``ZipCollectApp.collector_plugin`` for Canvas, Moodle and Blackboard archives (see
    the module docstring)."""

    timezone = Unicode("UTC", help="Time zone of Blackboard's attempt times (an IANA name "
                                   "such as Europe/Berlin); stored in UTC").tag(config=True)

    def _coursedir(self):
        return getattr(self.parent, "coursedir", None)

    def _released(self) -> set:
        cd = self._coursedir()
        if cd is None:
            return set()
        folder = Path(cd.format_path(cd.release_directory, ".", cd.assignment_id))
        return {p.name for p in folder.glob("*.ipynb")}

    def _utc(self, stamp: str) -> str:
        if not stamp or self.timezone in ("", "UTC"):
            return stamp
        from zoneinfo import ZoneInfo

        local = dt.datetime.fromisoformat(stamp).replace(tzinfo=ZoneInfo(self.timezone))
        return local.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat(sep=" ")

    def collect(self, submitted_file: str):
        if self.named_regexp:  # the instructor's own regular expression first
            found = super().collect(submitted_file)
            if found:
                return found
        if os.path.splitext(submitted_file)[1] not in self.valid_ext:
            return None  # e.g. Blackboard's attempt .txt
        info = parse(submitted_file)
        if info is None:
            self.log.warning("no Canvas, Moodle or Blackboard file name: %s", submitted_file)
            return None
        cd = self._coursedir()
        root = cd.root if cd is not None else os.getcwd()
        try:
            roster = read_roster(root)
        except ValueError as exc:
            self.log.error("%s", exc)
            return None
        sid = student_id(info, roster)
        if not sid:
            self.log.warning("%s: %s id %r is not in %s; add it (lms_id,student_id) and run "
                             "zip_collect --force again", os.path.basename(submitted_file),
                             info.lms, info.keys[0], ROSTER)
            return None
        if not STUDENT_ID.fullmatch(sid):
            self.log.warning("%s: %r is not a valid student id (letters, digits, ._@+-); map "
                             "it in %s", os.path.basename(submitted_file), sid, ROSTER)
            return None
        file_id = info.file
        unsuffixed = RESUBMITTED.sub("", file_id)
        if unsuffixed != file_id and (unsuffixed in self._released() or not self._released()):
            file_id = unsuffixed  # Canvas names a resubmitted file x-1.ipynb
        found = {"student_id": sid, "file_id": file_id}
        if info.late:
            self.log.info("%s: Canvas marks %s as LATE", sid, file_id)
        if info.time:
            stamp = self._utc(info.time)
            found["timestamp"] = stamp
            aid = cd.assignment_id if cd is not None else ""
            if aid and record_time(root, sid, aid, stamp):
                self.log.info("%s/%s: submission time %s (%s attempt) written to %s", sid,
                              aid, stamp, info.lms, TIMESTAMPS)
        return found
