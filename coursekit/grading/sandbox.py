"""Run a submission's Jupyter kernel as untrusted code, under bubblewrap.

``nbgrader_config.py`` sets ``c.Execute.kernel_manager_class`` to
:class:`coursekit.grading.kernel_manager.SandboxKernelManager`, so plain ``nbgrader
autograde`` and the course's ``grade`` command both start every kernel through this
launcher (``python -m coursekit.grading.sandbox ... -- <kernel command>``). The isolation
itself is done by **bubblewrap** (``bwrap``, Debian's ``bubblewrap``; the Flatpak sandbox),
a well-kept tool, not by code of ours. Each kernel gets:

* **a minimal filesystem**: a fresh root holding only ``/usr`` (and the ``/lib``, ``/bin``
  links), the interpreter and the virtual environment read-only, the ``coursekit`` package
  read-only, a size-limited private ``/tmp``, and a private *copy* of this submission's own
  regular files as its working directory. No course root, no ``source/``, no gradebook, no
  other checkout, no home directory, no ``/etc/shadow``;
* **a cleared environment** (``--clearenv``) with a short allow-list (:data:`ENV_KEEP`);
* **no network** (``--unshare-net``): kernel messages travel over IPC sockets in a private
  directory of this kernel only (the kernel manager uses jupyter_client's ``ipc``
  transport), so there are no ports to clash and no other kernel to listen to;
* **its own user, PID, IPC and UTS namespaces**, ``--die-with-parent`` and
  ``--new-session`` (no controlling terminal to inject into);
* **limits for every process of the kernel**: a cgroup per kernel (``pids.max``, a CPU
  quota of one core) where the machine offers cgroups, rlimits otherwise and in addition
  (address space, file size, open files, CPU seconds, no core dumps); a wall-clock limit for
  the whole notebook; when the kernel ends, every process it started is killed;
* **an output budget** in the kernel for printed streams (``kernel_guard``); the grader
  enforces a budget on every output type again before anything is saved
  (:class:`coursekit.grading.verdicts.LimitAllOutputs`).

Without root or without ``bwrap`` the launcher applies the rlimits and the time limit only
and says so loudly, in the grader's log and in :func:`capabilities`, which ``grade`` prints.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shutil
import signal
import stat
import sys
import tempfile
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
DEFAULTS = dict(time_limit=300, memory_limit=4 * 2**30, nproc_limit=256,
                file_size_limit=64 * 2**20, tmp_size=128 * 2**20, output_limit=2 * 2**20,
                cpu_limit=0, max_files=200)
ENV_KEEP = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin",
            "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "MALLOC_ARENA_MAX": "2", "HOME": "/tmp/home", "MPLCONFIGDIR": "/tmp/home/.mpl",
            "IPYTHONDIR": "/tmp/home/.ipython", "JUPYTER_RUNTIME_DIR": "/tmp/home/runtime",
            "TMPDIR": "/tmp", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
"""The kernel's whole environment: nothing of the grader's (tokens, gradebook URL) passes."""
SANDBOX_UID = 1000
CONNECTION_INSIDE = "/run/coursekit/connection.json"
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "coursekit-kernel-"


def bwrap_path() -> str | None:
    """The bubblewrap executable, or None."""
    return shutil.which("bwrap")


# --------------------------------------------------------------------------------------
# cgroups: per-kernel process count and CPU quota (v2 or v1), best effort
# --------------------------------------------------------------------------------------


def _cgroup_dirs(name: str) -> dict:
    """``{controller: directory}`` for a new cgroup ``name`` (not created)."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():  # unified hierarchy (v2)
        return {"unified": CGROUP_ROOT / name}
    return {c: CGROUP_ROOT / c / name for c in ("pids", "cpu")
            if (CGROUP_ROOT / c / "cgroup.procs").exists()}


def cgroup_create(name: str, pids_max: int, cpus: float = 1.0) -> dict:
    """Create the kernel's cgroup(s) with their limits; ``{}`` if the machine has none."""
    dirs = _cgroup_dirs(name)
    made = {}
    try:
        for kind, d in dirs.items():
            d.mkdir()
            made[kind] = d
            if kind == "unified":
                (d / "pids.max").write_text(str(pids_max))
                (d / "cpu.max").write_text(f"{int(cpus * 100000)} 100000")
            elif kind == "pids":
                (d / "pids.max").write_text(str(pids_max))
            elif kind == "cpu":
                (d / "cpu.cfs_period_us").write_text("100000")
                (d / "cpu.cfs_quota_us").write_text(str(int(cpus * 100000)))
    except OSError:
        cgroup_remove(made)
        return {}
    return made


