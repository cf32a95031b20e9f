"""Run a submission's Jupyter kernel as untrusted code.

``nbgrader_config.py`` sets ``c.Execute.kernel_manager_class`` to
:class:`coursekit.grading.kernel_manager.SandboxKernelManager`, so plain ``nbgrader autograde`` and the course's
``grade`` command both start every kernel through the launcher in this module
(``python -m coursekit.grading.sandbox ... -- <kernel command>``). The launcher:

* **hides the course** (root mode): in a private mount namespace the course root is
  replaced by an empty tmpfs into which only the library (``coursekit/``), the
  virtual environment and a *copy* of the submission's own folder are mapped back;
  gradebook, ``source/``, ``release/``, ``notebooks/``, ``samples/``, other students'
  ``submitted/`` and ``autograded/`` folders, ``tests/`` and ``.git`` are invisible.
  Directories that only root may enter (e.g. ``/root`` holding the interpreter) get
  the same treatment, which also hides Jupyter's connection files of other kernels.
  ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are fresh, size-limited tmpfs mounts;
* **drops privileges** to an unprivileged uid/gid unique to this kernel (no
  supplementary groups), so nothing outside that scratch space is writable;
* **contains processes** in a private PID namespace: when the kernel ends, every
  process it forked ends too;
* **limits resources** with rlimits: address space, number of processes (a fork bomb
  stops there), file size, open files, CPU seconds, no core dumps; and a wall-clock
  limit for the whole notebook, after which the kernel is killed;
* **limits output**: the kernel's stdout/stderr streams to the notebook are cut
  after a byte budget, and its own fd 1/2 go to a file inside the sandbox, not to
  the grader's log.

Root mode needs root (or CAP_SYS_ADMIN). Without it the launcher applies the
rlimits and the time limit only and says so loudly on stderr (the grader's log) and
in :func:`capabilities`, which the ``grade`` command prints at start.

What it does not do: network isolation (the kernel talks to the grader over
loopback TCP). Files that are world-readable outside the course root stay readable.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import stat
import sys
import time
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1

DEFAULTS = dict(time_limit=300, memory_limit=4 * 2**30, nproc_limit=256,
                file_size_limit=64 * 2**20, tmp_size=128 * 2**20, output_limit=2 * 2**20,
                cpu_limit=0)
UID_BASE = 1_200_000
"""Sandbox uids are UID_BASE + (launcher pid mod 100000): unique per live kernel and
far from any real account, so rlimits on processes are per kernel."""

_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                ctypes.c_ulong, ctypes.c_char_p]
        _libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return _libc


def _check(rc, what):
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    _check(_c().mount(source.encode() if source else None, str(target).encode(),
                      fstype.encode() if fstype else None, flags,
                      data.encode() if data else None), f"mount {target}")


def _tmpfs(target, size, mode="0755"):
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(size)},mode={mode}")


def _bind(source, target):
    _mount(str(source), target, None, MS_BIND | MS_REC)


# --------------------------------------------------------------------------------------
# what is possible here
# --------------------------------------------------------------------------------------


def capabilities() -> dict:
    """What the sandbox can enforce on this machine: ``{"mode", "protections", "missing"}``.

    ``mode`` is ``"root"`` (namespaces, uid drop, rlimits, time limit) or ``"limits"``
    (rlimits and time limit only).
    """
    if os.environ.get("COURSEKIT_SANDBOX") == "off":
        return {"mode": "off", "protections": [],
                "missing": ["everything: COURSEKIT_SANDBOX=off runs submissions with the "
                            "grader's rights and no limits"]}
    protections = ["rlimits: memory, processes, file size, open files, CPU",
                   "whole-notebook wall-clock limit", "output budget"]
    missing = []
    if os.environ.get("COURSEKIT_SANDBOX") != "limits" and os.geteuid() == 0 \
            and _namespaces_work():
        mode = "root"
        protections += ["private mount namespace hides the course (only coursekit, the venv "
                        "and a copy of the submission's folder are visible)",
                        "private PID namespace (all child processes die with the kernel)",
                        "unprivileged per-kernel uid (nothing writable outside its scratch)",
                        "size-limited private /tmp, /var/tmp, /dev/shm"]
    else:
        mode = "limits"
        why = ("COURSEKIT_SANDBOX=limits" if os.environ.get("COURSEKIT_SANDBOX") == "limits"
               else "not running as root" if os.geteuid() != 0
               else "mount namespaces unavailable")
        missing += [f"filesystem isolation ({why}): the kernel can read and write what "
                    "the grading user can, including source/ and the gradebook",
                    "privilege drop", "PID namespace"]
    missing.append("network isolation (the kernel talks to the grader over loopback)")
    return {"mode": mode, "protections": protections, "missing": missing}


def _namespaces_work() -> bool:
    """Probe: can a child process create a private mount namespace?"""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            _check(_c().unshare(CLONE_NEWNS), "unshare")
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def describe(caps=None) -> str:
    """A few lines for the grader's start-up banner."""
    caps = caps or capabilities()
    lines = [f"sandbox mode: {caps['mode']}"]
    lines += [f"  enforced: {p}" for p in caps["protections"]]
    lines += [f"  NOT enforced: {m}" for m in caps["missing"]]
    if caps["mode"] != "root":
        lines.insert(0, "WARNING: the grading sandbox is INCOMPLETE on this machine; "
                        "submissions run with the grader's file access (run as root on a "
                        "Linux grading server for full isolation).")
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

    paths = {os.path.realpath(sys.executable), os.path.realpath(kernel_cmd[0]),
             os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
             os.path.realpath(sys.exec_prefix),
             os.path.realpath(os.path.dirname(coursekit.__file__))}
    exe = os.path.abspath(kernel_cmd[0])
    paths.add(exe)
    for entry in sys.path:
        if entry and os.path.isabs(entry) and os.path.exists(entry):
            paths.add(os.path.realpath(entry))
    def allowed(p):
        inside = p == course_root or p.startswith(course_root + os.sep)
        return not inside or any(p == q or p.startswith(q + os.sep) for q in (package, prefix))

    return sorted(p for p in paths if os.path.exists(p) and allowed(p))


