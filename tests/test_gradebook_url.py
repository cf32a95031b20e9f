"""The gradebook URL and the grading journal (issue #16): any SQLAlchemy URL, one function
for it everywhere, the journal as a table in the gradebook, and the same grades on SQLite
and on a throwaway PostgreSQL server started by the tests (tests/conftest.py)."""

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from coursekit.grading import authoring, build, gradebook, grader, journal, pipeline

from .conftest import ROOT, copy_course

AID = "02_memory_calculator"
STUDENTS = ("alice", "bob", "carol")


# --------------------------------------------------------------------------- the URL


def test_url_forms(tmp_path, monkeypatch):
    root = tmp_path / "course"
    monkeypatch.delenv(gradebook.ENV, raising=False)
    (root / "sub").mkdir(parents=True)
    assert gradebook.gradebook_url(root) == f"sqlite:///{root}/gradebook.db"
    # a plain path keeps meaning an SQLite file; relative ones are the course root's
    assert gradebook.gradebook_url(root, "/srv/g.db") == "sqlite:////srv/g.db"
    assert gradebook.gradebook_url(root, "g.db") == f"sqlite:///{root}/g.db"
    assert gradebook.gradebook_url(root, "sqlite:///g.db") == f"sqlite:///{root}/g.db"
    assert gradebook.gradebook_url(root, "sqlite:////srv/g.db") == "sqlite:////srv/g.db"
    # the bug: postgresql://... became sqlite:///postgresql://...
    assert gradebook.gradebook_url(root, "postgresql://u:pw@db.example/course") == \
        "postgresql+psycopg://u:pw@db.example/course"
    assert gradebook.gradebook_url(root, "postgresql+psycopg://u@h:5433/c") == \
        "postgresql+psycopg://u@h:5433/c"
    # the environment wins over pyproject.toml, which wins over the default
    (root / "pyproject.toml").write_text('[tool.coursekit]\ngradebook = "cfg.db"\n')
    assert gradebook.gradebook_url(root) == f"sqlite:///{root}/cfg.db"
    monkeypatch.setenv(gradebook.ENV, "postgresql://u@h/env")
    assert gradebook.gradebook_url(root) == pipeline.db_url(root) == \
        "postgresql+psycopg://u@h/env"
    assert gradebook.mask("postgresql+psycopg://u:secret@h/c") == \
        "postgresql+psycopg://u:***@h/c"


@pytest.mark.parametrize("value,match", [
    ("sqlite://", "in-memory SQLite"),
    ("sqlite:///:memory:", "in-memory SQLite"),
    ("nosuchdb://u@h/c", "unknown database 'nosuchdb'"),
    ("postgresql+nodriver://u:secret@h/c", "no driver 'nodriver' for postgresql"),
    ("postgresql+psycopg2://u:secret@h/c",
     r"driver 'psycopg2' is not installed.*'postgres' extra.*pip install -e '\.\[postgres\]'"),
])
def test_bad_url_gives_one_clear_error(tmp_path, value, match):
    with pytest.raises(gradebook.GradebookURLError, match=match) as err:
        gradebook.check_driver(gradebook.gradebook_url(tmp_path, value))
    assert "secret" not in str(err.value)


def test_missing_psycopg_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if psycopg were not installed
    url = gradebook.gradebook_url(tmp_path, "postgresql://teacher:secret@h/course")
    with pytest.raises(gradebook.GradebookURLError) as err:
        gradebook.engine(url)
    msg = str(err.value)
    assert "'psycopg' is not installed" in msg and "pip install -e '.[postgres]'" in msg
    assert "secret" not in msg and "\n" not in msg


