"""Author notebooks as plain-text ``.py`` files; build nbgrader source notebooks from them.

Each assignment is written as ``notebooks/<assignment>.py`` in a percent format that
diffs and reviews like code; :func:`py_to_notebook` turns it into the nbgrader
source notebook ``source/<assignment>/<assignment>.ipynb`` with deterministic cell
ids and metadata, so regeneration is byte-stable. Cell markers::

    # %% [markdown]                    markdown (lines start with "# ")
    # %% [markdown locked id=intro]    read-only markdown
    # %%                               ordinary code cell (student may edit)
    # %% [setup]                       locked setup cell (grade_id "setup")
    # %% [locked id=NAME]              read-only code cell
    # %% [answer id=NAME]              graded answer: ### BEGIN/END SOLUTION inside
    # %% [answer id=NAME partial]      ... and the "partial" sample student solves it
    # %% [test id=NAME points=N]       autograder test; ### BEGIN/END HIDDEN TESTS inside

A test cell's hidden region holds weighted cases (:mod:`coursekit.grading.cases`): the
source notebook gets only the code that records each case's result (placed first in the
cell, so a failing visible check cannot stop it), and :func:`answer_key` keeps the expected
values, tolerances and weights for the grader. Test and answer cells carry the
``raises-exception`` tag, so a failing visible check or an unfinished stub does not stop
JupyterLab's Run All.

A code cell whose first line is ``# NBVAL_CHECK_OUTPUT`` has its output pinned:
the build executes the notebook and stores that cell's output, which nbval then
checks on every test run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import cases as casesmod

MARKER = re.compile(r"^# %%(?:\s*\[(?P<tags>[^\]]*)\])?\s*$")
GRADE_ID = re.compile(r"^[A-Za-z0-9_-]{1,60}$")
KINDS = ("markdown", "setup", "locked", "answer", "test", "code")
PIN = "# NBVAL_CHECK_OUTPUT"
HIDDEN = re.compile(r"^### BEGIN HIDDEN TESTS[ \t]*\n(.*?)^### END HIDDEN TESTS[ \t]*\n?",
                    re.S | re.M)
RAISES_TAG = "raises-exception"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


class AuthoringError(ValueError):
    """A notebook source file breaks the authoring format."""


@dataclass
class CellSpec:
    """One parsed cell of an authoring file."""

    kind: str
    source: str
    grade_id: str | None = None
    points: int | None = None
    locked: bool = False
    partial: bool = False
    line: int = 0
    body_line: int = 0
    flags: set = field(default_factory=set)
    cases: list = field(default_factory=list)
    kernel_hidden: str = ""


def _parse_tags(text: str, line: int):
    kind, opts, flags = "code", {}, set()
    for token in (text or "").split():
        if "=" in token:
            key, value = token.split("=", 1)
            opts[key] = value
        elif token in KINDS:
            kind = token
        elif token in ("partial",):
            flags.add(token)
        elif token == "locked":
            flags.add("locked")
        else:
            raise AuthoringError(f"line {line}: unknown cell tag {token!r}")
    return kind, opts, flags


def parse(text: str) -> list:
    """Split an authoring file into :class:`CellSpec` objects (validated)."""
    cells, current, body = [], None, []

    def close():
        if current is None:
            return
        lines = list(body)
        while lines and not lines[-1].strip():
            lines.pop()
        current.body_line = current.line + 1
        while lines and not lines[0].strip():
            lines.pop(0)
            current.body_line += 1
        if current.kind == "markdown":
            out = []
            for ln in lines:
                if ln == "#":
                    out.append("")
                elif ln.startswith("# "):
                    out.append(ln[2:])
                else:
                    raise AuthoringError(
                        f"line {current.line}: markdown lines must start with '# ': {ln!r}")
            lines = out
        current.source = "\n".join(lines)
        cells.append(current)

    for number, raw in enumerate(text.splitlines(), start=1):
        match = MARKER.match(raw)
        if match:
            close()
            kind, opts, flags = _parse_tags(match.group("tags"), number)
            current = CellSpec(kind=kind, source="", line=number, flags=flags,
                               grade_id=opts.pop("id", None), locked="locked" in flags,
                               partial="partial" in flags)
            if "points" in opts:
                raw_points = opts.pop("points")
                if not re.fullmatch(r"[1-9][0-9]*", raw_points):
                    raise AuthoringError(f"line {number}: points={raw_points} must be a whole "
                                         "number >= 1 (give cases weights for finer credit)")
                current.points = int(raw_points)
            if opts:
                raise AuthoringError(f"line {number}: unknown options {sorted(opts)}")
            body = []
        elif current is not None:
            body.append(raw)
    close()
    _validate(cells)
    return cells


def _validate(cells):
    seen = set()
    for c in cells:
        if c.kind == "setup":
            c.grade_id = c.grade_id or "setup"
        needs_id = c.kind in ("setup", "locked", "answer", "test") or (
            c.kind == "markdown" and c.locked)
        if needs_id and not c.grade_id:
            raise AuthoringError(f"line {c.line}: a {c.kind} cell needs id=")
        if c.grade_id:
            if not GRADE_ID.match(c.grade_id):
                raise AuthoringError(f"line {c.line}: id {c.grade_id!r} must use letters, "
                                     "digits, '_' and '-' only")
            if c.grade_id in seen:
                raise AuthoringError(f"line {c.line}: duplicate id {c.grade_id!r}")
            seen.add(c.grade_id)
        if c.kind == "test":
            if not c.points or c.points < 1:
                raise AuthoringError(f"line {c.line}: test cell {c.grade_id} needs points>=1")
            if "### BEGIN HIDDEN TESTS" not in c.source:
                raise AuthoringError(f"line {c.line}: test cell {c.grade_id} has no hidden tests")
            _split_cases(c, cells)
        elif c.points is not None:
            raise AuthoringError(f"line {c.line}: only test cells carry points")
        if c.kind == "answer":
            if "### BEGIN SOLUTION" not in c.source or "### END SOLUTION" not in c.source:
                raise AuthoringError(f"line {c.line}: answer {c.grade_id} needs "
                                     "### BEGIN SOLUTION / ### END SOLUTION")
        elif "### BEGIN SOLUTION" in c.source:
            raise AuthoringError(f"line {c.line}: solution markers outside an answer cell")
        if c.partial and c.kind != "answer":
            raise AuthoringError(f"line {c.line}: 'partial' applies to answer cells only")


def _split_cases(c: CellSpec, cells) -> None:
    """Parse a test cell's hidden region into its cases and kernel code (in place)."""
    regions = HIDDEN.findall(c.source + "\n")
    if len(regions) != 1 or c.source.count("### BEGIN HIDDEN TESTS") != 1:
        raise AuthoringError(f"line {c.line}: test cell {c.grade_id} needs exactly one "
                             "### BEGIN HIDDEN TESTS ... ### END HIDDEN TESTS region, each "
                             "marker alone on its line")
    offset = c.body_line + c.source[:c.source.index("### BEGIN HIDDEN TESTS")].count("\n") + 1
    aliases = {}
    for other in cells:
        if other.kind in ("setup", "locked"):
            aliases.update(casesmod.coursekit_aliases(other.source))
    try:
        c.kernel_hidden, c.cases = casesmod.split_hidden(regions[0], c.grade_id, aliases)
    except casesmod.CaseError as exc:
        raise AuthoringError(f"line {offset + exc.line - 1}: test cell {c.grade_id}: "
                             f"{exc}") from None
    for case in c.cases:
        case["line"] = offset + case["line"] - 1


