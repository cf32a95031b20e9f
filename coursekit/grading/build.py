"""Build the course: notebooks/*.py -> source/ -> release/ and samples/.

Everything here is deterministic: running :func:`build` twice gives the same bytes,
and :func:`check_up_to_date` proves the committed files are what it produces today.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from . import authoring

ASSIGNMENT = re.compile(r"^\d\d_[a-z0-9_]+$")
SAMPLE_STUDENTS = ("alice", "bob", "carol")
"""alice submits the full solution, bob the answers tagged ``partial``, carol the
untouched release notebook."""
LEAK_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def course_root(start=None) -> Path:
    """The course directory: $COURSEKIT_COURSE_ROOT, or the nearest folder upward
    from ``start`` (default: cwd) holding ``nbgrader_config.py``."""
    env = os.environ.get("COURSEKIT_COURSE_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "nbgrader_config.py").is_file() and (folder / "notebooks").is_dir():
            return folder
    raise FileNotFoundError(
        f"no course directory (with nbgrader_config.py and notebooks/) at or above {here}")


def assignments(root: Path) -> list:
    """Assignment ids: the ``NN_name.py`` files in notebooks/, sorted."""
    return sorted(p.stem for p in (root / "notebooks").glob("*.py") if ASSIGNMENT.match(p.stem))


def nbgrader_env(extra=None) -> dict:
    """Environment for nbgrader subprocesses: this interpreter's bin first on PATH
    (nbgrader runs ``alembic`` from PATH when it creates a gradebook)."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if extra:
        env.update(extra)
    return env


def venv_on_path() -> None:
    """Put this interpreter's bin folder first on PATH of this process (in-process
    nbgrader Gradebook objects run ``alembic`` from PATH)."""
    bindir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bindir:
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def run_nbgrader(root: Path, *args, env=None, check=True) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in the course root with the course config."""
    cmd = [sys.executable, "-m", "nbgrader", *args]
    proc = subprocess.run(cmd, cwd=root, env=nbgrader_env(env), capture_output=True,
                          text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed ({proc.returncode}):\n"
                           + proc.stdout[-3000:] + proc.stderr[-3000:])
    return proc


def course_settings(root: Path) -> dict:
    """``[tool.coursekit]`` of pyproject.toml, with the package version."""
    import tomllib

    pyproject = root / "pyproject.toml"
    if not pyproject.exists():
        raise FileNotFoundError(f"{pyproject} is missing")
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    settings = dict(data.get("tool", {}).get("coursekit", {}))
    settings["version"] = data["project"]["version"]
    return settings


def course_url(root: Path) -> str:
    """``[tool.coursekit] course-url``: where ``dist/student/`` is published, ending in
    ``/`` (empty until the instructor sets it)."""
    url = str(course_settings(root).get("course-url", ""))
    if url and (not url.startswith(("https://", "http://")) or not url.endswith("/")
                or any(c in url for c in "\"'\\ \n")):
        raise ValueError(f"[tool.coursekit] course-url={url!r}: use an http(s) URL ending "
                         "in '/' (or leave it empty)")
    return url


def wheel_name(root: Path) -> str:
    """The student wheel's file name (``make wheel`` / ``make student-bundle``)."""
    return f"coursekit-{course_settings(root)['version']}-py3-none-any.whl"


SETUP_BLOCK = """try:
    import coursekit
except ImportError:  # Colab: install the course library from the course site, in this kernel
    import subprocess, sys
    COURSE_URL = "{url}"  # set by your instructor
    _pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", COURSE_URL + "{wheel}"],
                          capture_output=True, text=True) if COURSE_URL else None
    if _pip is None or _pip.returncode != 0:
        class CourseSetupError(Exception):
            def _render_traceback_(self):  # one clear paragraph, no traceback
                return [str(self)]
        raise CourseSetupError(
            "The course library (coursekit) is not installed here, and "
            + ("your instructor has not published it yet (COURSE_URL is empty)."
               if _pip is None else f"installing it from {{COURSE_URL}}{wheel} failed: "
               + (_pip.stderr.strip().splitlines() or ["no message"])[-1])
            + " Ask your instructor for the course link, or open this notebook in the "
            "course's JupyterLab. Do not `pip install coursekit`: that name on PyPI is an "
            "unrelated project.")
    import coursekit"""


def setup_block(root: Path, url: str | None = None) -> str:
    """The setup cell's install block: ``import coursekit``, or install the student wheel
    from ``course-url`` quietly in the same kernel (no restart), or one clear paragraph."""
    return SETUP_BLOCK.format(url=course_url(root) if url is None else url,
                              wheel=wheel_name(root))


