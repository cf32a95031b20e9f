"""Jupyter server extension: formgrader's pages under a strict Content-Security-Policy.

Formgrader's submission page embeds the student's notebook, rendered by nbconvert inside
the instructor's own Jupyter session (whose ``_xsrf`` cookie scripts can read: one planted
script is a terminal as the instructor). ``nbgrader_config.py`` already renders that
notebook inert (:mod:`coursekit.grading.inert`); this is the second wall. Every HTML page
under ``<base_url>formgrader/`` gets an HTTP Content-Security-Policy whose scripts run only
with a fresh per-response nonce. The nonce is added to the page's own ``<script>`` tags:
on a submission page only to those before the notebook's container (the template's head
and navigation bar; the student's notebook comes after), elsewhere to all (those pages carry
no student HTML). The same part's inline event handlers (formgrader's buttons) are allowed
by hash (``'unsafe-hashes'``), nothing else inline. Images only from the
server or inline, no connection but to the server, no frames, objects or ``<base>``.

Every formgrader page also starts with a banner listing the submissions the last ``grade``
run could not score (``timeout``, ``error``, ``rejected``, from the grading journal in the
gradebook database, :mod:`coursekit.grading.journal`): formgrader itself shows those as a
plain 0.

It also puts the server's own ``bin/`` first on ``PATH``: nbgrader runs ``alembic`` from
``PATH`` the first time it opens a gradebook, and a JupyterLab started as
``.venv/bin/jupyter lab`` without an activated venv answered formgrader with HTTP 500.

Enabled for every Jupyter server of the course's environment by
``etc/jupyter/jupyter_server_config.d/coursekit.json`` (installed with the package).
"""

from __future__ import annotations

import base64
import hashlib
import html as htmllib
import os
import re
import secrets
import sys

from tornado.web import OutputTransform

MATHJAX_CDN = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/"
_SCRIPT = re.compile(rb"<script(?=[\s>])", re.I)
# Where a submission page's student content begins: the notebook's container (the
# navigation bar before it is the template's), else the body.
_STUDENT = re.compile(rb"""<div[^>]*\sid=["']?notebook-container""", re.I)
_BODY = re.compile(rb"<body[\s>]", re.I)


