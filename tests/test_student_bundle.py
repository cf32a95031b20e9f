"""The student bundle (DESIGN.md §7, issue #14): what `make student-bundle` publishes, and
every release notebook run from it in a kernel that has only what Colab has.

The Colab-like kernel lives in a fresh virtual environment with ipykernel, numpy,
matplotlib and ipywidgets only (no coursekit, no nbgrader). The bundle is served on
127.0.0.1; each notebook's own setup cell installs the student wheel from there (coursekit
is uninstalled before each notebook, so every setup cell really installs it), then the whole
notebook runs. The only errors allowed are the unfinished stubs and their tests (cells tagged
``raises-exception``).
"""

from __future__ import annotations

import ast
import functools
import gzip
import http.server
import json
import subprocess
import sys
import threading
import tomllib
import zipfile

import nbformat
import pytest
from nbclient import NotebookClient

from coursekit.grading import build, student, studentlib

from . import test_answer_leaks
from .conftest import ROOT

ASSIGNMENTS = build.assignments(ROOT)
COLAB_PACKAGES = ("ipykernel", "numpy", "matplotlib", "ipywidgets")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return student.bundle(ROOT, tmp_path_factory.mktemp("bundle") / "student")


def test_bundle_holds_only_what_students_need(bundle):
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    listing = "\n".join(f"{(bundle / f).stat().st_size:>9,}  {f}" for f in files)
    print(f"\ndist/student/ ({len(files)} files):\n{listing}")
    expected = {f"{a}/{a}.ipynb" for a in ASSIGNMENTS} | {
        "README.md", "index.html", build.wheel_name(ROOT),
        "jupyter/jupyter_server_config.json", "jupyter/labconfig/page_config.json"}
    assert set(files) == expected, set(files) ^ expected
    for name in files:
        if name.endswith(".ipynb"):
            text = (bundle / name).read_text()
            for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "_record_(", "ck.case("):
                assert marker not in text, (name, marker)
    wheel = zipfile.ZipFile(bundle / build.wheel_name(ROOT)).namelist()
    assert all(n.startswith(("coursekit/", "coursekit-")) for n in wheel)
    assert not [n for n in wheel if n.endswith((".ipynb", "nbgrader_config.py"))]
    # no answer key of a graded item: 07's graded questions carry their format only
    keys = json.loads(zipfile.ZipFile(bundle / build.wheel_name(ROOT)).read(
        "coursekit/data/selfcheck_keys.json"))["questions"]
    graded = [q for q in keys.values() if q["graded"]]
    assert len(graded) >= 40
    assert all((q["key"], q["hints"], q["explanation"]) == ("", [], "") for q in graded)
    index = (bundle / "index.html").read_text()
    for aid in ASSIGNMENTS:
        assert f'href="{aid}/{aid}.ipynb"' in index


def test_setup_cell_says_what_to_do_without_a_course_url(tmp_path):
    """Until the instructor sets course-url, the setup cell stops with one paragraph."""
    block = build.setup_block(ROOT, url="")
    code = block.replace("import coursekit\nexcept", "import coursekit_missing_here\nexcept", 1)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode != 0 and "has not published it yet" in proc.stderr


@pytest.fixture(scope="module")
def served(bundle):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(bundle))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def colab_kernel(tmp_path_factory):
    """A kernelspec ``colab`` on a fresh venv with Colab's scientific stack only (the
    course's pinned versions of those four packages)."""
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["course"]
    wanted = [p for p in pins if p.split("==")[0] in COLAB_PACKAGES]
    assert len(wanted) == len(COLAB_PACKAGES), wanted
    base = tmp_path_factory.mktemp("colab")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", *wanted], check=True)
    spec = base / "share" / "jupyter" / "kernels" / "colab"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab-like", "language": "python"}))
    return python, str(base / "share" / "jupyter")


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_release_notebook_runs_like_colab(aid, bundle, served, colab_kernel, monkeypatch):
    python, jupyter_path = colab_kernel
    check = subprocess.run([str(python), "-c", "import coursekit"], capture_output=True)
    if check.returncode == 0:
        subprocess.run([str(python), "-m", "pip", "uninstall", "--quiet", "-y", "coursekit"],
                       check=True)
    nb = nbformat.read(bundle / aid / f"{aid}.ipynb", as_version=4)
    setup = next(c for c in nb.cells if c.cell_type == "code")
    assert 'COURSE_URL = ""' in setup.source
    setup.source = setup.source.replace('COURSE_URL = ""', f'COURSE_URL = "{served}"')
    monkeypatch.setenv("JUPYTER_PATH", jupyter_path)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    client = NotebookClient(nb, kernel_name="colab", timeout=300, allow_errors=True,
                            resources={"metadata": {"path": str(bundle / aid)}})
    client.execute()
    # The setup cell prints its own facts (coursekit's version, the GPU used), never pip's.
    noise = [o for o in setup.outputs if o.get("output_type") != "stream"
             or o.get("name") == "stderr" or any(
                 w in o.get("text", "").lower() for w in ("pip", "restart", "requirement"))]
    assert noise == [], f"setup cell: {noise}"
    unexpected = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        if errors and "raises-exception" not in cell.metadata.get("tags", []):
            unexpected.append((i, errors[0]["ename"], errors[0]["evalue"][:200]))
    assert unexpected == [], unexpected
    # what the student reads after running the notebook prints no hidden answer (issue #15;
    # 07's quiz answers are short numbers such as 1.25, checked by test_selfcheck_keys.py)
    path = ROOT / "notebooks" / f"{aid}.py"
    if path in test_answer_leaks.NOTEBOOKS:
        assert test_answer_leaks.leaks(path, test_answer_leaks.executed_cells(nb)) == []
    code = [c for c in nb.cells if c.cell_type == "code"]
    stubs = sum(any(o.get("output_type") == "error" for o in c.outputs) for c in code)
    print(f"\n{aid}: setup cell installed coursekit from {served} without a word from pip; "
          f"{len(code)} code cells ran, {stubs} stopped at an unfinished stub or its test "
          "(tagged raises-exception), no other error")


