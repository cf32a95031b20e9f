"""The trusted template: what the grading kernel executes, rebuilt from the instructor's copy.

nbgrader's own sanitizing (``OverwriteCells``) starts from the student's notebook and
trusts its metadata: a ``skip-execution`` tag, a changed ``grade`` flag or kernelspec all
survive. :class:`TrustedTemplate` instead starts from ``source/<assignment>/<nb>.ipynb``:

* every cell's metadata, every markdown, locked, setup and test cell, and the notebook's
  metadata (kernelspec included) come from the source notebook;
* from the submission only two things are taken, as text: the source of each answer cell
  (matched by grade id, or by cell id if an editor dropped the metadata) and cells the
  student added (no metadata, no outputs), placed after the template cell they followed;
* an answer cell the submission lacks gets the release stub, never the solution.

The result records what was taken in ``metadata.coursekit.template`` (read by the report).
"""

from __future__ import annotations

import json
import os

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer, Unicode

from .precheck import intake_problem, nbgrader_meta

MAX_CELL_CHARS = 200_000


class TemplateError(RuntimeError):
    """The instructor's files needed to grade are missing or stale."""


def _text(value) -> str | None:
    """A cell source as text, or None if it is neither a string nor a list of strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    return None


def _nbg(cell) -> dict:
    """A cell's nbgrader metadata, or {} when absent or malformed (precheck.nbgrader_meta)."""
    meta = nbgrader_meta(cell)
    return meta if isinstance(meta, dict) else {}


def _grade_id(cell):
    return _nbg(cell).get("grade_id")


def _clean(nb):
    """A deep copy through JSON (no shared NotebookNode objects)."""
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def stub_sources(release_nb) -> dict:
    """grade_id -> source of each answer cell in the release notebook (the stubs)."""
    return {_grade_id(c): c.source for c in release_nb.cells if _nbg(c).get("solution")}


def merge(template_nb, stubs: dict, submission, max_cell_chars=MAX_CELL_CHARS):
    """The notebook to execute: ``template_nb`` with the submission's answer text and
    added cells (see the module docstring). Returns ``(notebook, summary)``."""
    nb = _clean(template_nb)
    answer_ids = {_grade_id(c) for c in nb.cells if _nbg(c).get("solution")}
    template_ids = {c.get("id") for c in nb.cells} | {_grade_id(c) for c in nb.cells}
    template_ids.discard(None)

    answers, added, anchor = {}, {}, None  # added: anchor id -> [cells]
    sub_cells = submission.get("cells") if isinstance(submission, dict) else None
    for cell in sub_cells if isinstance(sub_cells, list) else []:
        if not isinstance(cell, dict):
            continue
        text = _text(cell.get("source"))
        gid = _grade_id(cell)
        cid = cell.get("id") if isinstance(cell.get("id"), str) else None
        key = gid if gid in answer_ids else cid if cid in answer_ids else None
        if key is not None and key not in answers:
            answers[key] = text
            anchor = key
            continue
        known = gid if gid in template_ids else cid if cid in template_ids else None
        if known is not None and known not in answers:
            anchor = known  # a template cell: the instructor's version is used
            continue
        if text is None or cell.get("cell_type") not in ("code", "markdown"):
            continue
        added.setdefault(anchor, []).append((cell["cell_type"], text[:max_cell_chars]))

    summary = {"answers": [], "stubbed": [], "unreadable": [], "added_cells": 0}
    out = []

    def add_new(anchor_id):
        for kind, text in added.get(anchor_id, []):
            make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
            new = make(text, id=f"student-added-{summary['added_cells']:03d}")
            new.metadata = {"coursekit": {"added": True}}
            out.append(new)
            summary["added_cells"] += 1

    add_new(None)
    for cell in nb.cells:
        gid, cid = _grade_id(cell), cell.get("id")
        if gid in answer_ids:
            text = answers.get(gid)
            if text is None:
                summary["unreadable" if gid in answers else "stubbed"].append(gid)
                if gid not in stubs:
                    raise TemplateError(f"the release notebook has no stub for answer {gid!r}")
                text = stubs[gid]
            else:
                summary["answers"].append(gid)
            cell.source = text[:max_cell_chars]
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        out.append(cell)
        for key in {gid, cid} - {None}:
            add_new(key)
            added.pop(key, None)
    nb.cells = out
    nb.metadata.setdefault("coursekit", {})["template"] = summary
    return nb, summary


class TrustedTemplate(NbGraderPreprocessor):
    """Sanitize step of ``nbgrader autograde``: replace the submitted notebook by the
    trusted template filled with the student's answers (named in nbgrader_config.py)."""

    course_root = Unicode("", help="course directory holding source/ and release/").tag(
        config=True)
    max_cell_chars = Integer(MAX_CELL_CHARS, help="longest answer or added cell kept").tag(
        config=True)

    def _path(self, folder, resources) -> str:
        nbg = resources["nbgrader"]
        return os.path.join(self.course_root, folder, nbg["assignment"],
                            f"{nbg['notebook']}.ipynb")

    def preprocess(self, nb, resources):
        folder = resources.get("metadata", {}).get("path")
        problem = intake_problem(folder) if folder else "no submission folder"
        if problem:  # before any kernel runs: the submission is failed alone
            raise TemplateError(f"submission rejected at intake: {problem}")
        if not self.course_root:
            raise TemplateError("TrustedTemplate.course_root is not set in nbgrader_config.py")
        try:
            template = nbformat.read(self._path("source", resources), as_version=4)
            release = nbformat.read(self._path("release", resources), as_version=4)
        except FileNotFoundError as exc:
            raise TemplateError(f"cannot grade without the instructor's notebooks: {exc}; "
                                "run `make build`") from None
        merged, summary = merge(template, stub_sources(release), nb, self.max_cell_chars)
        self.log.info("Trusted template: %d answer(s) taken, %d stubbed, %d added cell(s)",
                      len(summary["answers"]), len(summary["stubbed"]), summary["added_cells"])
        return merged, resources
