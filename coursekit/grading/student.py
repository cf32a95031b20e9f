"""The student's side: a workspace of release notebooks and a JupyterLab without instructor
tools (DESIGN.md §7, first part; issue #13).

``bundle(root, dest)`` writes ``dest/``: every ``release/<assignment>/`` folder and a
``jupyter/`` configuration directory. A JupyterLab started with :func:`lab_command` (what
``make student-lab`` runs) roots its file browser at ``dest/``, binds 127.0.0.1 with a token,
and has none of nbgrader's instructor tools: the formgrader, create-assignment,
assignment-list, course-list and validate server extensions are off (so no request can
regenerate, release or delete anything) and nbgrader's JupyterLab extension is disabled (no
Formgrader or Create Assignment menu). ``dest/`` holds no ``nbgrader_config.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

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
README = """# Your course workspace

Each folder is one assignment. Open its notebook in JupyterLab, work top to bottom, and
run each visible test right below the function you write. Hidden tests run only when your
instructor grades; your notebook is yours, nothing here can regenerate or delete it.

Start JupyterLab here with `make student-lab` from the course folder, or with

    JUPYTER_CONFIG_DIR={config} jupyter lab --ServerApp.root_dir={dest}
"""


def server_config() -> dict:
    return {"ServerApp": {"jpserver_extensions": {
        name: False for name in NBGRADER_SERVER_EXTENSIONS}}}


def page_config() -> dict:
    return {"disabledExtensions": {NBGRADER_LAB_EXTENSION: True, ANNOUNCEMENTS: True}}


def bundle(root: Path, dest: Path) -> Path:
    """Write the student workspace ``dest`` from ``root/release`` (replacing the notebooks'
    folders only when ``dest`` is new: a student's work is never overwritten)."""
    root, dest = Path(root), Path(dest)
    if dest.resolve() == root.resolve():
        raise ValueError(f"dest={dest}: the student workspace must not be the course root")
    dest.mkdir(parents=True, exist_ok=True)
    for folder in sorted((root / "release").iterdir()):
        if folder.is_dir() and not (dest / folder.name).exists():
            shutil.copytree(folder, dest / folder.name)
    config = dest / CONFIG_DIR
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps(server_config(), indent=2) + "\n")
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps(page_config(), indent=2) + "\n")
    (dest / "README.md").write_text(README.format(config=config.resolve(),
                                                  dest=dest.resolve()))
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
