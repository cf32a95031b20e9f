"""The grader's output budget, applied to every output type before anything is saved.

The kernel caps its own printed streams (``kernel_guard``), but everything in the kernel is
the student's, and ``display(..., raw=True)``, rich reprs and tracebacks bypass streams. So
:class:`LimitAllOutputs` (an autograde step named in nbgrader_config.py, after the verdicts)
caps each output and the notebook's total, whatever the type: stream, display_data,
execute_result or error. A capped output is replaced by a one-line notice.
"""

from __future__ import annotations

import json

import nbformat
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Integer


def output_size(output) -> int:
    """Bytes of one output as the notebook file stores it."""
    return len(json.dumps(output, ensure_ascii=False).encode())


def notice(text: str):
    return nbformat.v4.new_output("stream", name="stderr", text=f"[{text}]\n")


def limit_outputs(nb, per_output: int, total: int) -> int:
    """Cap every output at ``per_output`` bytes and the notebook at ``total``; returns how
    many outputs were replaced."""
    used, replaced = 0, 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            size = output_size(output)
            if size > per_output or used + size > total:
                output = notice(
                    f"output of {size:,} bytes removed by the grader (limit {per_output:,} "
                    "bytes per output)" if size > per_output else
                    f"output removed by the grader: the notebook's outputs passed {total:,} "
                    "bytes")
                size = output_size(output)
                replaced += 1
            used += size
            kept.append(output)
        cell.outputs = kept
    return replaced


class LimitAllOutputs(Preprocessor):
    """Autograde step: no output of any type beyond the budget reaches a saved file."""

    enabled = Bool(True)
    per_output = Integer(1 * 2**20, help="largest single output kept (bytes)").tag(config=True)
    total = Integer(4 * 2**20, help="largest total of a notebook's outputs (bytes)").tag(
        config=True)

    def preprocess(self, nb, resources):
        n = limit_outputs(nb, self.per_output, self.total)
        if n:
            self.log.warning("Output budget: %d output(s) replaced by a notice", n)
        return nb, resources