def test_bad_url_stops_the_cli_and_plain_nbgrader(tmp_path):
    """One line on stderr, exit 2, no stray gradebook.db (course CLI and plain nbgrader:
    an exception in nbgrader_config.py would only be logged by traitlets)."""
    root = copy_course(tmp_path / "course")
    env = build.nbgrader_env({gradebook.ENV: "postgresql+psycopg2://t:secret@127.0.0.1/c"})
    cli = subprocess.run([sys.executable, "-m", "coursekit.grading", "--root", str(root),
                          "report"], env=env, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 2, cli.stdout + cli.stderr
    assert "pip install -e '.[postgres]'" in cli.stderr and "secret" not in cli.stderr
    nbg = subprocess.run([sys.executable, "-m", "nbgrader", "db", "student", "list"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert nbg.returncode == 2, nbg.stdout + nbg.stderr
    assert "nbgrader_config.py: gradebook URL" in nbg.stderr
    assert "'.[postgres]'" in nbg.stderr
    assert not (root / "gradebook.db").exists()
    assert not any(root.rglob("postgresql*"))


def test_plain_nbgrader_without_an_activated_venv(tmp_path):
    """nbgrader runs `alembic` from PATH when it creates a gradebook: nbgrader_config.py
    finds it next to the interpreter when the venv's bin is not on PATH."""
    root = copy_course(tmp_path / "course")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env["PATH"] = "/usr/bin:/bin"
    env[gradebook.ENV] = str(root / "gradebook.db")
    proc = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "db", "student",
                           "list"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "0 students" in proc.stdout
    assert (root / "gradebook.db").exists()


# --------------------------------------------------------------------------- the journal


@pytest.fixture(params=["sqlite", "postgresql"])
def journal_url(request, tmp_path):
    """An empty gradebook of each kind."""
    if request.param == "sqlite":
        return gradebook.gradebook_url(tmp_path, str(tmp_path / "gradebook.db"))
    server = request.getfixturevalue("postgres_server")
    return server.create_database(f"journal_{uuid.uuid4().hex[:12]}")


WRITER = textwrap.dedent("""
    import sys, time
    from coursekit.grading.journal import Journal
    url, me, start, n = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    jr = Journal(url)
    time.sleep(max(0.0, start - time.time()))
    for i in range(n):
        jr.record(f"{me}{i:03d}", "01_x", {"status": "graded", "sha256": me * 8,
                  "seconds": i}, worker=f"{me}-host:{i}")
        jr.record(f"shared{i:03d}", "01_x", {"status": "error", "reason": f"by {me}",
                  "sha256": me * 8}, worker=f"{me}-host:{i}")
""")


def test_two_concurrent_journal_writers_lose_nothing(journal_url):
    """Two processes (two machines) write the journal at the same moment: every row of
    each is there, and a row both wrote is one writer's whole row, never a mix."""
    journal.Journal(journal_url)  # the table exists before the race (the grader's order)
    n = 40
    start = time.time() + 2.5
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, journal_url, me, str(start),
                               str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT)
             for me in ("a", "b")]
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-3000:]
    entries = journal.Journal(journal_url, create=False).entries()
    assert len(entries) == 3 * n
    for me in ("a", "b"):
        for i in range(n):
            e = entries[(f"{me}{i:03d}", "01_x")]
            assert (e["status"], e["sha256"], e["seconds"], e["worker"]) == (
                "graded", me * 8, i, f"{me}-host:{i}")
    for i in range(n):
        e = entries[(f"shared{i:03d}", "01_x")]
        me = e["reason"][-1]
        assert me in "ab" and e["sha256"] == me * 8 and e["worker"] == f"{me}-host:{i}"


def test_journal_table_and_old_json_migration(tmp_path, monkeypatch):
    root = tmp_path / "course"
    root.mkdir()
    monkeypatch.setenv(gradebook.ENV, str(root / "gradebook.db"))
    (root / journal.LEGACY_FILE).write_text(json.dumps({
        "alice/01_x": {"status": "graded", "reason": "", "scored": True, "sha256": "aa",
                       "seconds": 1.5},
        "bob/01_x": {"status": "timeout", "reason": "loop", "sha256": "bb"},
        "junk": "not an entry"}))
    lines = []
    jr = journal.open_journal(root, out=lines.append)
    assert len(lines) == 1 and "moved 2 entries" in lines[0] and "coursekit_journal" in lines[0]
    assert not (root / journal.LEGACY_FILE).exists()
    assert (root / (journal.LEGACY_FILE + ".migrated")).exists()
    # next to nbgrader's tables (created first: nbgrader stamps its schema version only
    # into an empty database)
    names = set(sa.inspect(gradebook.engine(jr.url)).get_table_names())
    assert {"coursekit_journal", "assignment", "submitted_assignment", "alembic_version"} <= names
    state = grader.load_state(root)
    assert state["alice/01_x"]["status"] == "graded" and state["alice/01_x"]["scored"]
    assert state["bob/01_x"]["reason"] == "loop" and not state["bob/01_x"]["scored"]
    # the table's row wins over an old file found later; reading migrates nothing
    jr.record("alice", "01_x", {"status": "error", "reason": "newer", "sha256": "a2"})
    (root / journal.LEGACY_FILE).write_text(json.dumps({
        "alice/01_x": {"status": "graded", "sha256": "aa"}}))
    assert grader.load_state(root)["alice/01_x"]["reason"] == "newer"
    journal.open_journal(root, out=lines.append)
    assert grader.load_state(root)["alice/01_x"]["reason"] == "newer"
    (root / journal.LEGACY_FILE).write_text("{broken")
    journal.open_journal(root, out=lines.append)
    assert "ignored the unreadable" in lines[-1]
    assert jr.forget([("alice", "01_x"), ("nobody", "01_x")]) == 1
    assert set(grader.load_state(root)) == {"bob/01_x"}


