"""Inert student content (issue #13), without a browser: the sanitizer, the notebook pass
the grader and every HTML export run, the feedback page's policy, and formgrader's
Content-Security-Policy header. tests/test_browser.py checks the same in Chromium."""

import base64
import hashlib
import os

import nbformat
import pytest

from coursekit.grading import inert, precheck, webguard

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


@pytest.mark.parametrize("html, gone", [
    ("<script>alert(1)</script>ok", "alert"),
    ('<img src="x" onerror="alert(1)">', "onerror"),
    ('<a href="javascript:alert(1)">x</a>', "javascript"),
    ('<svg onload="alert(1)"><script>alert(2)</script></svg>', "svg"),
    ('<img src="http://evil.example/p.png">', "evil"),
    ('<div style="background:url(http://evil.example/c)">x</div>', "evil"),
    ('<iframe src="http://evil.example"></iframe>', "iframe"),
    ('<meta http-equiv="refresh" content="0;url=http://evil.example">', "refresh"),
    ('<base href="http://evil.example/">', "base"),
    ('<details open ontoggle="alert(1)"><summary>s</summary></details>', "ontoggle"),
    ('<a class="btn full-credit" id="base_url">x</a>', "full-credit"),
    ('<form action="http://evil.example"><input name=a></form>', "form"),
    ("<style>body{display:none}</style>", "display"),
])
def test_clean_html_removes_every_live_or_remote_part(html, gone):
    assert gone not in inert.clean_html(html).lower()


def test_clean_html_keeps_tables_text_links_and_inline_images():
    html = ('<table><thead><tr><th colspan="2">GPU</th></tr></thead><tbody><tr><td>A100</td>'
            '<td>80 GB</td></tr></tbody></table><p><b>fits</b> <a href="https://arxiv.org/'
            f'abs/1910.02054">ZeRO</a></p><img src="data:image/png;base64,{PNG}" alt="plot">')
    out = inert.clean_html(html)
    for kept in ('<th colspan="2">GPU</th>', "<td>80 GB</td>", "<b>fits</b>",
                 'href="https://arxiv.org/abs/1910.02054"', f"base64,{PNG}"):
        assert kept in out


def _display(data, metadata=None, kind="display_data"):
    out = {"output_type": kind, "data": data, "metadata": metadata or {}}
    if kind == "execute_result":
        out["execution_count"] = 3
    return nbformat.from_dict(out)


def test_outputs_keep_only_text_images_and_sanitized_html():
    out = inert.inert_output(_display({
        "text/plain": "Result", "image/png": PNG, "text/html": "<b>x</b><script>1</script>",
        "application/javascript": "alert(1)", "image/svg+xml": "<svg onload=alert(1)/>",
        "text/markdown": "<img src=x onerror=alert(1)>", "text/latex": "$x$",
        "application/vnd.jupyter.widget-view+json": {"model_id": "m"}},
        {"image/png": {"width": 400, "height": "1\" onload=\"x"}, "text/html": {"isolated": 1}}))
    assert set(out["data"]) == {"text/plain", "image/png", "text/html"}
    assert out["data"]["text/html"] == "<b>x</b>"
    assert out["metadata"] == {"image/png": {"width": 400}}


def test_output_with_nothing_readable_left_says_why():
    out = inert.inert_output(_display({"application/javascript": "alert(1)"}))
    assert list(out["data"]) == ["text/plain"]
    assert "application/javascript" in out["data"]["text/plain"]
    assert "never rendered" in out["data"]["text/plain"]


def test_invalid_base64_image_is_dropped():
    out = inert.inert_output(_display({"image/png": '"><script>alert(1)</script>'}))
    assert "image/png" not in out["data"]


def test_kernel_controlled_fields_are_coerced():
    out = inert.inert_output(nbformat.from_dict(
        {"output_type": "execute_result", "execution_count": "<script>", "data": {
            "text/plain": ["a", "b"]}, "metadata": {}}))
    assert out["execution_count"] is None and out["data"]["text/plain"] == "ab"
    stream = inert.inert_output({"output_type": "stream", "name": "<b>", "text": "hi"})
    assert stream == {"output_type": "stream", "name": "stdout", "text": "hi"}


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    prose = nbformat.v4.new_markdown_cell("Course prose with <b>bold</b>")
    added = nbformat.v4.new_markdown_cell(
        "## notes\n\n<img src=x onerror=alert(1)>\n\n```\na\n\nb\n```\n\n"
        "$x < 2$ [l](javascript:alert(1)) ![c](http://evil.example/c.png)")
    added.metadata = {"coursekit": {"added": True}}
    added.attachments = {"a.svg": {"image/svg+xml": "<svg/>"}, "b.png": {"image/png": PNG}}
    code = nbformat.v4.new_code_cell("x", execution_count=1)
    code.outputs = [_display({"text/html": "<script>1</script>", "text/plain": "p"})]
    nb.cells = [prose, added, code]
    return nb