def source_notebook(root: Path, aid: str) -> nbformat.NotebookNode:
    """The source notebook built from notebooks/<aid>.py, without outputs."""
    text = authoring.read_py(root / "notebooks" / f"{aid}.py")
    text = text.replace("{{COURSEKIT_SETUP}}", setup_block(root))
    return authoring.py_to_notebook(text, aid)


def _clean_outputs(outputs, count) -> list:
    """Outputs made byte-stable: consecutive stream chunks of one stream are merged (how
    the kernel happened to flush them is timing, not content) and the execution count is
    the cell's position."""
    out = []
    for o in outputs:
        o = dict(o)
        if "execution_count" in o:
            o["execution_count"] = count
        if o.get("output_type") == "stream":
            o.pop("metadata", None)
            if out and out[-1].get("output_type") == "stream" \
                    and out[-1].get("name") == o.get("name"):
                out[-1]["text"] = out[-1]["text"] + o["text"]
                continue
        out.append(o)
    return out


def execute_pinned(nb, workdir: Path, timeout=120) -> nbformat.NotebookNode:
    """Execute ``nb`` once and keep the outputs of pinned cells only."""
    from nbclient import NotebookClient

    if not any(authoring.pinned(c) for c in nb.cells):
        return nb
    run = nbformat.from_dict(json.loads(json.dumps(nb)))
    NotebookClient(run, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(workdir)}}).execute()
    count = 0
    for cell, done in zip(nb.cells, run.cells):
        if cell.cell_type != "code":
            continue
        count += 1
        if authoring.pinned(cell):
            # nbval only compares cells that look executed: give them their position among
            # the code cells as a deterministic execution count.
            cell.execution_count = count
            cell.outputs = [nbformat.from_dict(o) for o in _clean_outputs(done.outputs, count)]
    return nb


def copy_pinned(nb, committed) -> nbformat.NotebookNode:
    """Copy pinned outputs from an already built notebook with the same cells."""
    old = {c.get("id"): c for c in committed.cells}
    for cell in nb.cells:
        if authoring.pinned(cell) and cell.get("id") in old:
            cell.outputs = old[cell["id"]].get("outputs", [])
            cell.execution_count = old[cell["id"]].get("execution_count")
    return nb


def write_source(root: Path, aid: str, execute=True) -> Path:
    """Write source/<aid>/<aid>.ipynb (pinned outputs executed, or copied when
    ``execute`` is False and a built notebook exists)."""
    folder = root / "source" / aid
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{aid}.ipynb"
    nb = source_notebook(root, aid)
    if execute:
        nb = execute_pinned(nb, folder)
    elif path.exists():
        nb = copy_pinned(nb, nbformat.read(path, as_version=4))
    path.write_text(authoring.dumps(nb), encoding="utf-8")
    return path


def write_samples(root: Path, aid: str) -> list:
    """samples/<student>/<aid>/<aid>.ipynb for the three sample students."""
    text = authoring.read_py(root / "notebooks" / f"{aid}.py")
    src = nbformat.read(root / "source" / aid / f"{aid}.ipynb", as_version=4)
    rel = nbformat.read(root / "release" / aid / f"{aid}.ipynb", as_version=4)
    fills = {"alice": authoring.all_answer_ids(text),
             "bob": authoring.partial_ids(text), "carol": set()}
    paths = []
    for student in SAMPLE_STUDENTS:
        nb = authoring.fill_answers(rel, src, fills[student])
        path = root / "samples" / student / aid / f"{aid}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(authoring.dumps(nb), encoding="utf-8")
        paths.append(path)
    return paths


