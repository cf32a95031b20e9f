"""The sandbox launcher on its own (bubblewrap), with a plain Python command as the
'kernel'."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from coursekit.grading import sandbox

from .conftest import ROOT

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or sandbox.bwrap_path() is None,
    reason="the full sandbox needs root and bubblewrap (apt-get install bubblewrap)")


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
for path in (%r, %r, "/root/.bash_history", "/etc/shadow", "/etc/passwd"):
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
    assert int(out.split("UID ", 1)[1].split()[0]) == sandbox.SANDBOX_UID
    assert "READ" not in out.replace("NOREAD", "") and "WROTE" not in out
    assert info["reason"] is None and info["exit_code"] == 0


def test_environment_is_cleared_and_network_is_gone(tmp_path, workdir, monkeypatch):
    monkeypatch.setenv("LMS_API_TOKEN", "canary-token")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    code = ("import os, socket\n"
            "print('ENV', sorted(os.environ))\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2); print('NET open')\n"
            "except OSError as e:\n"
            "    print('NET', type(e).__name__)\n")
    proc, _ = run_sandboxed(tmp_path, code, workdir=workdir)
    server.close()
    assert "canary-token" not in proc.stdout and "LMS_API_TOKEN" not in proc.stdout
    assert "NET open" not in proc.stdout and "NET " in proc.stdout, proc.stdout + proc.stderr
    env = eval(proc.stdout.split("ENV ", 1)[1].splitlines()[0])  # noqa: S307 - our own output
    assert set(env) <= set(sandbox.ENV_KEEP) | {"PWD"}


def test_symlinks_and_special_files_are_not_copied_in(tmp_path, workdir):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET")
    (workdir / "link.txt").symlink_to(secret)
    os.mkfifo(workdir / "pipe")
    code = "import os; print('FILES', sorted(os.listdir('.')))"
    proc, _ = run_sandboxed(tmp_path, code, workdir=workdir)
    assert "FILES ['mine.txt']" in proc.stdout, proc.stdout + proc.stderr


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
    proc, _ = run_sandboxed(tmp_path, code, "--memory-limit", str(2**31), workdir=workdir)
    first = proc.stdout.split()
    assert first[0] == str(2**31) and "MEMORYERROR" in proc.stdout, proc.stdout + proc.stderr


def test_a_fork_bomb_stops_at_the_cgroup_and_dies_with_the_kernel(tmp_path, workdir):
    code = ("import os, time\n"
            "n = 0\n"
            "try:\n"
            "    while True:\n"
            "        if os.fork() == 0:\n"
            "            os.setsid()\n"
            "            time.sleep(60)\n"
            "            os._exit(0)\n"
            "        n += 1\n"
            "except OSError:\n"
            "    print('FORKS', n)\n")
    proc, info = run_sandboxed(tmp_path, code, "--nproc-limit", "32", workdir=workdir)
    assert 0 < int(proc.stdout.split("FORKS ")[1].split()[0]) < 32, proc.stdout + proc.stderr
    out = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert "time.sleep(60)" not in out


def test_exit_code_is_reported(tmp_path, workdir):
    _, info = run_sandboxed(tmp_path, "import os; os._exit(3)", workdir=workdir)
    assert info["reason"] == "exit" and info["exit_code"] == 3


def test_capabilities_banner_names_what_is_missing():
    text = sandbox.describe()
    assert "sandbox mode: bwrap" in text and "no network" in text and "NOT enforced" not in text
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


def test_paths_under_tmp_stay_visible_inside(tmp_path):
    """A venv or course checked out under /tmp (as CI may do) is bound after the private
    /tmp is mounted, so it is not hidden by it."""
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="ck-visible-", dir="/tmp"))
    (shared / "lib.txt").write_text("visible")
    work = tmp_path / "copy"
    work.mkdir()
    cmd = sandbox.bwrap_command(["/bin/cat", str(shared / "lib.txt")],
                                workdir_inside=str(tmp_path / "w"), copy_dir=work,
                                ipc_dir=None, connection=None, paths=[str(shared)],
                                tmp_size=2**20)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    import shutil

    shutil.rmtree(shared)
    assert out.stdout == "visible", out.stderr