def _others_can_enter(path: str) -> bool:
    return bool(os.stat(path).st_mode & stat.S_IXOTH)


def _ancestors(path: str) -> list:
    parts = Path(path).parts
    return [str(Path(*parts[:i])) for i in range(1, len(parts))]


def _overmount(directory: str, keep: set, size=4 * 2**20, mode="0755") -> None:
    """Replace ``directory`` by an empty tmpfs, mapping back only the children in ``keep``.

    The children are held open (O_PATH) across the mount and bound back through
    ``/proc/self/fd``, so no staging directory is needed.
    """
    held = []
    for child in sorted(keep):
        src = os.path.join(directory, child)
        if os.path.lexists(src):
            held.append((child, os.open(src, os.O_PATH), os.path.isdir(src)))
    _tmpfs(directory, size, mode)
    for child, fd, is_dir in held:
        target = Path(directory) / child
        if is_dir:
            target.mkdir()
        else:
            target.touch()
        _bind(f"/proc/self/fd/{fd}", target)
        os.close(fd)


def _children_needed(directory: str, needed: list) -> set:
    """First path components below ``directory`` of the needed paths inside it."""
    out = set()
    for p in needed:
        if p.startswith(directory.rstrip("/") + "/"):
            out.add(Path(p).relative_to(directory).parts[0])
    return out


def _hide_everything_but(course_root: str, needed: list) -> None:
    """Overmount the course root and every directory others cannot enter that lies on
    the way to a needed path, keeping only what the needed paths go through."""
    done = set() if os.path.isdir(course_root) else {course_root}
    while True:
        todo = {}
        for p in needed:
            for anc in _ancestors(p):
                if anc in done:
                    continue
                if anc == course_root or (not _others_can_enter(anc)):
                    child = Path(p).relative_to(anc).parts[0]
                    todo.setdefault(anc, set()).add(child)
        if course_root not in done and course_root not in todo:
            todo[course_root] = set()
        if not todo:
            return
        shallowest = min(todo, key=lambda a: len(Path(a).parts))
        _overmount(shallowest, todo[shallowest])
        done.add(shallowest)


