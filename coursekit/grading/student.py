"""The student's side (DESIGN.md §7): the bundle the instructor publishes, and a JupyterLab
without instructor tools.

``bundle(root, dest)`` writes ``dest/`` (``make student-bundle``: ``dist/student/``): every
``release/<assignment>/`` folder, the student wheel (no implementation of a graded function:
:mod:`coursekit.grading.studentlib`), a student ``README.md``, an ``index.html`` listing the
notebooks (with "Open in Colab" links when ``[tool.coursekit] colab-github`` is set), and a
``jupyter/`` configuration directory. A JupyterLab started with :func:`lab_command` (what
``make student-lab`` runs) roots its file browser at ``dest/``, binds 127.0.0.1 with a token,
and has none of nbgrader's instructor tools: the formgrader, create-assignment,
assignment-list, course-list and validate server extensions are off (so no request can
regenerate, release or delete anything) and nbgrader's JupyterLab extension is disabled (no
Formgrader or Create Assignment menu). ``dest/`` holds no ``nbgrader_config.py``.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import sys
from pathlib import Path

from . import build as buildmod
from . import studentlib

NBGRADER_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
)
NBGRADER_LAB_EXTENSION = "@jupyter/nbgrader"
# JupyterLab's "get notified about news?" prompt: noise for a student, and a fetch from
# jupyterlab.github.io when accepted.
ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"
CONFIG_DIR = "jupyter"
README = """# {course}: your notebooks

Each folder is one assignment. Work top to bottom; every graded function has a visible
test right below it. Hidden tests run only when your instructor grades.

## In JupyterLab, on your own machine

    python3 -m venv course && . course/bin/activate
    pip install "{wheel_url}" jupyterlab
    jupyter lab

Keep your notebooks outside any copy of the instructor's course repository. Nothing in
this folder can regenerate or delete your work.

## In Colab

Open a notebook from the links in `index.html` (or upload it). Its first cell installs the
course library from {where} in the same session: no restart.

## Submitting

Save the notebook (in Colab: File > Download > Download .ipynb) and hand in the `.ipynb`
file where your instructor tells you, without renaming it.
"""


def server_config() -> dict:
    return {"ServerApp": {"jpserver_extensions": {
        name: False for name in NBGRADER_SERVER_EXTENSIONS}}}


def page_config() -> dict:
    return {"disabledExtensions": {NBGRADER_LAB_EXTENSION: True, ANNOUNCEMENTS: True}}


def notebooks(dest: Path) -> list:
    """``<assignment>/<assignment>.ipynb`` paths in the bundle, sorted."""
    return sorted(p.relative_to(dest).as_posix() for p in Path(dest).glob("*/*.ipynb"))


def index_html(names, colab_github: str = "") -> str:
    """A page listing the notebooks: download links, and Colab links when the notebooks
    are published in a GitHub repository (``owner/repo/blob/branch``)."""
    rows = []
    for name in names:
        q = html.escape(name, quote=True)
        colab = (f' &middot; <a href="https://colab.research.google.com/github/'
                 f'{html.escape(colab_github.strip("/"), quote=True)}/{q}">Open in Colab</a>'
                 if colab_github else "")
        rows.append(f'<li><a href="{q}" download>{html.escape(name)}</a>{colab}</li>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\"><title>Course notebooks</title></head><body>"
            "<h1>Course notebooks</h1><ul>\n" + "\n".join(rows) +
            "\n</ul><p>See README.md for JupyterLab, Colab and how to submit.</p>"
            "</body></html>\n")


def bundle(root: Path, dest: Path, log=print) -> Path:
    """Write the student bundle ``dest`` from ``root`` (see the module docstring). A
    notebook already in ``dest`` is never replaced: a student's work is not overwritten."""
    root, dest = Path(root), Path(dest)
    if dest.resolve() == root.resolve():
        raise ValueError(f"dest={dest}: the student bundle must not be the course root")
    dest.mkdir(parents=True, exist_ok=True)
    for folder in sorted((root / "release").iterdir()):
        if folder.is_dir() and not (dest / folder.name).exists():
            shutil.copytree(folder, dest / folder.name)
    studentlib.build_student_wheel(root, dest, log=log)
    settings = buildmod.course_settings(root)
    url = buildmod.course_url(root)
    wheel = buildmod.wheel_name(root)
    (dest / "README.md").write_text(README.format(
        course=settings.get("name", "ML systems: training and serving"),
        wheel_url=(url + wheel) if url else f"<course link>/{wheel}",
        where=url or "the course site (your instructor sets its link)"))
    (dest / "index.html").write_text(index_html(notebooks(dest),
                                                str(settings.get("colab-github", ""))))
    config = dest / CONFIG_DIR
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps(server_config(), indent=2) + "\n")
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps(page_config(), indent=2) + "\n")
    return dest


def lab_env(dest: Path, base=None) -> dict:
    """The environment of the student's JupyterLab: its own configuration directory."""
    env = dict(os.environ if base is None else base)
    env["JUPYTER_CONFIG_DIR"] = str((Path(dest) / CONFIG_DIR).resolve())
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def lab_command(dest: Path, port: int = 8888, token: str | None = None,
                app: str = "lab") -> list:
    """``jupyter lab`` for the workspace: 127.0.0.1 only, a token, no browser opened."""
    cmd = [os.path.join(os.path.dirname(sys.executable), "jupyter"), app, "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--ServerApp.root_dir={Path(dest).resolve()}"]
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd
