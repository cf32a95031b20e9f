"""The gradebook database: one URL for the whole course (DESIGN.md §8).

:func:`gradebook_url` is the only place that turns the course's setting into an SQLAlchemy
URL. ``nbgrader_config.py`` (and so plain ``nbgrader``), student registration, the
registered-assignment check, the report, the grading journal and
``build.check_up_to_date`` all call it, so they always talk to the same database.

The setting, first found wins:

1. ``COURSEKIT_GRADEBOOK`` in the environment;
2. ``gradebook = "..."`` under ``[tool.coursekit]`` in the course's ``pyproject.toml``;
3. ``<course root>/gradebook.db``.

A value is either a full SQLAlchemy URL (``sqlite:////abs/path.db``,
``postgresql+psycopg://user@host/db``) or a plain file path, which keeps meaning an SQLite
file (as it always did). Relative paths, plain or in an ``sqlite:///`` URL, are taken from
the course root, so every working directory sees the same file. ``postgresql://`` without
a driver means psycopg 3 (the ``postgres`` extra), not SQLAlchemy's default psycopg2.

Nothing here imports nbgrader at module level: ``nbgrader_config.py`` imports this file.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import warnings
from pathlib import Path

ENV = "COURSEKIT_GRADEBOOK"
DEFAULT_FILE = "gradebook.db"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
# The DBAPI module a dialect imports -> the pyproject extra that installs it.
_EXTRAS = {"psycopg": "postgres", "psycopg_binary": "postgres", "psycopg_c": "postgres"}
_ENGINES: dict = {}


class GradebookURLError(ValueError):
    """The gradebook setting is not a usable URL, or its driver is not installed."""


class GradebookUnavailable(RuntimeError):
    """The gradebook database could not be reached (server down, no such database)."""


def _configured(root: Path) -> str:
    """``[tool.coursekit] gradebook`` of the course's pyproject.toml ('' when unset)."""
    path = Path(root) / "pyproject.toml"
    if not path.is_file():
        return ""
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    return str(data.get("tool", {}).get("coursekit", {}).get("gradebook", "") or "").strip()


def setting(root) -> tuple:
    """``(value, where)``: the raw gradebook setting and where it came from."""
    value = os.environ.get(ENV, "").strip()
    if value:
        return value, f"${ENV}"
    value = _configured(Path(root))
    if value:
        return value, "[tool.coursekit] gradebook in pyproject.toml"
    return "", "default"


def _absolute(path: str, root) -> str:
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(os.path.abspath(str(root)), path)
    return os.path.abspath(path)


def gradebook_url(root, value: str | None = None) -> str:
    """The course's gradebook as an SQLAlchemy URL string (see the module docstring).

    ``value`` overrides the setting (the environment, then pyproject.toml). Raises
    :class:`GradebookURLError` for a URL SQLAlchemy cannot parse or an in-memory SQLite
    database (each nbgrader process would get its own, empty one).
    """
    where = "given"
    if value is None:
        value, where = setting(root)
    value = (value or "").strip()
    if not value:
        return "sqlite:///" + _absolute(DEFAULT_FILE, root)
    if not _SCHEME.match(value):  # a plain path: an SQLite file, as it always was
        return "sqlite:///" + _absolute(value, root)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(value)
    except (ArgumentError, ValueError) as exc:
        raise GradebookURLError(f"gradebook URL {mask(value)!r} ({where}) is not a valid "
                                f"SQLAlchemy URL: {exc}") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:" or url.database.startswith(
                "file::memory:"):
            raise GradebookURLError(
                f"gradebook URL {value!r} ({where}) is an in-memory SQLite database: every "
                "nbgrader process would see its own empty one; give a file "
                "(sqlite:////absolute/path/gradebook.db or a plain path)")
        url = url.set(database=_absolute(url.database, root))
    return url.render_as_string(hide_password=False)


def mask(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparseable URL: hide everything after '//'
        return re.sub(r"//[^@/]*@", "//***@", str(url))


def backend(url: str) -> str:
    """``sqlite``, ``postgresql``, ...: the database kind of ``url``."""
    from sqlalchemy.engine import make_url

    return make_url(url).get_backend_name()


def sqlite_path(url: str) -> Path | None:
    """The file of an SQLite URL (None for any other database)."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    return Path(u.database) if u.get_backend_name() == "sqlite" and u.database else None


def _driver_error(url: str, exc: BaseException) -> GradebookURLError:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    missing = getattr(exc, "name", None) or ""
    if not missing:
        m = re.search(r"No module named '([^']+)'|import of (\S+) halted", str(exc))
        missing = (m.group(1) or m.group(2)) if m else ""
    top = missing.split(".")[0]
    pip = f"{sys.executable} -m pip install -e '.[postgres]' (in the course root)"
    if _EXTRAS.get(top) == "postgres":
        how = f"install the course's 'postgres' extra: {pip}"
    elif u.get_backend_name() == "postgresql":
        how = (f"the course's 'postgres' extra installs psycopg 3: write postgresql+psycopg://"
               f"... (or postgresql://...) and run {pip}, or install {top!r} yourself")
    else:
        how = f"install it into the environment of {sys.executable}"
    return GradebookURLError(
        f"gradebook URL {mask(url)}: its database driver {top or u.get_driver_name()!r} is "
        f"not installed ({exc}); {how}")


def check_driver(url: str) -> None:
    """Raise :class:`GradebookURLError` (one clear message naming the extra to install)
    when SQLAlchemy has no dialect for ``url`` or its DBAPI module cannot be imported."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import NoSuchModuleError

    u = make_url(url)
    try:
        dialect = u.get_dialect()
    except NoSuchModuleError:
        name = u.drivername.replace("+", ".")
        if u.get_backend_name() in ("sqlite", "postgresql", "mysql", "mssql", "oracle"):
            raise GradebookURLError(
                f"gradebook URL {mask(url)}: SQLAlchemy has no driver {u.get_driver_name()!r} "
                f"for {u.get_backend_name()}; use e.g. postgresql+psycopg://USER@HOST/DB "
                "(psycopg 3, the course's 'postgres' extra)") from None
        raise GradebookURLError(
            f"gradebook URL {mask(url)}: unknown database {name!r}; use a file path, "
            "sqlite:////ABSOLUTE/PATH.db or postgresql+psycopg://USER@HOST/DB") from None
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        raise _driver_error(url, exc) from None


def engine(url: str):
    """A shared SQLAlchemy engine for ``url`` in this process (driver checked first).

    SQLite: no pooled connections (nothing stays open on a file another process may
    delete) and a 30 s wait for a lock held by another writer (nbgrader's workers)."""
    key = (os.getpid(), url)
    eng = _ENGINES.get(key)
    if eng is not None:
        return eng
    check_driver(url)
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    if backend(url) == "sqlite":
        eng = create_engine(url, poolclass=NullPool, connect_args={"timeout": 30})
    else:
        eng = create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=4)
    _ENGINES[key] = eng
    return eng