def cgroup_join(groups: dict, pid: int) -> None:
    """Move ``pid`` (and so its future children) into the groups."""
    for d in groups.values():
        (d / "cgroup.procs").write_text(str(pid))


def cgroup_remove(groups: dict) -> None:
    """Kill every process left in the groups and remove them."""
    for attempt in range(200):
        alive = set()
        for d in groups.values():
            try:
                alive |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        alive.discard(os.getpid())
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.002 if attempt < 20 else 0.02)
    for d in groups.values():
        try:
            d.rmdir()
        except OSError:
            pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(tmp_root: str = tempfile.gettempdir()) -> None:
    """Remove the cgroups and scratch folders of launchers that were killed (SIGKILL leaves
    no chance to clean up); their names carry the launcher's pid."""
    for parent in [CGROUP_ROOT, *(CGROUP_ROOT / c for c in ("pids", "cpu"))]:
        for d in parent.glob(CGROUP_PREFIX + "*") if parent.is_dir() else []:
            pid = d.name[len(CGROUP_PREFIX):]
            if pid.isdigit() and not _pid_alive(int(pid)):
                cgroup_remove({"x": d})
    for pattern in ("coursekit-sandbox-*", "coursekit-status-*"):
        for d in Path(tmp_root).glob(pattern):
            pid = d.name.split("-")[2]
            if pid.isdigit() and not _pid_alive(int(pid)):
                shutil.rmtree(d, ignore_errors=True)
    for d in Path(tmp_root).glob("coursekit-ipc-*"):  # a launcher that was SIGKILLed
        try:
            pid = int((d / "launcher.pid").read_text())
        except (OSError, ValueError):
            continue
        if not _pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)


def _cgroups_work() -> bool:
    groups = cgroup_create(f"{CGROUP_PREFIX}probe-{os.getpid()}", 10)
    cgroup_remove(groups)
    return bool(groups)


# --------------------------------------------------------------------------------------
# what is possible here
# --------------------------------------------------------------------------------------


def capabilities() -> dict:
    """What the sandbox enforces on this machine: ``{"mode", "protections", "missing"}``.

    ``mode`` is ``"bwrap"`` (bubblewrap isolation, as root) or ``"limits"`` (rlimits and
    the time limit only), or ``"off"``."""
    if os.environ.get("COURSEKIT_SANDBOX") == "off":
        return {"mode": "off", "protections": [],
                "missing": ["everything: COURSEKIT_SANDBOX=off runs submissions with the "
                            "grader's rights and no limits"]}
    protections = ["rlimits: address space, file size, open files, CPU seconds, no core dumps",
                   "whole-notebook wall-clock limit", "output budget on every output type "
                   "(in the kernel for streams, again by the grader for everything)",
                   "IPC transport: kernel sockets in a private directory (no TCP ports)"]
    missing = []
    wanted = os.environ.get("COURSEKIT_SANDBOX") != "limits"
    if wanted and os.geteuid() == 0 and bwrap_path() and _bwrap_works():
        mode = "bwrap"
        protections += [
            "bubblewrap: minimal filesystem (interpreter, venv and coursekit read-only, "
            "private /tmp, a copy of the submission's own regular files); no course root, "
            "no other checkout, no home directories",
            "cleared environment (allow-list only)",
            "no network (new network namespace)",
            "own user, PID, IPC and UTS namespaces; dies with the grader; new session"]
        if _cgroups_work():
            protections.append("cgroup per kernel: process count and one CPU core; every "
                               "process killed when the kernel ends")
        else:
            missing.append("cgroups (not writable here): the process count is not limited "
                           "per kernel; processes still die with the PID namespace")
    else:
        mode = "limits"
        why = ("COURSEKIT_SANDBOX=limits" if not wanted
               else "not running as root" if os.geteuid() != 0
               else "bubblewrap is not installed (apt-get install bubblewrap)"
               if not bwrap_path() else "bubblewrap cannot create namespaces here")
        missing += [f"filesystem isolation ({why}): the kernel can read and write what "
                    "the grading user can, including source/ and the gradebook",
                    "environment clearing", "network isolation", "PID namespace",
                    "per-kernel process and CPU limits"]
    return {"mode": mode, "protections": protections, "missing": missing}