def test_needs_grading_keeps_the_journal_semantics():
    done = {"status": "graded", "sha256": "h", "worker": "here:1"}
    assert not journal.needs_grading(done, "h", lambda e: True)
    assert journal.needs_grading(done, "h", lambda e: False)  # its result is gone
    assert journal.needs_grading(done, "changed", lambda e: True)
    assert journal.needs_grading(None, "h", lambda e: True)
    assert journal.needs_grading({**done, "machinery": True}, "h", lambda e: True)
    assert not journal.needs_grading({**done, "status": "timeout"}, "h", lambda e: False)
    assert journal.host_of(done) == "here" and journal.host_of({"worker": "migrated"}) == ""


def test_webguard_banner_reads_the_journal(tmp_path, monkeypatch):
    from coursekit.grading import webguard

    root = tmp_path / "course"
    root.mkdir()
    monkeypatch.setenv(gradebook.ENV, str(root / "gradebook.db"))
    assert webguard.attention(root) == [] and not (root / "gradebook.db").exists()
    jr = journal.open_journal(root)
    jr.record("bob", "01_x", {"status": "timeout", "reason": "a loop", "sha256": "b"})
    jr.record("alice", "01_x", {"status": "graded", "sha256": "a"})
    assert webguard.attention(root) == [("bob/01_x", "timeout", "a loop")]


# --------------------------------------------------------------------------- end to end


def _submit(root: Path) -> None:
    for student in STUDENTS:
        dest = root / "submitted" / student / AID
        dest.mkdir(parents=True)
        src = root / "samples" / student / AID / f"{AID}.ipynb"
        (dest / src.name).write_bytes(src.read_bytes())
    bad = root / "submitted" / "dave" / AID
    bad.mkdir(parents=True)
    (bad / f"{AID}.ipynb").write_text("{not json")  # rejected at pre-check


def _with_gradebook(url, fn, *args, **kwargs):
    old = os.environ.get(gradebook.ENV)
    os.environ[gradebook.ENV] = url
    try:
        return fn(*args, **kwargs)
    finally:
        if old is None:
            os.environ.pop(gradebook.ENV, None)
        else:
            os.environ[gradebook.ENV] = old


def _grade_and_read(root: Path, url: str) -> dict:
    """Grade the class into ``url``; the report, nbgrader export's CSV and the journal."""
    lines = []

    def run():
        outcomes = pipeline.grade(root, workers=2, out=lines.append)
        rows, paths = pipeline.report(root, out=lines.append)
        build.run_nbgrader(root, "export")
        return outcomes, rows, paths

    outcomes, rows, paths = _with_gradebook(url, run)
    with open(root / "grades.csv", newline="") as fh:
        export = {(r["student_id"], r["assignment"]): float(r["score"])
                  for r in csv.DictReader(fh) if r["score"]}  # blank: no score (see status)
    table = journal.Journal(url, create=False).entries()
    return {"rows": {(r.student, r.assignment): r for r in rows}, "export": export,
            "journal": table, "outcomes": outcomes, "log": lines, "paths": paths}


def _expected(root: Path) -> dict:
    """alice: every point, bob: some (tests/test_course.py pins the numbers), carol: 0."""
    top = authoring.total_points(authoring.read_py(root / "notebooks" / f"{AID}.py"))
    return {"max": top, "alice": top, "carol": 0}