# ------------------------------------------------ the student library (issue #14 item 3)
def _functions(tree):
    return {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                                 ast.AsyncFunctionDef))}


def _body_dump(node) -> str:
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    return "\n".join(ast.dump(stmt) for stmt in body)


def test_student_wheel_has_no_implementation_of_a_graded_function(bundle):
    """Every function a hidden test forbids keeps its signature and docstring and replays
    recorded calls; no function anywhere in the wheel has a graded function's body."""
    graded = studentlib.graded_functions(ROOT)
    assert len(graded) >= 60 and "coursekit.training.memory.zero_bytes_per_gpu" in graded
    wheel = zipfile.ZipFile(bundle / build.wheel_name(ROOT))
    originals = {}
    for name in graded:
        module, _, fn = name.rpartition(".")
        path = ROOT / (module.replace(".", "/") + ".py")
        originals[name] = _body_dump(_functions(ast.parse(path.read_text()))[fn])
    bodies = set(originals.values())
    for member in wheel.namelist():
        if not member.endswith(".py"):
            continue
        module = member[:-3].replace("/", ".").removesuffix(".__init__")
        funcs = _functions(ast.parse(wheel.read(member).decode()))
        for fn, node in funcs.items():
            dotted = f"{module}.{fn}"
            if dotted in graded:
                assert _body_dump(node) == ast.dump(ast.parse(
                    f"return _replay_({dotted!r}, locals())").body[0]), dotted
                assert ast.get_docstring(node), dotted  # the contract stays documented
            else:
                assert _body_dump(node) not in bodies, f"{dotted} copies a graded body"
    table = json.loads(gzip.decompress(wheel.read("coursekit/data/replay.json.gz")))
    assert table["graded"] == graded and len(table["calls"]) > 1000


def test_student_library_replays_the_course_and_refuses_other_calls(bundle, colab_kernel):
    """In the Colab-like environment with the student wheel: a graded function gives the
    full library's result for a call a notebook makes, says who writes it for any other
    call, and inspect.getsource shows no implementation."""
    from coursekit.training import memory as full

    python, _ = colab_kernel
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--force-reinstall",
                    "--no-deps", str(bundle / build.wheel_name(ROOT))], check=True)
    # 02_memory_calculator, "the recipe decides": GPT-2 XL (1.5e9 parameters) in mixed
    # precision with Adam, 16 B/param (Rajbhandari et al. 2020, §3.1) = 24 GB
    expected = full.model_state_bytes(1.5e9, "mixed+adam").total
    assert expected == 24e9
    probe = (
        "import inspect, json\n"
        "from coursekit.training import memory as m\n"
        "from coursekit.replay import NotInStudentLibrary\n"
        "out = {'src': inspect.getsource(m.model_state_bytes)}\n"
        "out['hit'] = m.model_state_bytes(1.5e9, 'mixed+adam').total\n"
        "try:\n"
        "    m.model_state_bytes(1.6e9, 'mixed+adam')\n"
        "except NotInStudentLibrary as exc:\n"
        "    out['miss'] = str(exc)\n"
        "print(json.dumps(out))\n")
    proc = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                          check=True, cwd=bundle)  # not the course root: its coursekit/
    assert "site-packages" in subprocess.run(
        [str(python), "-c", "import coursekit; print(coursekit.__file__)"], cwd=bundle,
        capture_output=True, text=True, check=True).stdout
    out = json.loads(proc.stdout)
    assert out["hit"] == expected
    assert "02_memory_calculator" in out["miss"] and "write yourself" in out["miss"]
    assert "Use your own model_state_bytes" in out["miss"]
    assert "return _replay_(" in out["src"] and "bytes_per_param" not in out["src"]
