"""Pre-check submissions before autograding, and say per file what is wrong.

nbgrader silently skips a misnamed notebook, crashes on one whose metadata an editor
stripped, and grades a deleted test cell as 0. These checks run first and report,
for ``submitted/<student>/<assignment>/``:

* ``rejected``: no notebook, unreadable JSON, JSON that is not a notebook, nbgrader
  metadata stripped, a notebook over the size limit, or several candidates for the
  expected name (ambiguous);
* ``fixed``: a Colab/Jupyter-style name (``Copy of x.ipynb``, ``x (1).ipynb``,
  ``x-Copy1.ipynb``) renamed to the expected ``x.ipynb`` when that is unambiguous;
* ``warning``: graded cells deleted (nbgrader restores test cells; a deleted answer
  cell grades as unanswered), extra files;
* ``ok``.
"""

from __future__ import annotations

import csv
import datetime
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 20 * 2**20
MAX_FILES = 200
MAX_FOLDER_BYTES = 50 * 2**20
MAX_DEPTH = 4
LEVELS = ("ok", "fixed", "warning", "rejected")
_COPY_PATTERNS = (
    re.compile(r"^copy of (?P<stem>.+)$", re.I),
    re.compile(r"^(?P<stem>.+?) \(\d+\)$"),
    re.compile(r"^(?P<stem>.+?)-copy\d*$", re.I),
    re.compile(r"^(?P<stem>.+?) - copy( \(\d+\))?$", re.I),
)


@dataclass(frozen=True)
class Finding:
    """One pre-check result for a submission folder."""

    student: str
    assignment: str
    level: str
    message: str
    file: str = ""


def normalized_stem(filename: str) -> str:
    """``Copy of x (1).ipynb`` -> ``x``: the name with copy markers removed."""
    stem = filename[:-len(".ipynb")] if filename.lower().endswith(".ipynb") else filename
    changed = True
    while changed:
        changed = False
        for pattern in _COPY_PATTERNS:
            m = pattern.match(stem.strip())
            if m:
                stem, changed = m.group("stem"), True
    return stem.strip()


def release_ids(release_nb: Path) -> dict:
    """grade_id -> kind ('answer' or 'test') of the graded cells of a release notebook."""
    nb = json.loads(release_nb.read_text(encoding="utf-8"))
    out = {}
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            out[meta["grade_id"]] = "test"
        elif meta.get("solution"):
            out[meta["grade_id"]] = "answer"
    return out


# A student id is a folder name that formgrader and the reports print: letters, digits and
# ._@+- only (an id like `<img src=x onerror=…>` would be markup in the instructor's page).
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")


QUARANTINE = ".coursekit-quarantine"


def quarantine_dir(folder) -> Path:
    """``<course root>/.coursekit-quarantine/<student>/<assignment>`` for the submission
    folder ``<course root>/submitted/<student>/<assignment>``."""
    folder = Path(folder).absolute()
    return folder.parents[2] / QUARANTINE / folder.parent.name / folder.name