def _bwrap_works() -> bool:
    try:
        import subprocess

        out = subprocess.run([bwrap_path(), "--unshare-all", "--die-with-parent",
                              "--ro-bind", "/", "/", "true"], capture_output=True, timeout=10)
        return out.returncode == 0
    except (OSError, ValueError):
        return False


def describe(caps=None) -> str:
    """A few lines for the grader's start-up banner."""
    caps = caps or capabilities()
    lines = [f"sandbox mode: {caps['mode']}"]
    lines += [f"  enforced: {p}" for p in caps["protections"]]
    lines += [f"  NOT enforced: {m}" for m in caps["missing"]]
    if caps["mode"] != "bwrap":
        lines.insert(0, "WARNING: the grading sandbox is INCOMPLETE on this machine; "
                        "submissions run with the grader's file access (run as root with "
                        "bubblewrap installed for full isolation).")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# launcher
# --------------------------------------------------------------------------------------


def _needed_paths(kernel_cmd, course_root: str) -> list:
    """Paths the kernel must see: interpreter, prefixes, sys.path, coursekit itself.

    Inside the course root only the coursekit package and the virtual environment
    qualify (never the working directory, which sys.path[0] may be)."""
    import coursekit

    package = os.path.realpath(os.path.dirname(coursekit.__file__))
    prefix = os.path.realpath(sys.prefix)
    paths = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
             os.path.realpath(sys.exec_prefix), package, sys.prefix,
             os.path.realpath(kernel_cmd[0]), os.path.dirname(os.path.realpath(sys.executable))}
    for entry in sys.path:
        if entry and os.path.isabs(entry) and os.path.exists(entry):
            paths.add(os.path.realpath(entry))

    def allowed(p):
        inside = p == course_root or p.startswith(course_root + os.sep)
        return not inside or any(p == q or p.startswith(q + os.sep) for q in (package, prefix))

    chosen = sorted(p for p in paths if os.path.exists(p) and allowed(p)
                    and not p.startswith("/usr/"))
    # drop paths already inside another chosen one
    return [p for p in chosen if not any(p != q and p.startswith(q + os.sep) for q in chosen)]


def copy_submission(workdir: str, dest: Path, max_bytes: int, max_files: int) -> list:
    """Copy the regular files of ``workdir`` (one level, no symlinks, no devices, no FIFOs:
    checked with lstat and opened with O_NOFOLLOW | O_NONBLOCK) into ``dest``."""
    skipped, total, count = [], 0, 0
    if not os.path.isdir(workdir):
        return skipped
    for entry in sorted(os.scandir(workdir), key=lambda e: e.name):
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            skipped.append(entry.name)
            continue
        count += 1
        total += st.st_size
        if count > max_files or total > max_bytes:
            raise OSError(f"submission folder holds more than {max_files} files or "
                          f"{max_bytes} bytes")
        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as src, open(dest / entry.name, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    return skipped


def matplotlib_cache() -> list:
    """Files of a matplotlib font cache built once per environment (by root, under a lock),
    copied into every sandbox's private home: without it each kernel rebuilds the font list
    on its first plot. Empty when matplotlib is missing or the cache cannot be built."""
    import fcntl
    import subprocess

    folder = Path(sys.prefix) / "share" / "coursekit" / "matplotlib-cache"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder.parent / "matplotlib-cache.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not list(folder.glob("fontlist-*.json")):
                subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"],
                               env={**ENV_KEEP, "MPLCONFIGDIR": str(folder)},
                               capture_output=True, timeout=120)
        return sorted(str(p) for p in folder.glob("fontlist-*.json"))
    except (OSError, subprocess.SubprocessError):
        return []


def _bind_args(paths) -> list:
    args = []
    for top in ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in ("/etc/ld.so.cache", "/etc/localtime", "/etc/fonts", "/etc/alternatives"):
        if os.path.exists(etc):
            args += ["--ro-bind", etc, etc]
    for p in paths:
        args += ["--ro-bind", p, p]
    return args