def dispose(url: str | None = None) -> None:
    """Close this process's engine(s) (all of them without ``url``)."""
    for key in [k for k in _ENGINES if url is None or k[1] == url]:
        _ENGINES.pop(key).dispose()


def unavailable(url: str, exc: BaseException) -> GradebookUnavailable:
    """A one-line error for a database that could not be reached."""
    first = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or ["?"])[0]
    return GradebookUnavailable(f"cannot open the gradebook {mask(url)}: {first}")


def exists(url: str) -> bool:
    """Whether nbgrader's tables exist in the gradebook (an SQLite file is not created)."""
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return False
    from sqlalchemy import inspect
    from sqlalchemy.exc import OperationalError

    try:
        return inspect(engine(url)).has_table("assignment")
    except OperationalError as exc:
        raise unavailable(url, exc) from None


def submitted_pairs(url: str) -> set:
    """``{(student, assignment)}`` that nbgrader's gradebook holds a graded submission of
    (its ``submitted_assignment`` table; empty when there is no gradebook yet)."""
    if not exists(url):
        return set()
    from sqlalchemy import text

    with engine(url).connect() as conn:
        rows = conn.execute(text(
            "SELECT s.student_id, a.name FROM submitted_assignment s "
            "JOIN assignment a ON s.assignment_id = a.id")).fetchall()
    return {(r[0], r[1]) for r in rows}


def alembic_on_path() -> None:
    """Make nbgrader's ``alembic`` executable findable: nbgrader runs it from ``PATH`` the
    first time it creates a gradebook, and a venv that is not activated (``.venv/bin/nbgrader
    ...``) used to crash there with ``FileNotFoundError: 'alembic'``. Puts this
    interpreter's ``bin`` folder first on ``PATH`` when ``alembic`` is not found."""
    bindir = os.path.dirname(sys.executable)
    path = os.environ.get("PATH", "")
    if shutil.which("alembic", path=path):
        return
    if os.path.exists(os.path.join(bindir, "alembic")) and bindir not in path.split(os.pathsep):
        os.environ["PATH"] = bindir + (os.pathsep + path if path else "")


def open_gradebook(url: str):
    """nbgrader's :class:`~nbgrader.api.Gradebook` on ``url`` (use it as a context
    manager); created with nbgrader's tables when the database is empty."""
    warnings.filterwarnings("ignore", message=".*not in session.*")
    check_driver(url)
    alembic_on_path()
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import OperationalError

    if shutil.which("alembic") is None and not exists(url):
        raise GradebookUnavailable(
            f"nbgrader needs its `alembic` executable to create the gradebook {mask(url)}, "
            f"and it is not on PATH nor next to {sys.executable}; install nbgrader into "
            "this environment (pip install -e '.[course]')")
    try:
        return Gradebook(url)
    except OperationalError as exc:
        raise unavailable(url, exc) from None


def config_db_url(root) -> str:
    """For ``nbgrader_config.py``: the gradebook URL, with its driver checked and
    ``alembic`` made findable. A bad setting stops nbgrader with one clear line (an
    exception in a config file would only be logged by traitlets, and nbgrader would go on
    with an incomplete configuration)."""
    try:
        url = gradebook_url(root)
        check_driver(url)
    except GradebookURLError as exc:
        print(f"nbgrader_config.py: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    alembic_on_path()
    return url


def ensure_table(url: str, metadata, name: str) -> None:
    """Create the course's table ``name`` (from ``metadata``) in the gradebook if missing.

    In a brand-new database nbgrader's own tables come first: nbgrader stamps its schema
    version only into a database that has no table at all, and must not mistake ours for
    an older gradebook. Another process may create the table between our check and our
    CREATE: that is not an error."""
    import time

    from sqlalchemy import inspect
    from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

    eng = engine(url)
    try:
        names = inspect(eng).get_table_names()
    except OperationalError as exc:
        raise unavailable(url, exc) from None
    if name in names:
        return
    if not names:
        open_gradebook(url).close()
    for attempt in range(5):
        try:
            metadata.create_all(eng, checkfirst=True)
            return
        except (IntegrityError, ProgrammingError, OperationalError):
            if inspect(eng).has_table(name):
                return
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))