def test_make_inert_cleans_the_notebook_and_keeps_prose():
    nb = _notebook()
    assert inert.make_inert(nb) >= 3
    assert "widgets" not in nb.metadata
    prose, added, code = nb.cells
    assert prose.source == "Course prose with <b>bold</b>"  # the template's text
    assert added.source.startswith("<div>\n") and "\n\n" not in added.source
    for gone in ("onerror", "javascript", "evil.example"):
        assert gone not in added.source
    assert "$x &lt; 2$" in added.source and "a\n&#8203;\nb" in added.source
    assert added.attachments == {"b.png": {"image/png": PNG}}
    assert code.outputs[0]["data"] == {"text/plain": "p", "text/html": ""}
    assert added.metadata["coursekit"]["inert_markdown"] is True
    before = nbformat.writes(nb)
    inert.make_inert(nb)
    assert nbformat.writes(nb) == before  # a second pass (formgrader, feedback) changes nothing
    nbformat.validate(nb)


def test_markdown_filter_sanitizes_rendered_markdown():
    html = inert.markdown2html({}, "# T\n\n<script>x</script>\n\n[a](javascript:x) **b**")
    assert "<script" not in html and "javascript" not in html and "<strong>b</strong>" in html


def test_feedback_policy_precedes_the_template_css():
    resources = {"include_css": lambda name: f"<style>{name}</style>"}
    _, resources = inert.FeedbackCSP().preprocess(nbformat.v4.new_notebook(), resources)
    out = str(resources["include_css"]("bootstrap.min.css"))
    assert out.index('http-equiv="Content-Security-Policy"') < out.index("<style>")
    assert "script-src https://cdnjs.cloudflare.com/ajax/libs/mathjax/;" in out
    assert "img-src data:" in out and "unsafe-inline" not in out.split("script-src")[1].split(";")[0]


PAGE = (b'<html><head><script src="/formgrader/static/a.js"></script><script>var x=1;</script>'
        b'</head><body><nav><a onclick="toggle_name(true);">n</a><script>tip()</script></nav>'
        b'<div class="container" id="notebook-container"><script>evil()</script>'
        b'<img onerror="fetch(1)"></div></body></html>')


def test_submission_page_nonce_stops_at_the_student_notebook():
    cut = webguard.trusted_end(PAGE, head_only=True)
    out = webguard.add_nonce(PAGE, "N0NCE", cut)
    head, student = out.split(b'id="notebook-container"')
    assert head.count(b'<script nonce="N0NCE"') == 3
    assert b"nonce" not in student and b"<script>evil()" in student


def test_only_plain_template_handlers_are_hashed():
    hashes = webguard.handler_hashes(PAGE[:webguard.trusted_end(PAGE, True)])
    digest = base64.b64encode(hashlib.sha256(b"toggle_name(true);").digest()).decode()
    assert hashes == [f"'sha256-{digest}'"]
    assert webguard.handler_hashes(b'<img onerror="fetch(\'x\')"><a onclick="alert(1)">') == []
    policy = webguard.policy("N", hashes)
    script_src = policy.split("script-src")[1].split(";")[0]
    assert "'nonce-N'" in script_src and "'unsafe-inline'" not in script_src


def test_page_without_a_marker_trusts_nothing():
    assert webguard.trusted_end(b"<p>no body</p><script>x</script>", head_only=True) == 0


def test_attention_banner_is_escaped(tmp_path):
    items = [("bob/01_x", "error", "<script>alert(1)</script>")]
    html = webguard.insert_banner(b"<html><body class='x'><p>page</p></body></html>", items)
    assert b"&lt;script&gt;" in html and b"<script>" not in html
    assert html.index(b"coursekit-attention") < html.index(b"<p>page")
    assert webguard.insert_banner(b"<body></body>", []) == b"<body></body>"


def test_server_extension_puts_its_bin_first_on_path(monkeypatch):
    class App:
        class web_app:  # noqa: N801
            settings = {"base_url": "/"}
            transforms = ["gzip"]

        class log:  # noqa: N801
            info = staticmethod(lambda *a: None)

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    webguard._load_jupyter_server_extension(App)
    assert os.environ["PATH"].split(os.pathsep)[0] == os.path.dirname(os.sys.executable)
    assert App.web_app.transforms[0].__mro__[1] is webguard.FormgraderCSP
    assert App.web_app.transforms[1] == "gzip"


@pytest.mark.parametrize("student, ok", [
    ("alice", True), ("a.lice-2+x@uni.edu", True), ("<img src=x onerror=alert(1)>", False),
    ("bob'\"", False), (".hidden", False), ("x" * 101, False)])
def test_student_ids_are_plain(tmp_path, student, ok):
    folder = tmp_path / student / "01_x"
    folder.mkdir(parents=True)
    (folder / "01_x.ipynb").write_text("{}")
    assert (precheck.intake_problem(folder) == "") is ok