def bwrap_command(kernel_cmd, *, workdir_inside: str, copy_dir: Path, ipc_dir: str | None,
                  connection: str | None, paths, tmp_size: int, home_files=()) -> list:
    """The bubblewrap command line that runs ``kernel_cmd`` (see the module docstring)."""
    cmd = [bwrap_path(), "--die-with-parent", "--new-session", "--unshare-user",
           "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--unshare-pid",
           "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--hostname", "sandbox", "--clearenv"]
    for key, value in ENV_KEEP.items():
        cmd += ["--setenv", key, value]
    # the private /tmp first: binds below it (a venv or course under /tmp) must stay visible
    cmd += ["--size", str(tmp_size), "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    cmd += _bind_args(paths)
    cmd += ["--dir", "/tmp/home", "--dir", ENV_KEEP["MPLCONFIGDIR"],
            "--bind", str(copy_dir), workdir_inside]
    for fd, name in home_files:  # copied into the private home (bwrap --file)
        cmd += ["--file", str(fd), f"{ENV_KEEP['MPLCONFIGDIR']}/{name}"]
    if ipc_dir:
        cmd += ["--bind", ipc_dir, ipc_dir]
    if connection:
        cmd += ["--ro-bind", connection, CONNECTION_INSIDE]
    cmd += ["--remount-ro", "/", "--chdir", workdir_inside, "--", *kernel_cmd]
    return cmd


def _rlimits(args) -> None:
    def setlim(kind, value):
        try:
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass

    if args.memory_limit:
        setlim(resource.RLIMIT_AS, args.memory_limit)
    if args.nproc_limit and os.geteuid() != 0:
        setlim(resource.RLIMIT_NPROC, args.nproc_limit)
    if args.file_size_limit:
        setlim(resource.RLIMIT_FSIZE, args.file_size_limit)
    setlim(resource.RLIMIT_CORE, 0)
    setlim(resource.RLIMIT_NOFILE, 1024)
    cpu = args.cpu_limit or (2 * args.time_limit if args.time_limit else 0)
    if cpu:
        setlim(resource.RLIMIT_CPU, cpu)


def _guard_line(limit: int) -> str:
    return f"import coursekit.grading.kernel_guard as _g; _g.install({int(limit)}); del _g"


def _write_status(fd, data) -> None:
    if fd is None:
        return
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(data).encode())
    except OSError:
        pass


def _conn_arg_index(cmd) -> int | None:
    for i, a in enumerate(cmd):
        if a == "-f" and i + 1 < len(cmd):
            return i + 1
        if a.startswith("--f=") or a.startswith("--connection-file="):
            return i
    return None


