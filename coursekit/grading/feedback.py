"""nbgrader feedback preprocessor that keeps hidden tests hidden.

nbgrader's feedback HTML shows the hidden-test source and the tracebacks that quote it
(nbgrader issues #917, #1363). :class:`StripHiddenTests` replaces every hidden region in
test cells with a one-line notice and reduces every error output to its one-line
message (``AssertionError: kv_cache_bytes is not right (got 12.0)``), so pass/fail,
points and the message stay while the test code does not.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Unicode

HIDDEN_REGION = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS[ \t]*$.*?^[ \t]*### END HIDDEN TESTS[ \t]*$\n?",
    re.DOTALL | re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def strip_hidden_source(source: str, notice: str) -> str:
    """Replace each hidden-test region (markers included) with ``notice``."""
    return HIDDEN_REGION.sub(notice + "\n", source)


RECORD_LINE = re.compile(r"^.*_record_\(.*$\n?", re.MULTILINE)
HIDDEN_IN_OUTPUT = re.compile(r"### BEGIN HIDDEN TESTS.*?(### END HIDDEN TESTS|\Z)", re.DOTALL)


def scrub_output_text(text: str, notice: str) -> str:
    """Output text with any echoed hidden-test code (a cell that prints ``In[i]``) removed.
    A student who encodes it first can still carry the hidden *inputs* into their own
    feedback; the expected values are never in the kernel, so never in feedback."""
    text = HIDDEN_IN_OUTPUT.sub(notice, text)
    return RECORD_LINE.sub("", text)


def one_line_error(output) -> list:
    """The traceback of an error output reduced to ``ename: first line of evalue``."""
    evalue = ANSI.sub("", str(output.get("evalue", ""))).strip().splitlines()
    first = evalue[0] if evalue else ""
    return [f"{output.get('ename', 'Error')}: {first}"[:300]]


class StripHiddenTests(Preprocessor):
    """Remove hidden-test code and tracebacks from autograded notebooks before feedback."""

    enabled = Bool(True)  # nbconvert registers extra preprocessors disabled by default
    show_hidden_tests = Bool(
        False, help="Show hidden tests in feedback (e.g. after the deadline).").tag(config=True)
    show_after = Unicode(
        "", help="ISO date-time (e.g. the deadline, '2026-12-15T23:59:00+00:00'); feedback "
                 "generated after it shows hidden tests").tag(config=True)
    notice = Unicode("# (hidden tests were run here; their code is not shown)").tag(config=True)

    def revealing(self, now=None) -> bool:
        """True when hidden tests are shown: explicitly, or after ``show_after``."""
        if self.show_hidden_tests:
            return True
        if not self.show_after:
            return False
        try:
            moment = datetime.fromisoformat(self.show_after)
        except ValueError:
            raise ValueError(f"StripHiddenTests.show_after={self.show_after!r} is not an ISO "
                             "date-time such as '2026-12-15T23:59:00+00:00'") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return (now or datetime.now(timezone.utc)) >= moment

    def preprocess_cell(self, cell, resources, index):
        if self.revealing() or cell.cell_type != "code":
            return cell, resources
        meta = cell.metadata.get("nbgrader", {})
        if "BEGIN HIDDEN TESTS" in cell.source:
            cell.source = strip_hidden_source(cell.source, self.notice)
        for output in cell.get("outputs", []):
            if isinstance(output.get("text"), str):
                output["text"] = scrub_output_text(output["text"], self.notice)
            for mime, value in list(output.get("data", {}).items()):
                if isinstance(value, str) and mime.startswith("text/"):
                    output["data"][mime] = scrub_output_text(value, self.notice)
        if meta.get("grade"):  # test cells: their tracebacks quote hidden code
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    line = one_line_error(output)
                    output["traceback"] = line
                    output["evalue"] = line[0].split(": ", 1)[-1]
        return cell, resources