_HANDLER = re.compile(rb"""\son[a-z]+\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)


# Formgrader's own handlers are plain calls: `toggle_name(true);`, `createAssignmentModal();`.
_PLAIN_CALL = re.compile(r"\s*[A-Za-z_$][\w$]*\((?:true|false)?\);?\s*")


def handler_hashes(trusted: bytes) -> list:
    """CSP hashes of the inline event handlers (``onclick="…"``) in the template's part of
    a page that are plain calls of a page function (formgrader's own buttons); any other
    handler text is left unhashed, so it cannot run."""
    out = set()
    for m in _HANDLER.finditer(trusted):
        value = htmllib.unescape((m.group(1) or m.group(2) or b"").decode("utf-8", "replace"))
        if not _PLAIN_CALL.fullmatch(value):
            continue
        digest = base64.b64encode(hashlib.sha256(value.encode()).digest()).decode()
        out.add(f"'sha256-{digest}'")
    return sorted(out)


def policy(nonce: str, hashes=()) -> str:
    """The formgrader pages' policy (see the module docstring)."""
    handlers = " 'unsafe-hashes' " + " ".join(hashes) if hashes else ""
    return ("default-src 'self'; "
            f"script-src 'nonce-{nonce}'{handlers} {MATHJAX_CDN}; "
            "style-src 'self' 'unsafe-inline' https://cdnjs.cloudflare.com; "
            "img-src 'self' data:; font-src 'self' data: https://cdnjs.cloudflare.com; "
            "connect-src 'self'; object-src 'none'; frame-src 'none'; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'self'")


def trusted_end(html: bytes, head_only: bool) -> int:
    """Where the template's part of a page ends: the whole page, or (``head_only``) the
    start of the student's notebook."""
    if not head_only:
        return len(html)
    m = _STUDENT.search(html) or _BODY.search(html)
    return m.start() if m else 0  # no marker: nothing is known to be the template's


def add_nonce(html: bytes, nonce: str, cut: int) -> bytes:
    """``<script`` -> ``<script nonce="…"`` before ``cut`` only."""
    tag = b'<script nonce="' + nonce.encode() + b'"'
    return _SCRIPT.sub(tag, html[:cut]) + html[cut:]


def attention(course_root) -> list:
    """``(student/assignment, status, reason)`` for every journaled submission that was not
    scored (see :mod:`coursekit.grading.grader`)."""
    from pathlib import Path

    from .grader import load_state

    if not course_root:
        return []
    out = []
    for key, entry in sorted(load_state(Path(course_root)).items()):
        if isinstance(entry, dict) and entry.get("status") not in ("graded", None) \
                and not entry.get("scored", False):
            out.append((key, str(entry.get("status")), str(entry.get("reason", ""))))
    return out


def banner(items) -> bytes:
    """The attention banner (escaped text; empty when nothing needs attention)."""
    if not items:
        return b""
    rows = "".join(f"<li><b>{htmllib.escape(key)}</b>: {htmllib.escape(status.upper())}"
                   f" &mdash; {htmllib.escape(reason[:300])}</li>"
                   for key, status, reason in items[:50])
    more = f"<li>&hellip; and {len(items) - 50} more</li>" if len(items) > 50 else ""
    return (f'<div id="coursekit-attention" role="alert" class="alert alert-danger" '
            f'style="margin:60px 15px 0 15px;position:relative;z-index:2000">'
            f"<b>{len(items)} submission(s) could not be graded: not a score of 0.</b> "
            f"Fix or regrade them (<code>python -m coursekit.grading grade</code>); "
            f"details in <code>reports/grades.txt</code>.<ul>{rows}{more}</ul></div>"
            ).encode()


def insert_banner(html: bytes, items) -> bytes:
    """The banner right after ``<body…>`` (nothing when there is no body or no item)."""
    m = _BODY.search(html)
    if not items or not m:
        return html
    end = html.find(b">", m.start()) + 1
    return html[:end] + banner(items) + html[end:]


class FormgraderCSP(OutputTransform):
    """Tornado output transform for ``<base_url>formgrader/`` HTML responses."""

    base_url = "/"
    settings: dict = {}

    def __init__(self, request):
        super().__init__(request)
        path = request.path or ""
        prefix = self.base_url.rstrip("/") + "/formgrader/"
        self.active = path.startswith(prefix) and not path.startswith(prefix + "static/") \
            and not path.startswith(prefix + "api/")
        self.head_only = path.startswith(prefix + "submissions/")

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        if not self.active or "html" not in str(headers.get("Content-Type", "")):
            return status_code, headers, chunk
        nonce = secrets.token_urlsafe(18)
        # A page streamed in parts cannot be checked whole: its later scripts get no nonce.
        formgrader = self.settings.get("nbgrader_formgrader")
        root = getattr(getattr(formgrader, "coursedir", None), "root", None)
        try:
            chunk = insert_banner(chunk, attention(root))
        except Exception:  # the banner must never break a page
            pass
        cut = trusted_end(chunk, self.head_only or not finishing)
        headers["Content-Security-Policy"] = policy(nonce, handler_hashes(chunk[:cut]))
        headers["X-Content-Type-Options"] = "nosniff"
        headers["Referrer-Policy"] = "no-referrer"
        chunk = add_nonce(chunk, nonce, cut)
        if "Content-Length" in headers:
            headers["Content-Length"] = str(len(chunk))
        return status_code, headers, chunk


def _jupyter_server_extension_points():
    return [{"module": "coursekit.grading.webguard"}]


def _load_jupyter_server_extension(serverapp):
    bindir = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        os.environ["PATH"] = bindir + (os.pathsep + path if path else "")
    base_url = serverapp.web_app.settings.get("base_url", "/")
    transform = type("FormgraderCSP", (FormgraderCSP,), {
        "base_url": base_url, "settings": serverapp.web_app.settings})
    # First, so it sees the page before any compression transform does.
    serverapp.web_app.transforms.insert(0, transform)
    serverapp.log.info("coursekit webguard: formgrader pages under a nonce-based "
                       "Content-Security-Policy")
