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

import json
import re
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 20 * 2**20
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


def check_folder(folder: Path, assignment: str, release_nb: Path | None,
                 max_bytes: int = MAX_BYTES, fix: bool = True) -> list:
    """Findings for one ``submitted/<student>/<assignment>/`` folder (renames if ``fix``)."""
    student = folder.parent.name
    found = []

    def add(level, message, file=""):
        found.append(Finding(student, assignment, level, message, file))

    expected = f"{assignment}.ipynb"
    notebooks = sorted(p for p in folder.iterdir() if p.is_file()
                       and p.name.lower().endswith(".ipynb"))
    target = folder / expected
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
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        add("rejected", f"not valid JSON ({exc.__class__.__name__}: {str(exc)[:80]}); the "
                        "file is damaged: download the notebook again", expected)
        return found
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list) \
            or "nbformat" not in nb:
        add("rejected", "JSON but not a Jupyter notebook (no 'cells'/'nbformat')", expected)
        return found
    graded = {}
    for cell in nb["cells"]:
        meta = (cell.get("metadata") or {}).get("nbgrader") if isinstance(cell, dict) else None
        if isinstance(meta, dict) and "grade_id" in meta:
            graded[meta["grade_id"]] = meta
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
    for student, aid in submissions(root, assignments, students):
        folder = root / "submitted" / student / aid
        release_nb = root / "release" / aid / f"{aid}.ipynb"
        findings += check_folder(folder, aid, release_nb if release_nb.exists() else None,
                                 max_bytes=max_bytes, fix=fix)
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