def test_sqlite_and_postgresql_grade_the_same(tmp_path, postgres_server):
    pg_url = postgres_server.create_database("course")
    sq_root = copy_course(tmp_path / "sqlite" / "course")
    pg_root = copy_course(tmp_path / "postgresql" / "course")
    sq_url = gradebook.gradebook_url(sq_root, str(sq_root / "gradebook.db"))
    _submit(sq_root)
    _submit(pg_root)
    sq = _grade_and_read(sq_root, sq_url)
    pg = _grade_and_read(pg_root, pg_url)
    expected = _expected(sq_root)
    expected["bob"] = sq["rows"][("bob", AID)].score
    assert expected["bob"] is not None and 0 < expected["bob"] < expected["max"]

    # nothing went to a stray SQLite file on the PostgreSQL side (the bug)
    assert not list(pg_root.rglob("*.db")), list(pg_root.rglob("*.db"))
    with gradebook.engine(pg_url).connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM coursekit_journal")).scalar() == 4
        # 3 graded, and dave's rejected file, flagged for the instructor (no score)
        assert conn.execute(sa.text("SELECT count(*) FROM submitted_assignment")).scalar() == 4

    print(f"\n{postgres_server.version}; {AID}, score per source:")
    print(f"{'student':<8} {'sqlite report':>14} {'pg report':>10} {'sqlite export':>14} "
          f"{'pg export':>10}  journal (sqlite / pg)")
    for student in (*STUDENTS, "dave"):
        key = (student, AID)
        cells = [sq["rows"][key].score, pg["rows"][key].score, sq["export"].get(key),
                 pg["export"].get(key)]
        text = ["-" if v is None else f"{v:g}" for v in cells]
        print(f"{student:<8} {text[0]:>14} {text[1]:>10} {text[2]:>14} {text[3]:>10}  "
              f"{sq['journal'][key]['status']} / {pg['journal'][key]['status']}")

    for side in (sq, pg):
        rows, export, table = side["rows"], side["export"], side["journal"]
        for student in STUDENTS:
            key = (student, AID)
            assert rows[key].status == "graded" and table[key]["status"] == "graded", side["log"]
            assert table[key]["scored"] and len(table[key]["sha256"]) == 64
            assert rows[key].score == export[key] == expected[student], (key, side["log"])
            assert rows[key].max_score == expected["max"]
        dave = ("dave", AID)
        assert rows[dave].status == table[dave]["status"] == "rejected"
        assert rows[dave].score is None and dave not in export  # never a silent 0
        assert side["outcomes"].keys() == table.keys()
        csv_rows = side["paths"]["csv"].read_text().splitlines()
        assert len(csv_rows) == 1 + 4
    strip = {k: (r.status, r.score, r.max_score) for k, r in sq["rows"].items()}
    assert strip == {k: (r.status, r.score, r.max_score) for k, r in pg["rows"].items()}
    assert sq["export"] == pg["export"]
    assert {k: (e["status"], e["scored"], e["sha256"]) for k, e in sq["journal"].items()} == \
        {k: (e["status"], e["scored"], e["sha256"]) for k, e in pg["journal"].items()}

    # ---- a second machine with the same PostgreSQL gradebook (its own checkout, no
    # shared files): rows another host wrote count as done when the gradebook holds them
    with gradebook.engine(pg_url).begin() as conn:
        conn.execute(sa.text("UPDATE coursekit_journal SET worker = 'grader-a:42'"))
    other = copy_course(tmp_path / "machine-b" / "course")
    shutil.copytree(pg_root / "submitted", other / "submitted")  # the same submissions
    lines = []
    again = _with_gradebook(pg_url, pipeline.grade, other, workers=2, out=lines.append)
    assert "[grade] 0 to grade" in "\n".join(lines), lines
    assert "3 already graded" in "\n".join(lines), lines
    assert {k: v["worker"] for k, v in again.items() if k[0] != "dave"} == {
        (s, AID): "grader-a:42" for s in STUDENTS}
    # ... and grades exactly what changed (bob's file) or failed for machinery reasons
    nb = other / "submitted" / "bob" / AID / f"{AID}.ipynb"
    nb.write_text(nb.read_text() + "\n")
    with gradebook.engine(pg_url).begin() as conn:
        conn.execute(sa.text("UPDATE coursekit_journal SET machinery = true "
                             "WHERE student = 'carol'"))
    lines = []
    again = _with_gradebook(pg_url, pipeline.grade, other, workers=2, out=lines.append)
    assert "[grade] 2 to grade" in "\n".join(lines), lines
    regraded = {s for (s, _), v in again.items() if v["worker"] != "grader-a:42"}
    assert regraded == {"bob", "carol", "dave"}  # dave: rejected again at pre-check
    rows = _with_gradebook(pg_url, pipeline.report, other, out=lines.append)[0]
    assert {r.student: r.score for r in rows} == {
        "alice": expected["alice"], "bob": expected["bob"], "carol": 0, "dave": None}
    gradebook.dispose(pg_url)
