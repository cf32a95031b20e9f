"""Student content made inert wherever a submission is viewed (issue #13).

Everything a grading kernel emitted is the student's: the kernel runs their code, so any
output of any cell (template cells too) may carry ``<script>``, ``onerror=``, SVG with
script, ``javascript:`` links, JavaScript or widget payloads. So do the markdown cells they
wrote. Formgrader's submission page, the autograded notebook and the feedback HTML all show
that content to someone who did not write it, with their own session.

Three layers, all named in ``nbgrader_config.py`` so plain ``nbgrader autograde``,
``generate_feedback`` and formgrader get them:

1. :class:`InertNotebook` (an autograde step, and the first preprocessor of every HTML
   export): each output keeps only ``text/plain``, PNG/JPEG with valid base64, and
   ``text/html`` passed through :func:`clean_html`. JavaScript, SVG, markdown, LaTeX, JSON,
   widget views and anything unknown are dropped (a one-line note stands in when nothing
   readable is left); output metadata, ``execution_count`` and stream names are coerced to
   what the notebook format allows; widget state and non-image attachments go. A markdown
   cell the student wrote (an answer or an added cell) becomes its own sanitized HTML
   (:func:`inert_markdown`): JupyterLab's markdown sanitizer keeps remote images.
2. :func:`markdown2html` and :func:`clean_html` replace nbconvert's filters of the same
   names: markdown is rendered and then sanitized, so formgrader's own templates (which call
   ``markdown2html`` without nbconvert's ``sanitize_html`` switch) never emit raw student HTML.
3. :class:`FeedbackCSP` puts a ``<meta>`` Content-Security-Policy into the
   feedback page (scripts only with a per-page nonce, images only inline, no requests out);
   formgrader's pages get theirs as an HTTP header from :mod:`coursekit.grading.webguard`.

The sanitizer is nh3 (Ammonia, a maintained allow-list HTML sanitizer): a fixed set of
tags, no ``style``, ``class`` or ``id`` attributes, links only to http(s)/mailto, images only
as inline ``data:image/png|jpeg`` (so no request leaves for a URL the student chose).
"""

from __future__ import annotations

import base64
import binascii
import re

import jinja2
import markupsafe
import nbformat
import nh3
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from .precheck import nbgrader_meta
from .webguard import MATHJAX_CDN

# Output types a viewer may render from a student's kernel; everything else is dropped.
TEXT = "text/plain"
HTML = "text/html"
IMAGES = ("image/png", "image/jpeg")

TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del",
    "details", "div", "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img",
    "kbd", "li", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strong", "sub",
    "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
}
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align"},
    "col": {"span"},
    "ol": {"start"},
}
LINK_SCHEMES = ("http://", "https://", "mailto:")
_B64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg);base64,([A-Za-z0-9+/=\s]+)", re.I)
_NUMBER = re.compile(r"\d{1,5}%?")


def _attribute(tag: str, name: str, value: str) -> str | None:
    """nh3 attribute filter: links to http(s)/mailto or an in-page anchor, images inline."""
    if name == "href":
        v = value.strip()
        return v if v.lower().startswith(LINK_SCHEMES) or v.startswith("#") else None
    if name == "src":
        return value.strip() if _DATA_IMAGE.fullmatch(value.strip()) else None
    if name in ("width", "height", "colspan", "rowspan", "span", "start"):
        return value if _NUMBER.fullmatch(value.strip()) else None
    return value


def clean_html(html) -> markupsafe.Markup:
    """Sanitize an HTML fragment (nh3 with the course's allow-list); safe to insert as is.

    ``<script>`` and ``<style>`` are removed with their content, every event handler and
    ``style``/``class``/``id`` attribute is dropped, and URLs are checked by ``_attribute``.
    """
    if isinstance(html, bytes):
        html = html.decode("utf-8", "replace")
    return markupsafe.Markup(nh3.clean(
        str(html), tags=TAGS, attributes=ATTRIBUTES, attribute_filter=_attribute,
        clean_content_tags={"script", "style", "noscript", "template", "textarea", "title",
                            "xmp", "iframe", "noembed", "noframes", "plaintext", "math",
                            "svg", "object"},
        strip_comments=True, link_rel="noopener noreferrer nofollow", url_schemes={
            "http", "https", "mailto", "data"}))


@jinja2.pass_context
def markdown2html(context, source) -> markupsafe.Markup:
    """Render markdown (nbconvert's mistune renderer, math kept for MathJax) and sanitize it.

    Replaces the exporter's ``markdown2html`` filter; cell attachments are not inlined (a
    student attachment is never rendered).
    """
    return clean_html(markdown2html_mistune(str(source)))


def student_wrote(cell) -> bool:
    """A markdown cell whose text is the student's: an answer cell, or a cell they added
    (the trusted template marks those ``metadata.coursekit.added``)."""
    nbg = nbgrader_meta(cell)
    if isinstance(nbg, dict) and nbg.get("solution"):
        return True
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    ck = meta.get("coursekit") if isinstance(meta, dict) else None
    return isinstance(ck, dict) and bool(ck.get("added"))


def inert_markdown(source: str) -> str:
    """Student markdown as sanitized HTML that every markdown renderer shows as is.

    Rendered by nbconvert's mistune (math kept for MathJax), sanitized by :func:`clean_html`,
    and wrapped in one ``<div>`` with no blank line, so CommonMark (JupyterLab, nbconvert)
    reads it as a single raw HTML block and never re-reads part of it as markdown. Empty
    lines become a zero-width space. The grader marks the cell
    ``metadata.coursekit.inert_markdown`` (metadata it wrote itself: the template's).
    """
    html = str(clean_html(markdown2html_mistune(source))).strip("\n")
    lines = [line if line.strip() else "&#8203;" for line in html.split("\n")]
    return "<div>\n" + "\n".join(lines) + "\n</div>"