def quarantine_special_files(folder) -> list:
    """Move out of a submission folder every entry that is not a regular file or a plain
    folder (symlinks, FIFOs, devices, sockets; the folder itself if it is one), into
    :func:`quarantine_dir`, without opening or following any of them. Returns the moved
    paths (relative to the folder). Run before plain nbgrader copies a submission
    (``Autograde.pre_convert_hook``): its copy opens what it finds, so a FIFO hangs it and a
    link to ``/dev/zero`` fills the disk. The submission is then rejected at intake."""
    folder = Path(folder)
    moved = []

    def move(path: str, rel: str):
        dest = quarantine_dir(folder) / ("_folder" if rel == "." else rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(path, dest)
        except OSError:  # another filesystem: a link, FIFO or device holds no data
            os.unlink(path)
        moved.append(rel)

    if os.path.islink(folder) or (os.path.lexists(folder) and not os.path.isdir(folder)):
        move(str(folder), ".")
    else:
        todo = [str(folder)]
        while todo:
            path = todo.pop()
            for entry in os.scandir(path):
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    todo.append(entry.path)
                elif not stat.S_ISREG(mode):
                    move(entry.path, os.path.relpath(entry.path, folder))
    if moved:
        (quarantine_dir(folder) / "REASON.txt").write_text(
            "Not regular files; moved here unopened before grading:\n"
            + "".join(f"  {m}\n" for m in sorted(moved)))
    return sorted(moved)


# Submission times come from the instructor, never from the student's folder: nbgrader
# reads `timestamp.txt` there, which the student writes (`nbgrader submit` runs as the
# student; an LMS download holds whatever the student uploaded).
TIMESTAMPS = "timestamps.csv"
TIMESTAMP_COLUMNS = ("student_id", "assignment_id", "timestamp")


def trusted_timestamps(root) -> dict:
    """(student, assignment) -> ISO timestamp, from the instructor's
    ``<course root>/timestamps.csv`` (columns ``student_id,assignment_id,timestamp``; a
    time without a zone is UTC, as nbgrader reads it). Missing file: ``{}``. A bad row
    raises ValueError naming the file, the line and what is allowed."""
    path = Path(root) / TIMESTAMPS
    if not path.is_file():
        return {}
    out = {}
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != TIMESTAMP_COLUMNS:
            raise ValueError(f"{path}: the header must be {','.join(TIMESTAMP_COLUMNS)} "
                             f"(found {','.join(reader.fieldnames or ()) or 'nothing'})")
        for row in reader:
            where = f"{path}:{reader.line_num}"
            stamp = (row["timestamp"] or "").strip()
            try:
                datetime.datetime.fromisoformat(stamp.replace(" UTC", "").replace("Z", ""))
            except ValueError:
                raise ValueError(f"{where}: timestamp {stamp[:40]!r} is not an ISO time "
                                 "such as 2026-11-20 17:05:00 or 2026-11-20T17:05:00+01:00")
            out[(row["student_id"], row["assignment_id"])] = stamp
    return out


def use_trusted_timestamp(folder, table: dict | None = None) -> str:
    """Make ``folder/timestamp.txt`` the instructor's time for this submission (from
    :func:`trusted_timestamps`), or remove it when the instructor has none. A student-written
    file is moved to :func:`quarantine_dir` as ``timestamp.student.txt``. Idempotent
    (the submission hash does not change on a rerun). Returns what was done, or ``""``."""
    folder = Path(folder)
    student, aid = folder.parent.name, folder.name
    if table is None:
        table = trusted_timestamps(folder.parents[2])
    want = table.get((student, aid))
    path = folder / "timestamp.txt"
    current = None
    if os.path.lexists(path):
        current = path.read_text(encoding="utf-8", errors="replace").strip() \
            if path.is_file() and not path.is_symlink() else object()
    if current == want:
        return ""
    said = []
    if current is not None:
        keep = quarantine_dir(folder) / "timestamp.student.txt"
        keep.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, keep)
        said.append("timestamp.txt in the submission is not trusted (the student can write "
                    f"it); moved to {QUARANTINE}/{student}/{aid}/timestamp.student.txt")
    if want is not None:
        path.write_text(want + "\n", encoding="utf-8")
        said.append(f"submission time {want} from {TIMESTAMPS}")
    else:
        said.append(f"no time for this submission in {TIMESTAMPS}: recorded without one")
    return "; ".join(said)


def before_nbgrader_copy(assignment=None, student=None, notebooks=()):
    """``Autograde.pre_convert_hook`` (nbgrader_config.py): quarantine the special files of
    each submission folder about to be copied (see :func:`quarantine_special_files`), and
    replace a student-written ``timestamp.txt`` with the instructor's time
    (:func:`use_trusted_timestamp`)."""
    for folder in sorted({Path(nb).parent for nb in notebooks}):
        if not quarantine_special_files(folder):
            use_trusted_timestamp(folder)


