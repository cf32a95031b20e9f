"""The grading journal: one row per submission in the gradebook database.

Table ``coursekit_journal`` sits next to nbgrader's tables in the database
:func:`coursekit.grading.gradebook.gradebook_url` names (SQLite or PostgreSQL), written with
SQLAlchemy Core. Every write is one transaction that inserts or updates one row (an upsert
on the primary key ``(student, assignment)``), so several grading processes or machines
share one journal and never overwrite each other's rows, as the old ``.grading-state.json``
(one file replaced whole on every write) did.

A row says what the last grading of that submission ended with:

=========== ===========================================================================
student     nbgrader student id (primary key, with ``assignment``)
assignment  nbgrader assignment id
status      ``graded``, ``timeout``, ``error`` or ``rejected``
reason      why, for anything but ``graded`` (never a silent 0)
sha256      hash of the submission's files when it was graded (a changed file regrades)
scored      the gradebook holds a real score for it (``graded``, or single cells timed out)
machinery   the grader failed, not the student (a sandbox that did not start): regraded
retried     graded a second time at the end of the run
seconds     wall time of the grading
worker      ``host:pid`` of the process that graded it
updated     when the row was written (UTC)
=========== ===========================================================================

The interface is small on purpose (:meth:`Journal.entries`, :meth:`Journal.record`,
:meth:`Journal.forget`, :func:`needs_grading`): the parallel grader calls it from its
driver, and a distributed worker (Dask) can call the same :meth:`Journal.record` with
nothing but the URL.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import time
from pathlib import Path

from sqlalchemy import (Boolean, Column, DateTime, Float, MetaData, String, Table, Text,
                        delete, inspect, select)
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from . import gradebook as gbmod

TABLE = "coursekit_journal"
LEGACY_FILE = ".grading-state.json"
STATUSES = ("graded", "timeout", "error", "rejected")

metadata = MetaData()
journal_table = Table(
    TABLE, metadata,
    Column("student", String(128), primary_key=True),
    Column("assignment", String(128), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("reason", Text, nullable=False, default=""),
    Column("sha256", String(64), nullable=False, default=""),
    Column("scored", Boolean, nullable=False, default=False),
    Column("machinery", Boolean, nullable=False, default=False),
    Column("retried", Boolean, nullable=False, default=False),
    Column("seconds", Float, nullable=False, default=0.0),
    Column("worker", String(255), nullable=False, default=""),
    Column("updated", DateTime(timezone=True), nullable=False),
)
_FIELDS = ("status", "reason", "sha256", "scored", "machinery", "retried", "seconds")


def worker_id() -> str:
    """``host:pid`` of this process (who wrote a journal row)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def needs_grading(entry: dict | None, digest: str, have_output) -> bool:
    """Whether a submission whose files hash to ``digest`` must be graded (again).

    Done means: journaled with the same hash, not failed for the grader's own reasons, and
    either ``timeout``/``error`` (the student's outcome stands; ``--regrade`` forces it) or
    ``graded`` with its result still there (``have_output(entry)``, checked last: the
    grader looks for the autograded notebook when this machine graded it, and in the
    gradebook when another machine did)."""
    if not entry or entry.get("sha256") != digest or entry.get("machinery"):
        return True
    if entry.get("status") in ("timeout", "error"):
        return False
    return not (entry.get("status") == "graded" and have_output(entry))


def host_of(entry: dict) -> str:
    """The host that wrote a journal entry ('' when unknown, e.g. migrated)."""
    worker = str(entry.get("worker") or "")
    return worker.rpartition(":")[0] if ":" in worker else ""


def _row_to_entry(row) -> dict:
    m = row._mapping
    updated = m["updated"]
    return {"status": m["status"], "reason": m["reason"] or "", "sha256": m["sha256"] or "",
            "scored": bool(m["scored"]), "machinery": bool(m["machinery"]),
            "retried": bool(m["retried"]), "seconds": float(m["seconds"] or 0.0),
            "worker": m["worker"] or "",
            "updated": updated.isoformat() if hasattr(updated, "isoformat") else str(updated)}