def launch(args) -> int:
    """Set up the sandbox and run the kernel command; returns its exit code."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the grader
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print("coursekit sandbox: no kernel command given", file=sys.stderr)
        return 2
    cmd.append(f"--IPKernelApp.exec_lines=[{_guard_line(args.output_limit)!r}]")
    status_fd = os.open(args.status_file, os.O_WRONLY | os.O_CREAT, 0o600) \
        if args.status_file else None
    workdir = os.path.realpath(args.workdir or os.getcwd())
    full = os.geteuid() == 0 and not args.no_namespaces and bwrap_path() is not None
    if args.ipc_dir and os.path.isdir(args.ipc_dir):
        Path(args.ipc_dir, "launcher.pid").write_text(str(os.getpid()))
    scratch, groups = None, {}
    run_cmd, env = cmd, dict(ENV_KEEP)
    if full:
        try:
            remove_stale()
            scratch = Path(tempfile.mkdtemp(prefix=f"coursekit-sandbox-{os.getpid()}-"))
            copy_dir = scratch / "work"
            copy_dir.mkdir()
            skipped = copy_submission(workdir, copy_dir, args.tmp_size // 2, args.max_files)
            if skipped:
                print(f"coursekit sandbox: not copied into the sandbox (not regular files): "
                      f"{', '.join(skipped)}", file=sys.stderr)
            conn_index = _conn_arg_index(cmd)
            connection = None
            if conn_index is not None:
                connection = cmd[conn_index].split("=", 1)[-1]
                cmd[conn_index] = (CONNECTION_INSIDE if cmd[conn_index - 1] == "-f"
                                   else cmd[conn_index].split("=", 1)[0] + "="
                                   + CONNECTION_INSIDE)
            paths = _needed_paths(cmd, os.path.realpath(args.course_root))
            home_files = []
            for cache in matplotlib_cache():
                fd = os.open(cache, os.O_RDONLY)
                os.set_inheritable(fd, True)
                home_files.append((fd, os.path.basename(cache)))
            run_cmd = bwrap_command(cmd, workdir_inside=workdir, copy_dir=copy_dir,
                                    ipc_dir=args.ipc_dir, connection=connection, paths=paths,
                                    tmp_size=args.tmp_size, home_files=home_files)
            groups = cgroup_create(f"{CGROUP_PREFIX}{os.getpid()}", args.nproc_limit)
        except OSError as exc:
            print(f"coursekit sandbox: cannot isolate the kernel ({exc}); refusing to run it. "
                  "Set COURSEKIT_SANDBOX=limits to grade with rlimits only.", file=sys.stderr)
            _write_status(status_fd, {"reason": "sandbox-error", "detail": str(exc)})
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
            return 3
    else:
        env = dict(os.environ)
        for key in ("COURSEKIT_GRADEBOOK", "COURSEKIT_SANDBOX_STATUS", "JPY_SESSION_NAME"):
            env.pop(key, None)
        env.update({k: v for k, v in ENV_KEEP.items() if k not in ("HOME", "PATH", "TMPDIR",
                                                                   "IPYTHONDIR",
                                                                   "JUPYTER_RUNTIME_DIR")})
        print("coursekit sandbox: WARNING: running the kernel with rlimits and a time limit "
              "only (no bubblewrap isolation)", file=sys.stderr)

    start = time.monotonic()
    child = os.fork()
    if child == 0:  # pragma: no cover - exercised through the corpus tests
        try:
            if groups:
                cgroup_join(groups, os.getpid())
            if not args.debug:
                fd = os.open(os.devnull, os.O_WRONLY)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            if not full:
                os.chdir(workdir if os.path.isdir(workdir) else "/tmp")
            _rlimits(args)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.execve(run_cmd[0], run_cmd, env)
        except BaseException as exc:  # noqa: BLE001
            os.write(2, f"coursekit sandbox: exec failed: {exc}\n".encode())
            os._exit(127)

    state = {"reason": None}

    def stop(reason):
        def handler(signum, frame):
            state["reason"] = state["reason"] or reason
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return handler

    def forward_interrupt(signum, frame):
        try:
            os.kill(child, signal.SIGINT)
        except ProcessLookupError:
            pass

    # jupyter_client interrupts by signalling the launcher (our pid is the kernel's pid
    # for it); under bwrap --new-session the kernel is not in our process group
    signal.signal(signal.SIGINT, forward_interrupt if not full else lambda *_: None)
    signal.signal(signal.SIGTERM, stop("terminated"))
    signal.signal(signal.SIGHUP, stop("terminated"))
    signal.signal(signal.SIGALRM, stop("time-limit"))
    if args.time_limit:
        signal.alarm(int(args.time_limit))
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            status = 0
            break
        except InterruptedError:
            continue
    signal.alarm(0)
    code = os.waitstatus_to_exitcode(status)
    cgroup_remove(groups)
    for folder in (scratch, args.ipc_dir):
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    report = {"reason": state["reason"], "exit_code": code,
              "seconds": round(time.monotonic() - start, 3),
              "time_limit": args.time_limit, "memory_limit": args.memory_limit}
    if state["reason"] is None and code < 0:
        sig = -code
        report["reason"] = {signal.SIGXCPU: "cpu-limit", signal.SIGKILL: "killed",
                            signal.SIGSEGV: "crashed"}.get(sig, f"signal {sig}")
    elif state["reason"] is None and code != 0:
        report["reason"] = "exit"
    _write_status(status_fd, report)
    return code if code >= 0 else 128 - code


def main(argv=None) -> int:
    """Command line of the launcher (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m coursekit.grading.sandbox",
                                     description="Run a Jupyter kernel as untrusted code.")
    parser.add_argument("--workdir")
    parser.add_argument("--course-root", required=True)
    parser.add_argument("--ipc-dir", help="private directory of the kernel's IPC sockets")
    parser.add_argument("--status-file")
    parser.add_argument("--debug", action="store_true",
                        help="keep the kernel's stdout/stderr (for diagnosing the sandbox)")
    parser.add_argument("--no-namespaces", action="store_true",
                        help="rlimits and time limit only (loudly reported)")
    for name, value in DEFAULTS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=value)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if os.environ.get("COURSEKIT_SANDBOX") == "limits":
        args.no_namespaces = True
    return launch(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