def _rlimits(args) -> None:
    def setlim(kind, value):
        try:
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass

    if args.memory_limit:
        setlim(resource.RLIMIT_AS, args.memory_limit)
    if args.nproc_limit:
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
    _c().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the grader
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print("coursekit sandbox: no kernel command given", file=sys.stderr)
        return 2
    cmd.append(f"--IPKernelApp.exec_lines=[{_guard_line(args.output_limit)!r}]")
    status_fd = None
    if args.status_file:
        status_fd = os.open(args.status_file, os.O_WRONLY | os.O_CREAT, 0o600)
    workdir = os.path.realpath(args.workdir or os.getcwd())
    root_mode = os.geteuid() == 0 and not args.no_namespaces
    uid = UID_BASE + os.getpid() % 100_000
    env = dict(os.environ)
    for key in ("COURSEKIT_GRADEBOOK", "COURSEKIT_SANDBOX_STATUS", "JPY_SESSION_NAME"):
        env.pop(key, None)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               MALLOC_ARENA_MAX="2", MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1")
    if root_mode:
        try:
            needed = _needed_paths(cmd, os.path.realpath(args.course_root))
            conn_index = _conn_arg_index(cmd)
            conn_data = None
            if conn_index is not None:
                conn_path = cmd[conn_index].split("=", 1)[-1]
                conn_data = Path(conn_path).read_bytes()
            files = {}
            if os.path.isdir(workdir):
                total = 0
                for p in sorted(Path(workdir).iterdir()):
                    if p.is_file() and not p.is_symlink():
                        total += p.stat().st_size
                        if total > args.tmp_size // 2:
                            raise OSError(f"submission folder larger than {args.tmp_size // 2}"
                                          " bytes")
                        files[p.name] = p.read_bytes()
            _check(_c().unshare(CLONE_NEWNS | CLONE_NEWPID), "unshare")
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            _overmount("/tmp", _children_needed("/tmp", needed), args.tmp_size, "1777")
            for extra in ("/var/tmp", "/dev/shm"):
                if os.path.isdir(extra):
                    _overmount(extra, _children_needed(extra, needed), 16 * 2**20, "1777")
            scratch = Path(f"/tmp/.sandbox-{uid}")
            home, work = scratch / "home", scratch / "work"
            for d in (scratch, home, work):
                d.mkdir(mode=0o700)
            for name, data in files.items():
                (work / name).write_bytes(data)
            for p in [scratch, home, work, *work.iterdir()]:
                os.chown(p, uid, uid)
            if conn_index is not None:
                target = home / "kernel-connection.json"
                target.write_bytes(conn_data)
                os.chown(target, uid, uid)
                os.chmod(target, 0o600)
                cmd[conn_index] = (str(target) if cmd[conn_index - 1] == "-f"
                                   else cmd[conn_index].split("=", 1)[0] + "=" + str(target))
            for hidden in args.hide:
                if os.path.isdir(hidden):
                    _tmpfs(hidden, 2**20, "0000")
                elif os.path.exists(hidden):
                    _bind("/dev/null", hidden)
            course_root = os.path.realpath(args.course_root)
            _hide_everything_but(course_root, needed)
            if workdir == course_root or workdir.startswith(course_root + os.sep):
                Path(workdir).mkdir(parents=True, exist_ok=True)
                _bind(work, workdir)
            else:
                workdir = str(work)
            env.update(HOME=str(home), MPLCONFIGDIR=str(home / ".mpl"),
                       IPYTHONDIR=str(home / ".ipython"), JUPYTER_RUNTIME_DIR=str(home),
                       TMPDIR="/tmp")
        except OSError as exc:
            print(f"coursekit sandbox: cannot isolate the kernel ({exc}); refusing to run it. "
                  "Set COURSEKIT_SANDBOX=limits to grade with rlimits only.", file=sys.stderr)
            _write_status(status_fd, {"reason": "sandbox-error", "detail": str(exc)})
            return 3
    else:
        print("coursekit sandbox: WARNING: running the kernel with rlimits and a time limit "
              "only (no filesystem isolation, no privilege drop)", file=sys.stderr)

    out_path = f"/tmp/.sandbox-{uid}/kernel-output.log" if root_mode else os.devnull
    if args.debug:
        out_path = None
    start = time.monotonic()
    child = os.fork()
    if child == 0:  # pragma: no cover - exercised through the corpus tests
        try:
            if root_mode:
                _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV)
            if out_path is not None:
                fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.chdir(workdir if os.path.isdir(workdir) else "/tmp")
            _rlimits(args)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if root_mode:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            # after the uid change: changing credentials clears the parent-death signal
            _c().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.execve(cmd[0], cmd, env)
        except BaseException as exc:  # noqa: BLE001
            os.write(2, f"coursekit sandbox: exec failed: {exc}\n".encode())
            os._exit(127)

    state = {"reason": None}

    def on_alarm(signum, frame):
        state["reason"] = "time-limit"
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def on_term(signum, frame):
        state["reason"] = state["reason"] or "terminated"
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGINT, lambda *_: None)  # the kernel gets SIGINT via its group
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    signal.signal(signal.SIGALRM, on_alarm)
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
    parser.add_argument("--hide", action="append", default=[])
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