def release_leaks(root: Path, aids=None) -> list:
    """Problems found in release/: solution or hidden-test markers, or any line of a
    solution region or hidden-test region of the source notebook."""
    problems = []
    for aid in aids or assignments(root):
        src = nbformat.read(root / "source" / aid / f"{aid}.ipynb", as_version=4)
        rel_dir = root / "release" / aid
        texts = {p: p.read_text(encoding="utf-8", errors="replace")
                 for p in rel_dir.rglob("*") if p.is_file()}
        secret_lines = set()
        for cell in src.cells:
            for region in re.findall(
                    r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", cell.source, re.S):
                for line in region[1].splitlines():
                    line = line.strip()
                    if len(line) >= 12 and not line.startswith("#"):
                        secret_lines.add(line)
        for path, text in texts.items():
            for marker in LEAK_MARKERS:
                if marker in text:
                    problems.append(f"{path.relative_to(root)}: contains {marker!r}")
            body = text
            if path.suffix == ".ipynb":
                nb = nbformat.reads(text, as_version=4)
                body = "\n".join(c.source for c in nb.cells)
            for line in sorted(secret_lines):
                if line in body:
                    problems.append(f"{path.relative_to(root)}: contains source-only line "
                                    f"{line[:60]!r}")
    return problems


def validate_sources(root: Path, aids) -> None:
    """Parse every authoring file before anything is written or deleted: a stray file
    name in notebooks/ or a broken marker stops the build with ``file:line: message``."""
    stray = sorted(p.name for p in (root / "notebooks").glob("*.py")
                   if not ASSIGNMENT.match(p.stem))
    if stray:
        raise ValueError(f"notebooks/{stray[0]}: not an assignment file name; name it "
                         "NN_name.py (two digits, '_', lowercase letters, digits and '_'), "
                         "e.g. 08_reality_check.py" + (f" (also: {stray[1:]})" if stray[1:]
                                                        else ""))
    problems = []
    for aid in aids:
        try:
            authoring.parse(authoring.read_py(root / "notebooks" / f"{aid}.py"))
        except authoring.AuthoringError as exc:
            text = str(exc)
            match = re.match(r"line (\d+): (.*)", text, re.S)
            where = f"notebooks/{aid}.py" + (f":{match.group(1)}" if match else "")
            problems.append(f"{where}: {match.group(2) if match else text}")
    if problems:
        raise ValueError("the authoring files have errors (nothing was written):\n  "
                         + "\n  ".join(problems))


def build(root: Path, only=None, execute=True, log=print) -> list:
    """Build source, release and samples for every (or ``only``) assignment."""
    aids = [a for a in assignments(root) if not only or a in only]
    if only and set(only) - set(aids):
        raise ValueError(f"unknown assignment(s) {sorted(set(only) - set(aids))}; "
                         f"known: {assignments(root)}")
    validate_sources(root, aids)
    for aid in aids:
        log(f"[build] {aid}: source notebook" + (" (executing pinned cells)" if execute else ""))
        write_source(root, aid, execute=execute)
        log(f"[build] {aid}: nbgrader generate_assignment --force")
        shutil.rmtree(root / "release" / aid, ignore_errors=True)
        run_nbgrader(root, "generate_assignment", aid, "--force")
        write_samples(root, aid)
    problems = release_leaks(root, aids)
    if problems:
        raise RuntimeError("release/ leaks source-only text:\n  " + "\n  ".join(problems))
    log(f"[build] {len(aids)} assignment(s) built; release/ checked: no solution or "
        "hidden-test text")
    return aids


TRACKED_OUTPUTS = ("source", "release", "samples")


def check_up_to_date(root: Path, log=print) -> list:
    """Rebuild into a scratch copy (pinned outputs copied, not re-executed) and list
    every generated file that differs from the committed one."""
    with tempfile.TemporaryDirectory(prefix="coursekit-build-") as tmp:
        scratch = Path(tmp) / "course"
        scratch.mkdir()
        for name in ("nbgrader_config.py", "pyproject.toml", "notebooks", *TRACKED_OUTPUTS):
            src = root / name
            if src.is_dir():
                shutil.copytree(src, scratch / name)
            elif src.exists():
                shutil.copy2(src, scratch / name)
        # a scratch SQLite gradebook, whatever the course's own (never its real one)
        from .gradebook import ENV, gradebook_url

        old = os.environ.get(ENV)
        os.environ[ENV] = gradebook_url(scratch, "gradebook.db")
        try:
            for name in ("release", "samples"):
                shutil.rmtree(scratch / name, ignore_errors=True)
            build(scratch, execute=False, log=log)
        finally:
            if old is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = old
        differences = []
        for name in TRACKED_OUTPUTS:
            new = {p.relative_to(scratch) for p in (scratch / name).rglob("*") if p.is_file()}
            have = {p.relative_to(root) for p in (root / name).rglob("*") if p.is_file()}
            for rel in sorted(new | have):
                if rel not in have:
                    differences.append(f"{rel}: missing (run `make build`)")
                elif rel not in new:
                    differences.append(f"{rel}: not produced by the build (stale file)")
                elif (scratch / rel).read_bytes() != (root / rel).read_bytes():
                    differences.append(f"{rel}: differs from a fresh build")
        return differences