class Journal:
    """The journal table of one gradebook database.

    ``create=False`` opens it read-only in spirit: a missing table (or SQLite file) reads
    as an empty journal and nothing is created (formgrader's banner)."""

    def __init__(self, url: str, create: bool = True):
        self.url = url
        self.engine = gbmod.engine(url)
        self._ready = False
        if create:
            self._create()

    # ---------------------------------------------------------------- table
    def _create(self) -> None:
        """Create the table if it is missing. In a brand-new database nbgrader's own
        tables come first: nbgrader stamps its schema version only into a database that
        has no table at all, and must not mistake ours for an older gradebook."""
        if self._ready:
            return
        gbmod.ensure_table(self.url, metadata, TABLE)
        self._ready = True

    def _exists(self) -> bool:
        if self._ready:
            return True
        path = gbmod.sqlite_path(self.url)
        if path is not None and not path.exists():
            return False
        try:
            self._ready = inspect(self.engine).has_table(TABLE)
        except OperationalError as exc:
            raise gbmod.unavailable(self.url, exc) from None
        return self._ready

    # ---------------------------------------------------------------- reads
    def entries(self, pairs=None) -> dict:
        """``{(student, assignment): entry}`` for every row (or only ``pairs``)."""
        if not self._exists():
            return {}
        with self.engine.connect() as conn:
            rows = conn.execute(select(journal_table)).fetchall()
        out = {(r._mapping["student"], r._mapping["assignment"]): _row_to_entry(r)
               for r in rows}
        if pairs is not None:
            wanted = set(map(tuple, pairs))
            out = {k: v for k, v in out.items() if k in wanted}
        return out

    def get(self, student: str, assignment: str) -> dict | None:
        """One submission's entry, or None."""
        if not self._exists():
            return None
        t = journal_table
        with self.engine.connect() as conn:
            row = conn.execute(select(t).where(t.c.student == student,
                                               t.c.assignment == assignment)).first()
        return _row_to_entry(row) if row is not None else None

    # ---------------------------------------------------------------- writes
    def _upsert(self, conn, values: dict, overwrite: bool) -> None:
        name = self.engine.dialect.name
        t = journal_table
        changes = {k: v for k, v in values.items() if k not in ("student", "assignment")}
        if name in ("sqlite", "postgresql"):
            if name == "sqlite":
                from sqlalchemy.dialects.sqlite import insert
            else:
                from sqlalchemy.dialects.postgresql import insert
            stmt = insert(t).values(**values)
            stmt = (stmt.on_conflict_do_update(index_elements=[t.c.student, t.c.assignment],
                                               set_=changes) if overwrite
                    else stmt.on_conflict_do_nothing(index_elements=[t.c.student,
                                                                     t.c.assignment]))
            conn.execute(stmt)
            return
        if name in ("mysql", "mariadb"):
            from sqlalchemy.dialects.mysql import insert

            stmt = insert(t).values(**values)
            stmt = (stmt.on_duplicate_key_update(**changes) if overwrite
                    else stmt.prefix_with("IGNORE"))
            conn.execute(stmt)
            return
        # any other database: update, else insert (the primary key serializes racers)
        key = (t.c.student == values["student"]) & (t.c.assignment == values["assignment"])
        if overwrite and conn.execute(t.update().where(key).values(**changes)).rowcount:
            return
        if conn.execute(select(t.c.student).where(key)).first() is None:
            conn.execute(t.insert().values(**values))

    def _write(self, values: dict, overwrite: bool = True) -> None:
        self._create()
        for attempt in range(6):
            try:
                with self.engine.begin() as conn:
                    self._upsert(conn, values, overwrite)
                return
            except IntegrityError:
                if attempt == 5 or not overwrite:
                    if not overwrite:
                        return  # someone else's row is already there: theirs stands
                    raise
            except OperationalError as exc:  # SQLite: locked past the 30 s wait
                if attempt == 5 or "locked" not in str(exc).lower():
                    raise gbmod.unavailable(self.url, exc) from None
            except DBAPIError as exc:
                if attempt == 5 or not getattr(exc, "connection_invalidated", False):
                    raise
            time.sleep(0.1 * 2 ** attempt)

    def record(self, student: str, assignment: str, entry: dict,
               worker: str | None = None) -> dict:
        """Write one submission's outcome (one transaction, insert or replace); returns the
        entry as stored."""
        status = entry.get("status")
        if status not in STATUSES:
            raise ValueError(f"status={status!r}: journal statuses are {STATUSES}")
        values = {"student": student, "assignment": assignment, "status": status,
                  "reason": str(entry.get("reason") or ""),
                  "sha256": str(entry.get("sha256") or ""),
                  "scored": bool(entry.get("scored", status == "graded")),
                  "machinery": bool(entry.get("machinery", False)),
                  "retried": bool(entry.get("retried", False)),
                  "seconds": float(entry.get("seconds") or 0.0),
                  "worker": str(worker or entry.get("worker") or worker_id())[:255],
                  "updated": dt.datetime.now(dt.timezone.utc)}
        self._write(values)
        out = {k: values[k] for k in (*_FIELDS, "worker")}
        out["updated"] = values["updated"].isoformat()
        return out

    def forget(self, pairs) -> int:
        """Delete the rows of ``pairs`` (``--regrade``); how many were there."""
        pairs = list(pairs)
        if not pairs or not self._exists():
            return 0
        t = journal_table
        n = 0
        with self.engine.begin() as conn:
            for student, assignment in pairs:
                n += conn.execute(delete(t).where(t.c.student == student,
                                                  t.c.assignment == assignment)).rowcount
        return n

    # ---------------------------------------------------------------- migration
    def migrate_legacy(self, root: Path, out=print) -> int:
        """Move an old ``<root>/.grading-state.json`` into the table (rows already in the
        table win) and rename the file ``….migrated`` (``….ignored`` when unreadable),
        with a one-line notice. How many entries were imported."""
        path = Path(root) / LEGACY_FILE
        if not path.is_file():
            return 0
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(state, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            target = path.with_name(LEGACY_FILE + ".ignored")
            _rename(path, target)
            out(f"[journal] ignored the unreadable old journal {LEGACY_FILE} ({exc}); kept "
                f"as {target.name}; anything it listed is graded again")
            return 0
        n = 0
        for key, entry in sorted(state.items()):
            if not isinstance(entry, dict) or "/" not in str(key) or entry.get(
                    "status") not in STATUSES:
                continue
            student, assignment = str(key).split("/", 1)
            values = {"student": student, "assignment": assignment,
                      "status": entry["status"], "reason": str(entry.get("reason") or ""),
                      "sha256": str(entry.get("sha256") or ""),
                      "scored": bool(entry.get("scored", entry["status"] == "graded")),
                      "machinery": bool(entry.get("machinery", False)),
                      "retried": bool(entry.get("retried", False)),
                      "seconds": float(entry.get("seconds") or 0.0),
                      "worker": f"migrated from {LEGACY_FILE}",
                      "updated": dt.datetime.now(dt.timezone.utc)}
            self._write(values, overwrite=False)
            n += 1
        target = path.with_name(LEGACY_FILE + ".migrated")
        _rename(path, target)
        out(f"[journal] moved {n} entr{'y' if n == 1 else 'ies'} of the old {LEGACY_FILE} "
            f"into the gradebook's {TABLE} table ({gbmod.mask(self.url)}); the file is now "
            f"{target.name}")
        return n


def _rename(path: Path, target: Path) -> None:
    try:
        os.replace(path, target)
    except FileNotFoundError:  # another process migrated it first
        pass


def open_journal(root: Path, out=print, create: bool = True) -> Journal:
    """The journal of the course at ``root`` (its gradebook URL), an old
    ``.grading-state.json`` migrated first (when ``create``)."""
    jr = Journal(gbmod.gradebook_url(root), create=create)
    if create:
        jr.migrate_legacy(root, out)
    return jr
