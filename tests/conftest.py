"""Shared fixtures: the course root and scratch copies of the course for grading tests."""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COURSE_FILES = ("nbgrader_config.py", "pyproject.toml", "notebooks", "source", "release",
                "samples")

os.environ.setdefault("MPLBACKEND", "Agg")


def copy_course(dest: Path) -> Path:
    """A scratch copy of the course (no gradebook, no submissions)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COURSE_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        else:
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A scratch course directory with its own gradebook (COURSEKIT_GRADEBOOK)."""
    root = copy_course(tmp_path / "course")
    monkeypatch.setenv("COURSEKIT_GRADEBOOK", str(root / "gradebook.db"))
    return root


# --------------------------------------------------------------------------- PostgreSQL

NO_POSTGRES = "COURSEKIT_NO_POSTGRES"


class PostgresServer:
    """A throwaway PostgreSQL server: its own data directory in a temporary folder, no TCP
    (a unix socket in that folder, named after a free port), trust authentication.
    Started by the tests themselves, as the `postgres` user when they run as root."""

    def __init__(self):
        import glob
        import socket
        import subprocess
        import tempfile

        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                       key=lambda p: (p.split("/")[-3] != "15", p))
        if not found and shutil.which("initdb"):
            found = [shutil.which("initdb")]
        if not found:
            raise RuntimeError(
                "PostgreSQL server binaries (initdb, pg_ctl) were not found under "
                "/usr/lib/postgresql/*/bin: install Debian's postgresql-15 (.ci/run does, as "
                f"root), or set {NO_POSTGRES}=1 to skip these tests on a developer machine")
        self.bindir = os.path.dirname(found[0])
        self.prefix = []
        if os.geteuid() == 0:
            if not shutil.which("runuser"):
                raise RuntimeError("running as root without `runuser`: cannot start "
                                   "PostgreSQL as the postgres user")
            import pwd

            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root and there is no `postgres` user to run "
                                   "PostgreSQL as (install Debian's postgresql-15)") from None
            self.prefix = ["runuser", "-u", "postgres", "--"]
        self.dir = tempfile.mkdtemp(prefix="ck-pg-")
        if self.prefix:
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.data = os.path.join(self.dir, "data")
        with socket.socket() as s:  # a free port number: the socket file's name
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]

        def run(*cmd):
            proc = subprocess.run(self.prefix + list(cmd), capture_output=True, text=True,
                                  timeout=120, cwd=self.dir)
            if proc.returncode:
                log = os.path.join(self.dir, "server.log")
                tail = open(log).read()[-2000:] if os.path.exists(log) else ""
                raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                                   f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}{tail}")
            return proc

        self.run = run
        run(os.path.join(self.bindir, "initdb"), "-D", self.data, "-A", "trust",
            "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses='' -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=60")
        run(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-o", opts,
            "-l", os.path.join(self.dir, "server.log"), "-w", "-t", "60", "start")
        self.version = run(os.path.join(self.bindir, "postgres"), "--version").stdout.strip()

    def url(self, database: str = "postgres") -> str:
        """A psycopg 3 URL of ``database`` on this server (over its unix socket)."""
        return (f"postgresql+psycopg://postgres@/{database}?host={self.dir}"
                f"&port={self.port}")

    def create_database(self, name: str) -> str:
        """A new, empty database; its URL."""
        import psycopg

        with psycopg.connect(host=self.dir, port=self.port, user="postgres",
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self):
        try:
            self.run(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "immediate",
                     "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server for the session (see :class:`PostgresServer`).

    Fails (never skips) when it cannot start, unless COURSEKIT_NO_POSTGRES=1 says this
    developer machine has no PostgreSQL: in CI these tests run."""
    if os.environ.get(NO_POSTGRES) == "1":
        pytest.skip(f"{NO_POSTGRES}=1: the PostgreSQL tests are skipped on this machine")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail("psycopg (v3) is not installed: `pip install -e '.[course]'` installs it "
                    f"(or set {NO_POSTGRES}=1 to skip the PostgreSQL tests)", pytrace=False)
    try:
        server = PostgresServer()
    except (RuntimeError, OSError) as exc:
        pytest.fail(f"cannot start a throwaway PostgreSQL server: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()
