"""Real-browser tests (issue #13): what instructors and students actually see, in headless
Chromium (Debian's ``chromium``) driven by Playwright.

* Instructor, hostile: a submission full of HTML/JS payloads (tests/browser_payloads.py) is
  autograded, then opened in formgrader's submission view, in JupyterLab, and as feedback
  (from disk and from the instructor's Jupyter server). No planted script runs (each would
  set ``document.title``) and no request reaches the student's URL (a canary server and the
  browser's own request log both watch).
* Instructor, normal: formgrader opens at once on the graded class, shows its scores, and a
  submission that could not be graded is flagged on every page, not a plain 0.
* Student: JupyterLab on the student workspace (coursekit.grading.student): Run All over the
  untouched stubs reaches the last cell, plots and the memory explorer render, a slider
  redraws the explorer, a filled-in solution passes its visible test, and no instructor tool
  is there (no formgrader, no create-assignment, no endpoint that regenerates the notebook).

Every server binds 127.0.0.1 with its own token and is stopped by the test that started it.
Screenshots go to ``test-artifacts/browser/`` (gitignored). Without Chromium the tests skip
with one line saying how to install it, except in CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from . import browser_payloads as payloads
from .conftest import ROOT, copy_course

CHROMIUM = os.environ.get("COURSEKIT_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts" / "browser"
AID = payloads.AID
INSTALL = ("install it with `sudo apt-get install chromium chromium-driver` "
           "(.ci/run does this in CI) or point COURSEKIT_CHROMIUM at a Chromium binary")


def _need_browser():
    found = os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        found, why = False, "Playwright for Python is not installed (`make install`)"
    else:
        why = f"Chromium not found at {CHROMIUM}: {INSTALL}"
    if not found:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"browser tests cannot run in CI: {why}")
        pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Shots:
    """Numbered screenshots of one test under test-artifacts/browser/<test>/."""

    def __init__(self, name):
        self.dir = ARTIFACTS / name
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.n = 0

    def __call__(self, page, step, full_page=False):
        self.n += 1
        page.screenshot(path=str(self.dir / f"{self.n:02d}-{step}.png"), full_page=full_page)


class Canary:
    """An HTTP server on 127.0.0.1 that records every request (the student's URL)."""

    def __init__(self):
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Jupyter:
    """A Jupyter server in its own process group, on a free port with a random token."""

    def __init__(self, cmd_tail, cwd, env, log: Path, app="lab"):
        from coursekit.grading import student

        self.port, self.token = _free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        # The same command line `make student-lab` runs; cmd_tail sets the root directory.
        cmd = [*student.lab_command(cwd, self.port, self.token, app), *cmd_tail]
        self.log = log
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log.open("wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self._wait()

    def _wait(self, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Jupyter exited: {self.log.read_text()[-2000:]}")
            try:
                self.get("/api/status")
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"Jupyter did not start in {timeout} s: {self.log}")

    def get(self, path):
        req = urllib.request.Request(self.url + path,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()

    def status(self, path, method="GET") -> int:
        req = urllib.request.Request(self.url + path, method=method, data=b"" if method ==
                                     "POST" else None,
                                     headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture(scope="module")
def browser():
    _need_browser()
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"])
    yield b
    b.close()
    pw.stop()


def _clean_env(**extra) -> dict:
    """A server environment like an instructor's shell: no venv on PATH, no test knobs."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COURSEKIT_", "PYTEST", "JUPYTER", "MPLBACKEND"))}
    env["PATH"] = "/usr/bin:/bin"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def canary():
    c = Canary()
    yield c
    c.close()


@pytest.fixture(scope="module")
def graded(tmp_path_factory, canary, browser):
    """The sample class of 01_training_cost plus mallory (every payload) and eve (a kernel
    that exits: an error, not a score), graded, with feedback and reports."""
    from coursekit.grading import pipeline

    root = copy_course(tmp_path_factory.mktemp("browser") / "course")
    for student in ("alice", "bob", "carol"):
        src = root / "samples" / student / AID
        shutil.copytree(src, root / "submitted" / student / AID)
    payloads.write(root, canary.url)
    eve = json.loads((root / "samples" / "bob" / AID / f"{AID}.ipynb").read_text())
    for cell in eve["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == "ex_training_time":
            cell["source"] = "import os\nos._exit(3)\n"
    (root / "submitted" / "eve" / AID).mkdir(parents=True)
    (root / "submitted" / "eve" / AID / f"{AID}.ipynb").write_text(json.dumps(eve))
    old = os.environ.get("COURSEKIT_GRADEBOOK")
    os.environ["COURSEKIT_GRADEBOOK"] = str(root / "gradebook.db")
    try:
        outcomes = pipeline.grade(root, [AID], workers=2, out=lambda *a, **k: None)
        pipeline.feedback(root, [AID])
        pipeline.report(root)
    finally:
        if old is None:
            os.environ.pop("COURSEKIT_GRADEBOOK", None)
        else:
            os.environ["COURSEKIT_GRADEBOOK"] = old
    status = {s: o["status"] for (s, _), o in outcomes.items()}
    assert status == {"alice": "graded", "bob": "graded", "carol": "graded",
                      "mallory": "graded", "eve": "error"}, outcomes
    return root


@pytest.fixture(scope="module")
def instructor(graded, tmp_path_factory):
    """JupyterLab as the instructor runs it: from the course root, PATH without the venv."""
    logs = tmp_path_factory.mktemp("logs")
    # JupyterLab renders only the cells in view unless told otherwise: every cell is
    # rendered here, so the check below sees every output of the hostile notebook.
    settings = logs / "lab-settings"
    for name, value in (("notebook-extension/tracker", {"windowingMode": "none"}),
                        ("apputils-extension/notification", {"fetchNews": "false"})):
        path = settings / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    server = Jupyter([f"--LabApp.user_settings_dir={settings}"], cwd=graded, env=_clean_env(),
                     log=logs / "instructor.log")
    yield server
    server.stop()


def _page(browser, server, requests=None):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    if requests is not None:
        page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{server.url}/api/status?token={server.token}")  # sets the login cookie
    return context, page


def _submission_id(root: Path, student: str) -> str:
    with sqlite3.connect(root / "gradebook.db") as db:
        row = db.execute(
            "SELECT sn.id FROM submitted_notebook sn "
            "JOIN submitted_assignment sa ON sn.assignment_id = sa.id "
            "WHERE sa.student_id = ?", (student,)).fetchone()
    assert row, f"{student} has no submitted notebook in the gradebook"
    return row[0]


# Elements and attributes that would let a student's markup run or fetch anything.
LIVE_CONTENT = """(sel) => {
  const roots = [...document.querySelectorAll(sel)];
  const bad = roots.length ? [] : ['no element matches ' + sel];
  for (const e of roots.flatMap(r => [r, ...r.querySelectorAll('*')])) {
    const tag = e.tagName.toLowerCase();
    if (['script', 'iframe', 'object', 'embed', 'base', 'svg', 'meta', 'form'].includes(tag)
        && !e.closest('.MathJax, .MathJax_Display'))
      bad.push(tag + ' ' + e.outerHTML.slice(0, 120));
    for (const a of e.attributes) {
      const v = a.value.trim().toLowerCase();
      if (a.name.startsWith('on') || v.startsWith('javascript:') ||
          (['src', 'href', 'srcset', 'style'].includes(a.name) && v.includes('%s')))
        bad.push(tag + '[' + a.name + '] ' + e.outerHTML.slice(0, 120));
    }
  }
  return bad;
}"""


def _assert_inert(page, canary, requests, where, container="body"):
    page.wait_for_timeout(1500)  # let any planted timer, onload or onerror fire
    assert not page.title().startswith("PWNED"), f"{where}: a planted script ran"
    live = page.evaluate(LIVE_CONTENT.replace("%s", canary.url.lower()), container)
    assert live == [], f"{where}: live student markup in the page: {live[:5]}"
    to_canary = [u for u in requests if u.startswith(canary.url)]
    assert to_canary == [] and canary.hits == [], \
        f"{where}: requests to the student's URL: {to_canary or canary.hits}"


def test_hostile_submission_is_inert_for_the_instructor(browser, graded, instructor, canary):
    shots = Shots("instructor_hostile")
    requests: list = []
    context, page = _page(browser, instructor, requests)
    try:
        sid = _submission_id(graded, payloads.STUDENT)
        page.goto(f"{instructor.url}/formgrader/submissions/{sid}/")
        page.wait_for_selector("#notebook-container")
        shots(page, "formgrader-submission")
        _assert_inert(page, canary, requests, "formgrader submission page",
                      "#notebook-container")
        # The student's printed text is still shown, as text.
        assert page.locator("#notebook-container pre", has_text="PWNED-stdout").count() >= 1
        csp = instructor.get(f"/formgrader/submissions/{sid}/")[1].get(
            "Content-Security-Policy", "")
        assert "script-src 'nonce-" in csp and "unsafe-inline" not in csp.split(
            "script-src")[1].split(";")[0], csp

        # The autograded notebook opened in the instructor's JupyterLab.
        page.goto(f"{instructor.url}/lab/tree/autograded/{payloads.STUDENT}/{AID}/{AID}.ipynb")
        n_cells = len(json.loads((graded / "autograded" / payloads.STUDENT / AID /
                                  f"{AID}.ipynb").read_text())["cells"])
        page.wait_for_function(f"() => document.querySelectorAll('.jp-Notebook .jp-Cell')"
                               f".length >= {n_cells}", timeout=60_000)
        hostile = page.locator(".jp-CodeCell", has_text="PWNED-stdout").first
        hostile.locator(".jp-OutputArea-output").first.wait_for(timeout=30_000)
        hostile.scroll_into_view_if_needed()
        shots(page, "jupyterlab-autograded")
        _assert_inert(page, canary, requests, "autograded notebook in JupyterLab",
                      ".jp-Notebook .jp-OutputArea-output, .jp-Notebook .jp-RenderedMarkdown")

        # Feedback, as the student opens it from disk and as the instructor's server serves it.
        response = page.goto(  # as opened from JupyterLab's file browser (it sends a Referer)
            f"{instructor.url}/files/feedback/{payloads.STUDENT}/{AID}/{AID}.html",
            referer=f"{instructor.url}/lab")
        assert response.status == 200 and page.title() == AID, (response.status, page.title())
        shots(page, "feedback-served")
        _assert_inert(page, canary, requests, "feedback HTML (served by Jupyter)")
        feedback = graded / "feedback" / payloads.STUDENT / AID / f"{AID}.html"
        page.goto(feedback.as_uri())
        assert page.title() == AID
        shots(page, "feedback-file")
        _assert_inert(page, canary, requests, "feedback HTML (file)")
    finally:
        context.close()


def test_formgrader_shows_the_class_and_flags_errors(browser, graded, instructor):
    shots = Shots("instructor_normal")
    context, page = _page(browser, instructor)
    errors: list = []
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}")
            if r.status >= 500 else None)
    try:
        page.goto(f"{instructor.url}/formgrader")
        page.wait_for_selector("text=01_training_cost", timeout=30_000)
        shots(page, "manage-assignments")
        assert errors == [], errors
        page.goto(f"{instructor.url}/formgrader/manage_students")
        for student, score in (("alice", "22 / 22"), ("bob", "7 / 22"), ("carol", "0 / 22"),
                               ("mallory", "7 / 22")):
            row = page.locator("tr", has_text=student)
            row.first.wait_for(timeout=30_000)
            assert score in row.first.inner_text(), (student, row.first.inner_text())
        shots(page, "manage-students")
        banner = page.locator("#coursekit-attention")
        assert banner.is_visible()
        text = banner.inner_text()
        assert "eve/01_training_cost" in text and "ERROR" in text and "not a score" in text
        assert "Loading" not in page.locator("table").first.inner_text()
        page.goto(f"{instructor.url}/formgrader/gradebook/{AID}/{AID}")
        page.wait_for_selector("text=Submission #1", timeout=30_000)
        assert page.locator("#coursekit-attention").is_visible()
        shots(page, "gradebook-notebook")
        assert errors == [], errors
    finally:
        context.close()


# The open notebook, read through the JupyterLab app (see test_student_jupyterlab).
_PANEL = "const a = window.jupyterapp; const w = a && a.shell.currentWidget;"
NOTEBOOK_READY = f"""() => {{ {_PANEL}
  const k = w && w.sessionContext && w.sessionContext.session &&
            w.sessionContext.session.kernel;
  return !!(w && w.context && w.context.isReady && w.content && w.content.widgets.length > 5
            && k && k.status === 'idle'); }}"""
ALL_RUN = f"""() => {{ {_PANEL}
  const code = w.content.widgets.filter(c => c.model.type === 'code');
  return w.sessionContext.session.kernel.status === 'idle' &&
         code.every(c => c.model.executionCount !== null); }}"""
CODE_CELLS = f"""() => {{ {_PANEL}
  return w.content.widgets.filter(c => c.model.type === 'code').map(
    c => ({{count: c.model.executionCount, outputs: c.model.outputs.toJSON()}})); }}"""


def test_formgrader_first_open_on_a_new_course(tmp_path):
    """No gradebook yet and a PATH without the venv: nbgrader runs `alembic` from PATH to
    create the gradebook, which answered HTTP 500 (and "Loading..." forever) before the
    webguard extension put the server's bin/ on PATH. No browser is needed for this one."""
    root = copy_course(tmp_path / "course")
    server = Jupyter([], cwd=root, env=_clean_env(),
                     log=tmp_path / "server.log", app="server")
    try:
        status, _, body = server.get("/formgrader/api/assignments")
        assert status == 200 and json.loads(body), body[:300]
        assert (root / "gradebook.db").exists()
    finally:
        server.stop()


def _solution(aid: str, grade_id: str) -> str:
    nb = json.loads((ROOT / "source" / aid / f"{aid}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == grade_id:
            src = "".join(cell["source"])
            return "\n".join(line for line in src.splitlines()
                             if "### BEGIN SOLUTION" not in line
                             and "### END SOLUTION" not in line)
    raise KeyError(grade_id)


def test_student_jupyterlab(browser, tmp_path):
    from coursekit.grading import student

    aid = "02_memory_calculator"
    shots = Shots("student")
    workspace = student.bundle(ROOT, tmp_path / "workspace")
    assert not (workspace / "nbgrader_config.py").exists()
    env = student.lab_env(workspace, base=_clean_env())
    server = Jupyter(["--LabApp.expose_app_in_browser=True"], cwd=workspace, env=env,
                     log=tmp_path / "student.log")
    context, page = _page(browser, server)
    notebook = workspace / aid / f"{aid}.ipynb"
    try:
        # No instructor tool: the endpoints are gone, so nothing can regenerate the notebook.
        assert server.status("/formgrader") == 404
        assert server.status(f"/formgrader/api/assignment/{aid}/generate", "POST") == 404
        assert server.status("/assignments") == 404
        page.goto(f"{server.url}/lab/tree/{aid}/{aid}.ipynb")
        # The server exposes the app to the page (--LabApp.expose_app_in_browser, this test
        # only): its notebook model is read directly, since JupyterLab renders only the
        # cells in view. Wait for the notebook and an idle kernel before touching anything.
        page.wait_for_function(NOTEBOOK_READY, timeout=180_000)
        shots(page, "opened")
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        assert "Nbgrader" not in menus and "Run" in menus, menus
        body = page.inner_text("body")
        assert "Formgrader" not in body and "Create Assignment" not in body

        # Run All with the untouched stubs reaches the last cell.
        n_code = sum(c["cell_type"] == "code" for c in json.loads(notebook.read_text())["cells"])
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        page.wait_for_function(ALL_RUN, timeout=240_000)
        cells = page.evaluate(CODE_CELLS)
        assert len(cells) == n_code, (len(cells), n_code)
        counts = [c["count"] for c in cells]
        assert None not in counts and counts == sorted(counts), counts
        pngs = sum("image/png" in o.get("data", {}) for c in cells for o in c["outputs"])
        # 02 draws two figures outside the explorer: the checkpoint trade-off and the
        # per-model memory bars (the explorer's own figure is in the widget).
        assert pngs >= 2, f"only {pngs} plot(s) in the notebook's outputs"
        shots(page, "run-all")
        scroller = page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer").first
        scroller.evaluate("e => { e.scrollTop = e.scrollHeight; }")
        page.locator(".jp-OutputArea-output .widget-vbox").last.wait_for(timeout=30_000)
        assert page.locator(".jp-RenderedImage img").count() >= 1, "no plot rendered"

        # The memory explorer: a slider change redraws it.
        explorer = page.locator(".jp-OutputArea-output .widget-vbox").last
        explorer.scroll_into_view_if_needed()
        output = explorer.locator(".widget-output")
        before = output.inner_text()
        assert "GB per GPU" in before, before
        slider = explorer.locator(".widget-slider", has_text="micro-batch")
        slider.locator(".noUi-handle").focus()
        times = []
        for _ in range(3):
            start = time.perf_counter()
            previous = output.inner_text()
            page.keyboard.press("ArrowRight")
            page.wait_for_function(
                "([el, old]) => el.innerText !== old && el.innerText.includes('GB per GPU')",
                arg=[output.element_handle(), previous], timeout=10_000)
            times.append(time.perf_counter() - start)
        shots(page, "explorer-after-slider")
        (shots.dir / "slider-redraw-seconds.json").write_text(json.dumps(times))
        print(f"explorer redraw after a slider step: median {sorted(times)[1] * 1000:.0f} ms")

        # Filling in a solution makes its visible test pass.
        answer = page.locator(".jp-CodeCell", has_text="def static_memory_bytes").first
        answer.scroll_into_view_if_needed()
        answer.locator(".cm-content").click()
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(_solution(aid, "ex_static_memory"))
        page.keyboard.press("Shift+Enter")  # runs the answer, moves to its visible test
        page.keyboard.press("Shift+Enter")
        test_cell = page.locator(".jp-CodeCell", has_text="Visible test: Def 1.1").first
        test_cell.locator(".jp-OutputArea-output", has_text="visible test passed").wait_for(
            timeout=30_000)
        assert test_cell.locator(".jp-OutputArea-output[data-mime-type*='error']").count() == 0
        shots(page, "visible-test-passes")
        assert notebook.exists()
    finally:
        context.close()
        server.stop()