def _valid_base64(data) -> bool:
    if not isinstance(data, str) or not _B64.fullmatch(data):
        return False
    try:
        base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _text(value) -> str:
    """The notebook format allows a string or a list of strings for multiline text."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def inert_output(output) -> dict:
    """One output with only viewer-safe data left (see the module docstring)."""
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name")
        return {"output_type": "stream", "name": name if name in ("stdout", "stderr")
                else "stdout", "text": _text(output.get("text"))}
    if kind == "error":
        tb = output.get("traceback")
        return {"output_type": "error", "ename": _text(output.get("ename")),
                "evalue": _text(output.get("evalue")),
                "traceback": [t for t in tb if isinstance(t, str)] if isinstance(tb, list)
                else []}
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    kept, dropped = {}, []
    for mime, value in data.items():
        if mime == TEXT:
            kept[TEXT] = _text(value)
        elif mime in IMAGES and _valid_base64(value):
            kept[mime] = value
        elif mime == HTML:
            kept[HTML] = str(clean_html(_text(value)))
        else:
            dropped.append(str(mime)[:80])
    if not kept:
        kept[TEXT] = ("[output of type " + ", ".join(sorted(dropped) or ["(none)"]) +
                      " not shown: scripts, SVG and widgets from a submission are never "
                      "rendered]")
    meta = output.get("metadata") if isinstance(output.get("metadata"), dict) else {}
    safe_meta = {}
    for mime in IMAGES:
        m = meta.get(mime)
        if mime in kept and isinstance(m, dict):
            dims = {k: m[k] for k in ("width", "height")
                    if isinstance(m.get(k), int) and not isinstance(m.get(k), bool)
                    and 0 < m[k] < 100_000}
            if dims:
                safe_meta[mime] = dims
    result = {"output_type": "display_data", "data": kept, "metadata": safe_meta}
    if kind == "execute_result":
        count = output.get("execution_count")
        result["output_type"] = "execute_result"
        result["execution_count"] = count if isinstance(count, int) and not isinstance(
            count, bool) else None
    return result


def make_inert(nb) -> int:
    """Make every output and attachment of ``nb`` safe to view (in place); returns how many
    outputs or attachments changed."""
    changed = 0
    widgets = nb.get("metadata", {}).pop("widgets", None)
    changed += widgets is not None
    for cell in nb.cells:
        attachments = cell.get("attachments")
        if isinstance(attachments, dict):
            safe = {name: {m: v for m, v in (bundle or {}).items()
                           if m in IMAGES and _valid_base64(v)}
                    for name, bundle in attachments.items() if isinstance(bundle, dict)}
            safe = {k: v for k, v in safe.items() if v}
            if safe != attachments:
                changed += 1
                if safe:
                    cell["attachments"] = safe
                else:
                    cell.pop("attachments")
        if cell.get("cell_type") == "markdown" and student_wrote(cell) and not \
                cell["metadata"].get("coursekit", {}).get("inert_markdown"):
            cell["source"] = inert_markdown(_text(cell.get("source")))
            cell["metadata"].setdefault("coursekit", {})["inert_markdown"] = True
            changed += 1
        if cell.get("cell_type") != "code":
            continue
        count = cell.get("execution_count")
        if not (count is None or (isinstance(count, int) and not isinstance(count, bool))):
            cell["execution_count"] = None
            changed += 1
        outputs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        new = [nbformat.from_dict(inert_output(o)) for o in outputs if isinstance(o, dict)]
        changed += sum(a != b for a, b in zip(outputs, new)) + len(outputs) - len(new)
        cell["outputs"] = new
    return changed


class InertNotebook(Preprocessor):
    """Autograde step and HTML-export preprocessor: see :func:`make_inert`."""

    enabled = Bool(True)

    def preprocess(self, nb, resources):
        n = make_inert(nb)
        if n:
            self.log.info("Inert content: %d output(s) or attachment(s) sanitized", n)
        return nb, resources


# MathJax (the feedback template's only script) from its CDN; nothing else runs, nothing is
# fetched or framed, images are inline only.
FEEDBACK_CSP = (
    "default-src 'none'; "
    f"script-src {MATHJAX_CDN}; "
    "style-src 'unsafe-inline' https://cdnjs.cloudflare.com; "
    "font-src 'self' data: https://cdnjs.cloudflare.com; img-src data:; "
    "base-uri 'none'; form-action 'none'; object-src 'none'; frame-src 'none'")


def csp_meta(policy: str) -> markupsafe.Markup:
    return markupsafe.Markup('<meta http-equiv="Content-Security-Policy" content="{}" />\n'
                             ).format(policy)


class FeedbackCSP(Preprocessor):
    """Feedback export: :data:`FEEDBACK_CSP` as a ``<meta>`` tag ahead of every script.

    nbgrader's feedback template calls ``resources.include_css`` right after ``<title>``,
    before MathJax and before any cell, so the policy is emitted there (checked by
    ``tests/test_inert.py``: the tag precedes the first ``<script>``).
    """

    enabled = Bool(True)

    def preprocess(self, nb, resources):
        include_css = resources.get("include_css")
        if include_css is None:
            raise RuntimeError("FeedbackCSP must run in an HTML export (no include_css)")

        def with_policy(name, _include=include_css):
            return csp_meta(FEEDBACK_CSP) + markupsafe.Markup(_include(name))

        resources["include_css"] = with_policy
        return nb, resources