def intake_problem(folder, max_files: int = MAX_FILES,
                   max_bytes: int = MAX_FOLDER_BYTES) -> str:
    """Why a submission folder must not be copied or graded, or ``""``. The student id (the
    parent folder's name) must match :data:`STUDENT_ID`. Every entry is checked with lstat,
    nothing is opened: only regular files and plain folders are accepted (no symlinks,
    devices, FIFOs or sockets), with limits on count, size, depth."""
    folder = Path(folder)
    student = folder.parent.name
    if not STUDENT_ID.fullmatch(student):
        return (f"student id {student[:40]!r} is not allowed: use letters, digits and "
                "._@+- only (at most 100 characters)")
    reason = quarantine_dir(folder) / "REASON.txt"
    if reason.exists():
        return (f"it held files that are not regular files (symlinks, FIFOs or devices), "
                f"moved unopened to {QUARANTINE}/{student}/{folder.name}/; delete that "
                "folder to grade a new submission")
    try:
        if not os.path.isdir(folder) or os.path.islink(folder):
            return "the submission is not a plain folder"
        count, total, todo = 0, 0, [(str(folder), 0)]
        while todo:
            path, depth = todo.pop()
            for entry in os.scandir(path):
                st = entry.stat(follow_symlinks=False)
                rel = os.path.relpath(entry.path, folder)
                if stat.S_ISDIR(st.st_mode):
                    if depth + 1 > MAX_DEPTH:
                        return f"folders nested deeper than {MAX_DEPTH} levels ({rel!r})"
                    todo.append((entry.path, depth + 1))
                    continue
                if not stat.S_ISREG(st.st_mode):
                    kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "a FIFO"
                            if stat.S_ISFIFO(st.st_mode) else "a device or socket")
                    return f"{rel!r} is {kind}; only regular files are accepted"
                count += 1
                total += st.st_size
                if count > max_files:
                    return f"more than {max_files} files"
                if total > max_bytes:
                    return f"more than {max_bytes // 2**20} MiB of files"
    except OSError as exc:
        return f"the folder cannot be read ({exc.strerror or exc})"
    return ""


def nbgrader_meta(cell):
    """A cell's nbgrader metadata: a dict with a string grade_id, None when absent, or the
    string ``"malformed"`` when its types are wrong."""
    if not isinstance(cell, dict):
        return "malformed"
    meta = cell.get("metadata", {})
    if not isinstance(meta, dict):
        return "malformed"
    nbg = meta.get("nbgrader")
    if nbg is None:
        return None
    if not isinstance(nbg, dict) or not isinstance(nbg.get("grade_id", ""), str):
        return "malformed"
    return nbg if "grade_id" in nbg else None


