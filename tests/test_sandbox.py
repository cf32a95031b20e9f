"""The sandbox launcher on its own, with a plain Python command as the 'kernel'."""

import json
import os
import subprocess
import sys

import pytest

from coursekit.grading import sandbox

from .conftest import ROOT

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root mode needs root")


def run_sandboxed(tmp_path, code, *extra, workdir=None):
    workdir = workdir or (ROOT / "autograded" / "sandbox-test" / "x")
    status = tmp_path / "status.json"
    cmd = [sys.executable, "-m", "coursekit.grading.sandbox", "--debug",
           "--course-root", str(ROOT), "--workdir", str(workdir),
           "--status-file", str(status), *extra, "--", sys.executable, "-c", code]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    info = json.loads(status.read_text()) if status.exists() and status.read_text() else {}
    return proc, info


@pytest.fixture
def workdir():
    folder = ROOT / "autograded" / "sandbox-test" / "x"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mine.txt").write_text("my file")
    yield folder
    import shutil

    shutil.rmtree(ROOT / "autograded" / "sandbox-test", ignore_errors=True)
    try:
        (ROOT / "autograded").rmdir()
    except OSError:
        pass


def test_course_is_hidden_and_read_only(tmp_path, workdir):
    code = r"""
import os
print("ROOT", sorted(os.listdir(%r)))
print("MINE", open("mine.txt").read())
print("UID", os.getuid())
for path in (%r, %r, "/root/.bash_history"):
    try:
        open(path).read(); print("READ", path)
    except OSError as e:
        print("NOREAD", type(e).__name__)
try:
    open(os.path.join(%r, "coursekit", "evil.py"), "w"); print("WROTE")
except OSError as e:
    print("NOWRITE", type(e).__name__)
""" % (str(ROOT), str(ROOT / "notebooks" / "02_memory_calculator.py"),
       str(ROOT / "source" / "02_memory_calculator" / "02_memory_calculator.ipynb"), str(ROOT))
    proc, info = run_sandboxed(tmp_path, code, workdir=workdir)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    root_listing = out.split("ROOT ", 1)[1].splitlines()[0]
    for secret in ("source", "notebooks", "samples", "tests", "release", ".git"):
        assert f"'{secret}'" not in root_listing, root_listing
    assert "MINE my file" in out
    assert int(out.split("UID ", 1)[1].split()[0]) >= sandbox.UID_BASE
    assert "READ" not in out.replace("NOREAD", "") and "WROTE" not in out
    assert info["reason"] is None and info["exit_code"] == 0


def test_time_limit_kills_and_reports(tmp_path, workdir):
    proc, info = run_sandboxed(tmp_path, "import time\nwhile True: time.sleep(1)",
                               "--time-limit", "2", workdir=workdir)
    assert info["reason"] == "time-limit" and info["seconds"] < 10


def test_rlimits_apply(tmp_path, workdir):
    code = ("import resource\n"
            "print(resource.getrlimit(resource.RLIMIT_AS)[0], "
            "resource.getrlimit(resource.RLIMIT_NPROC)[0])\n"
            "import os\n"
            "try:\n    os._exit(0) if False else None\n    b = bytearray(3 * 2**30)\n"
            "    print('ALLOCATED')\nexcept MemoryError:\n    print('MEMORYERROR')")
    proc, _ = run_sandboxed(tmp_path, code, "--memory-limit", str(2**31), "--nproc-limit", "64",
                            workdir=workdir)
    first = proc.stdout.split()
    assert first[:2] == [str(2**31), "64"] and "MEMORYERROR" in proc.stdout


def test_exit_code_is_reported(tmp_path, workdir):
    _, info = run_sandboxed(tmp_path, "import os; os._exit(3)", workdir=workdir)
    assert info["reason"] == "exit" and info["exit_code"] == 3


def test_capabilities_banner_names_what_is_missing():
    text = sandbox.describe()
    assert "sandbox mode: root" in text and "NOT enforced: network isolation" in text
    limited = sandbox.describe({"mode": "limits", "protections": ["rlimits"],
                                "missing": ["filesystem isolation"]})
    assert limited.startswith("WARNING: the grading sandbox is INCOMPLETE")


def test_kernel_dies_with_its_launcher(tmp_path, workdir):
    import signal
    import time

    marker = "sleeping-kernel-%d" % os.getpid()
    cmd = [sys.executable, "-m", "coursekit.grading.sandbox", "--course-root", str(ROOT),
           "--workdir", str(workdir), "--", sys.executable, "-c",
           f"import time  # {marker}\nwhile True: time.sleep(1)"]
    launcher = subprocess.Popen(cmd)

    def alive():
        out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
        return [int(p) for p in out.split() if int(p) != launcher.pid]

    deadline = time.time() + 10
    while not alive() and time.time() < deadline:
        time.sleep(0.1)
    assert alive(), "the sandboxed process did not start"
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    deadline = time.time() + 5
    while alive() and time.time() < deadline:
        time.sleep(0.1)
    assert alive() == []
