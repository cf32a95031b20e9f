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


# ----------------------------------------------------------------------------- statuses
#
# A submission the grader could not score (error, timeout, rejected: see
# coursekit/grading/statuses.py) has a placeholder in autograded/. Its feedback is a status
# page, not nbgrader's "Score: 0.0 / 22.0": `nbgrader generate_feedback` (and `$G feedback`,
# which runs it) calls :func:`after_generate_feedback` for every submission it converted
# (c.GenerateFeedback.post_convert_hook in nbgrader_config.py), which writes the status page
# over nbgrader's page while the submission still needs a manual grade. Once an instructor
# has graded it by hand, nbgrader's own page (the note on top, their scores) stays.


def status_page(explanation, student: str, assignment: str, notebook: str) -> str:
    """The student's feedback page for a submission that was not graded: what happened,
    the grader's reason, what to do. Every text is escaped and the page carries the
    feedback Content-Security-Policy (no script at all is needed)."""
    import html as htmllib

    from .inert import FEEDBACK_CSP, csp_meta

    e = htmllib.escape
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n"
        f"{csp_meta(FEEDBACK_CSP)}"
        f"<title>{e(notebook)}: {e(explanation.title)}</title>\n"
        "<style>body{font-family:sans-serif;max-width:46em;margin:2em auto;padding:0 1em;"
        "line-height:1.5}.status{border-left:6px solid #d2413a;padding:.5em 1em;"
        "background:#fdf2f2}code{background:#f4f4f4;padding:0 .2em}</style>\n</head>\n<body>\n"
        f"<h1>{e(notebook)} &mdash; {e(explanation.title)}</h1>\n"
        f"<p>Student <code>{e(student)}</code>, assignment <code>{e(assignment)}</code>. "
        f"Status: <b>{e(explanation.status.upper())}</b>. This is not a score of 0: your "
        "notebook has no score yet, and your instructor has been told.</p>\n"
        f"<div class=\"status\"><h2>What happened</h2><p>{e(explanation.what)}</p>\n"
        f"<p>The grader's message: <code>{e(explanation.reason or 'none')}</code></p></div>\n"
        f"<h2>What to do</h2><p>{e(explanation.todo)}</p>\n</body>\n</html>\n")


def after_generate_feedback(assignment=None, student=None, notebooks=()):
    """``GenerateFeedback.post_convert_hook``: for each converted notebook that is a status
    placeholder of a submission still waiting for a manual grade, replace the feedback
    page by :func:`status_page`; and give every feedback folder converted the files
    ``nbgrader release_feedback`` reads (:func:`ensure_release_files`)."""
    from pathlib import Path

    from . import gradebook as gbmod
    from . import statuses
    from .statuses import Explanation

    folders = set()
    for nb in notebooks:
        path = Path(nb).resolve()
        folder = path.parent
        sid, aid, root = folder.parent.name, folder.name, folder.parents[2]
        out = root / "feedback" / sid / aid
        folders.add(out)
        status = statuses.status_of(path)
        if status is None or not out.is_dir():
            continue
        url = gbmod.gradebook_url(root)
        with gbmod.open_gradebook(url) as gb:
            state = statuses.flag_states(gb).get((sid, aid))
        if state == "resolved":
            continue
        why = Explanation(status.get("status", "error"), status.get("title", "Not graded"),
                          status.get("what", ""), status.get("todo", ""),
                          status.get("reason", ""))
        (out / f"{path.stem}.html").write_text(status_page(why, sid, aid, path.stem),
                                               encoding="utf-8")
    for folder in folders:
        if folder.is_dir():
            ensure_release_files(folder)


def ensure_release_files(folder) -> list:
    """Give a ``feedback/<student>/<assignment>/`` folder the two files ``nbgrader
    release_feedback`` opens: ``timestamp.txt`` (the feedback's time when the submission had
    none: submissions placed by hand, or whose student-written time was not trusted) and
    ``submission_secret.txt`` (a random one when the submission did not come through
    ``nbgrader submit``: nobody can fetch that feedback through the exchange, so the
    instructor hands it out). The names of the files written."""
    import secrets
    from pathlib import Path

    folder = Path(folder)
    written = []
    stamp = folder / "timestamp.txt"
    if not stamp.is_file():
        stamp.write_text(datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC"),
                         encoding="utf-8")
        written.append(stamp.name)
    secret = folder / "submission_secret.txt"
    if not secret.is_file():
        secret.write_text(secrets.token_hex(32), encoding="utf-8")
        written.append(secret.name)
    return written


def _release_feedback_base():
    from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback

    return ExchangeReleaseFeedback


class ReleaseFeedback(_release_feedback_base()):
    """``nbgrader release_feedback`` (``c.ExchangeFactory.release_feedback``): nbgrader's own,
    after :func:`ensure_release_files` on every feedback folder it is about to release
    (nbgrader alone crashes with ``FileNotFoundError: .../timestamp.txt`` on submissions
    that were not collected through the exchange)."""

    def copy_files(self):
        import glob
        import os

        for folder in glob.glob(self.src_path):
            if os.path.isdir(folder) and glob.glob(os.path.join(folder, "*.html")):
                made = ensure_release_files(folder)
                if made:
                    self.log.info("Added %s to %s", " and ".join(made), folder)
        super().copy_files()