def check_folder(folder: Path, assignment: str, release_nb: Path | None,
                 max_bytes: int = MAX_BYTES, fix: bool = True,
                 timestamps: dict | None = None) -> list:
    """Findings for one ``submitted/<student>/<assignment>/`` folder (renames and sets the
    trusted ``timestamp.txt`` if ``fix``; ``timestamps``: :func:`trusted_timestamps`)."""
    student = folder.parent.name
    found = []

    def add(level, message, file=""):
        found.append(Finding(student, assignment, level, message, file))

    problem = intake_problem(folder)
    if problem:
        add("rejected", problem)
        return found
    if fix:
        try:
            said = use_trusted_timestamp(folder, timestamps)
        except ValueError as exc:
            add("rejected", str(exc))
            return found
        if said:
            add("fixed", said, "timestamp.txt")
    expected = f"{assignment}.ipynb"
    notebooks = sorted(p for p in folder.iterdir() if p.is_file()
                       and p.name.lower().endswith(".ipynb"))
    target = folder / expected
    if os.path.lexists(target) and not target.is_file():
        add("rejected", f"{expected!r} is a folder, not a notebook file", expected)
        return found
    if not target.exists():
        candidates = [p for p in notebooks if normalized_stem(p.name) == assignment]
        if len(candidates) == 1:
            if fix:
                candidates[0].rename(target)
            add("fixed", f"renamed {candidates[0].name!r} to {expected!r}", expected)
        elif len(candidates) > 1:
            names = ", ".join(repr(p.name) for p in candidates)
            add("rejected", f"several copies of the notebook ({names}); keep exactly one "
                            f"named {expected!r}")
            return found
        else:
            others = ", ".join(repr(p.name) for p in notebooks) or "none"
            add("rejected", f"no notebook named {expected!r} (found: {others})")
            return found
    size = target.stat().st_size
    if size > max_bytes:
        add("rejected", f"notebook is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.0f} "
                        "MiB limit (clear large outputs and resubmit)", expected)
        return found
    try:
        nb = json.loads(target.read_bytes().decode("utf-8"))
    except RecursionError:
        add("rejected", "the notebook's JSON is nested too deeply to be a notebook", expected)
        return found
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        add("rejected", f"not valid JSON ({exc.__class__.__name__}: {str(exc)[:80]}); the "
                        "file is damaged: download the notebook again", expected)
        return found
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list) \
            or "nbformat" not in nb:
        add("rejected", "JSON but not a Jupyter notebook (no 'cells'/'nbformat')", expected)
        return found
    graded, malformed = {}, 0
    for cell in nb["cells"]:
        meta = nbgrader_meta(cell)
        if meta == "malformed":
            malformed += 1
        elif meta is not None:
            graded[meta["grade_id"]] = meta
    if malformed:
        add("rejected", f"{malformed} cell(s) with malformed metadata (a list or number where "
                        "Jupyter writes an object); copy your answers into a fresh release "
                        "notebook", expected)
        return found
    if not graded:
        add("rejected", "nbgrader metadata stripped from every cell (an editor or Colab "
                        "removed it); copy your answers into a fresh release notebook",
            expected)
        return found
    if release_nb is not None and release_nb.exists():
        want = release_ids(release_nb)
        missing_tests = sorted(g for g, k in want.items() if k == "test" and g not in graded)
        missing_answers = sorted(g for g, k in want.items() if k == "answer" and g not in graded)
        if missing_tests:
            add("warning", "test cells deleted (restored by the grader): "
                + ", ".join(missing_tests), expected)
        if missing_answers:
            add("warning", "answer cells deleted or their metadata stripped (graded as "
                "unanswered): " + ", ".join(missing_answers), expected)
    extra = [p.name for p in notebooks if p.name != expected and p.exists()]
    if extra:
        add("warning", "extra notebooks ignored: " + ", ".join(extra), expected)
    if not found:
        add("ok", "ready to grade", expected)
    return found


def check_submissions(root: Path, assignments=None, students=None, fix=True,
                      max_bytes: int = MAX_BYTES) -> list:
    """Findings for every ``submitted/<student>/<assignment>/`` folder."""
    from .pipeline import submissions

    findings = []
    table = trusted_timestamps(root) if fix else {}
    for student, aid in submissions(root, assignments, students):
        folder = root / "submitted" / student / aid
        release_nb = root / "release" / aid / f"{aid}.ipynb"
        findings += check_folder(folder, aid, release_nb if release_nb.exists() else None,
                                 max_bytes=max_bytes, fix=fix, timestamps=table)
    return findings


def rejected(findings) -> dict:
    """(student, assignment) -> reason, for rejected submissions."""
    return {(f.student, f.assignment): f.message for f in findings if f.level == "rejected"}


def format_findings(findings) -> str:
    """One line per finding: LEVEL student/assignment/file: message."""
    lines = []
    for f in findings:
        where = f"{f.student}/{f.assignment}" + (f"/{f.file}" if f.file else "")
        lines.append(f"{f.level.upper():<8} {where}: {f.message}")
    return "\n".join(lines)