def _test_source(c: CellSpec) -> str:
    """A test cell as the source notebook holds it: the recording code first (a failing
    visible check cannot stop it), then the visible checks."""
    visible = HIDDEN.sub("", c.source + "\n").strip("\n")
    return ("### BEGIN HIDDEN TESTS\n" + c.kernel_hidden + "\n### END HIDDEN TESTS\n"
            + visible)


def _nbgrader_meta(c: CellSpec):
    base = {"grade": False, "grade_id": c.grade_id, "locked": True,
            "schema_version": 3, "solution": False}
    if c.kind == "answer":
        base.update(locked=False, solution=True)
    elif c.kind == "test":
        base.update(grade=True, points=c.points)
    return base


def py_to_notebook(text: str, stem: str) -> nbformat.NotebookNode:
    """Build the nbgrader source notebook (no outputs) from an authoring file."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC),
                   "language_info": {"name": "python"}}
    specs = parse(text)
    for index, c in enumerate(specs):
        cell_id = c.grade_id or f"{stem[:50]}-{index:03d}"
        if c.kind == "markdown":
            cell = nbformat.v4.new_markdown_cell(c.source, id=cell_id)
        else:
            source = _test_source(c) if c.kind == "test" else c.source
            cell = nbformat.v4.new_code_cell(source, id=cell_id)
            if c.kind in ("test", "answer"):
                cell.metadata["tags"] = [RAISES_TAG]
        if c.grade_id:
            cell.metadata["nbgrader"] = _nbgrader_meta(c)
        if c.kind != "markdown" and (c.locked or c.kind in ("setup", "locked", "test")):
            cell.metadata["editable"] = False
            cell.metadata["deletable"] = False
        nb.cells.append(cell)
    return nb


def pinned(cell) -> bool:
    """True for a code cell whose output is pinned for nbval."""
    return cell.cell_type == "code" and cell.source.startswith(PIN)


def dumps(nb) -> str:
    """Serialize a notebook deterministically (sorted keys, 1-space indent, final newline)."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def answer_cells(nb) -> dict:
    """grade_id -> source of every answer (solution) cell."""
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def strip_solution_markers(source: str) -> str:
    """Turn a solution region into the code a student would have written."""
    kept = [ln for ln in source.splitlines()
            if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")]
    return "\n".join(kept)


def fill_answers(release_nb, source_nb, ids) -> nbformat.NotebookNode:
    """A copy of ``release_nb`` whose answer cells in ``ids`` hold the source's solution."""
    answers = answer_cells(source_nb)
    nb = nbformat.from_dict(json.loads(json.dumps(release_nb)))
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in ids and cell.metadata["nbgrader"].get("solution"):
            cell.source = strip_solution_markers(answers[gid])
    return nb


def partial_ids(text: str) -> set:
    """Answer ids the 'partial' sample student solves (tagged ``partial``)."""
    return {c.grade_id for c in parse(text) if c.kind == "answer" and c.partial}


def all_answer_ids(text: str) -> set:
    """Every answer id (the full-solution sample student solves them all)."""
    return {c.grade_id for c in parse(text) if c.kind == "answer"}


def answer_key(text: str) -> dict:
    """The instructor-only key of an authoring file: per test cell its points, its
    weighted cases (expectations included) and the exact recording code the source
    notebook must hold (so the grader can tell a stale build)."""
    return {c.grade_id: {"points": c.points, "line": c.line, "cases": c.cases,
                         "kernel_code": c.kernel_hidden}
            for c in parse(text) if c.kind == "test"}


def total_points(text: str) -> int:
    """Sum of the points of the test cells."""
    return sum(c.points for c in parse(text) if c.kind == "test")


def read_py(path) -> str:
    """The text of an authoring file (UTF-8)."""
    return Path(path).read_text(encoding="utf-8")
