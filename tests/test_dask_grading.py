"""Grading on Dask distributed (issue #16, items 3 and 4): a cluster of two worker
processes, each in its own working directory and none told where the course is, grades a
class into a PostgreSQL gradebook exactly as the default LocalCluster grades it into
SQLite; a worker killed mid-run loses nothing and counts nothing twice; a hostile
submission is still caught by the sandbox on a Dask worker."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import sqlalchemy as sa

from coursekit.grading import distributed as distmod
from coursekit.grading import gradebook, grader, journal, pipeline

from .conftest import ROOT, copy_course
from .hostile_corpus import PROBE
from .test_course import EXPECTED
from .test_gradebook_url import AID, STUDENTS, _grade_and_read, _submit, _with_gradebook

BIN = Path(sys.executable).parent


class Cluster:
    """A Dask scheduler and two ``dask worker`` processes (no nanny: a killed worker stays
    dead), each worker started in its own directory (its cwd and --local-directory), with
    no gradebook setting and no course path in its environment."""

    def __init__(self, base: Path, n_workers: int = 2):
        self.base = base
        env = {k: v for k, v in os.environ.items() if not k.startswith("COURSEKIT_")}
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
        self.file = base / "scheduler.json"
        sdir = base / "scheduler"
        sdir.mkdir(parents=True)
        self.procs = [subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(self.file)], cwd=sdir, env=env,
            stdout=open(sdir / "log", "w"), stderr=subprocess.STDOUT)]
        self.dirs = {}
        deadline = time.time() + 60
        while not self.file.exists() and time.time() < deadline:
            time.sleep(0.2)
        assert self.file.exists(), (sdir / "log").read_text()[-2000:]
        for i in range(n_workers):
            wdir = base / f"worker-{i}"
            wdir.mkdir()
            self.dirs[f"w{i}"] = wdir
            self.procs.append(subprocess.Popen(
                [str(BIN / "dask"), "worker", "--scheduler-file", str(self.file),
                 "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"w{i}",
                 "--local-directory", str(wdir)], cwd=wdir, env=env,
                stdout=open(wdir / "log", "w"), stderr=subprocess.STDOUT))
        self.address = json.loads(self.file.read_text())["address"]
        from distributed import Client

        self.client = Client(self.address, timeout=60)
        self.client.wait_for_workers(n_workers, timeout=90)

    def workers(self) -> dict:
        """name -> {"pid", "address", "local_directory"} of the live workers."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        pids = self.client.run(os.getpid)
        return {w["name"]: {"pid": pids[addr], "address": addr,
                            "local_directory": w["local_directory"]}
                for addr, w in info.items()}

    def close(self):
        try:
            self.client.shutdown()  # the scheduler closes its workers, then itself
        finally:
            self.client.close()
            for proc in self.procs:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path / "dask")
    try:
        yield c
    finally:
        c.close()


def _formgrader_scores(root: Path, url: str, aid: str) -> dict:
    """student -> (score, max_score, needs manual grade) of every submission, as
    formgrader's API (NbGraderAPI) lists them."""
    def read():
        from nbgrader.apps.api import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config.loader import PyFileConfigLoader

        cfg = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
        api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
        return {s["student"]: (s["score"], s["max_score"], s["needs_manual_grade"])
                for s in api.get_submissions(aid) if s["submitted"]}

    return _with_gradebook(url, read)


def test_two_worker_cluster_grades_like_the_local_sqlite_run(tmp_path, postgres_server,
                                                             cluster, monkeypatch):
    pg_url = postgres_server.create_database("dask_course")
    sq_root = copy_course(tmp_path / "sqlite" / "course")
    pg_root = copy_course(tmp_path / "postgresql" / "course")
    sq_url = gradebook.gradebook_url(sq_root, str(sq_root / "gradebook.db"))
    _submit(sq_root)
    _submit(pg_root)
    # what travels to a worker names no path of the driver's course
    shipped = distmod.course_files(pg_root, AID, pg_url)
    assert str(pg_root) not in repr((shipped.common, shipped.env, [n for n, _ in shipped.files]))

    sq = _grade_and_read(sq_root, sq_url)  # the default: a LocalCluster on this machine
    # the same helper, now on the two-worker cluster
    monkeypatch.setattr(pipeline, "grade", partial(pipeline.grade, scheduler=cluster.address))
    pg = _grade_and_read(pg_root, pg_url)
    assert any("[grade] grading on the Dask cluster at tcp://" in line for line in pg["log"])

    # graded by the cluster's worker processes in their own scratch course directories;
    # the autograded notebooks reached the driver's course root as data
    workers = cluster.workers()
    pids = {str(w["pid"]) for w in workers.values()}
    graded_by = {e["worker"].rpartition(":")[2] for e in pg["journal"].values()
                 if e["status"] == "graded"}
    assert graded_by and graded_by <= pids, (graded_by, pids)
    cwds = cluster.client.run(os.getcwd)
    for name, w in workers.items():
        assert Path(w["local_directory"]).resolve().is_relative_to(cluster.dirs[name].resolve())
        assert Path(cwds[w["address"]]).resolve() == cluster.dirs[name].resolve()
    scratch = [p for d in cluster.dirs.values() for p in d.rglob("course-*/nbgrader_config.py")]
    assert scratch, "no worker wrote a scratch course directory"
    for student in STUDENTS:
        assert (pg_root / "autograded" / student / AID / f"{AID}.ipynb").is_file()
        # the worker's scratch copies are cleaned after each submission
        assert not [p for d in cluster.dirs.values()
                    for p in d.rglob(f"submitted/{student}/{AID}/*")]

    forms = {side: _formgrader_scores(root, url, AID)
             for side, root, url in (("sqlite", sq_root, sq_url), ("pg", pg_root, pg_url))}
    expected = {"alice": EXPECTED[AID]["alice"], "bob": EXPECTED[AID]["bob"], "carol": 0}
    print(f"\n{AID}: student, report / nbgrader export / formgrader API, SQLite (LocalCluster)"
          " vs PostgreSQL (2-worker cluster)")
    for student in (*STUDENTS, "dave"):
        key = (student, AID)
        cells = [sq["rows"][key].score, sq["export"].get(key),
                 forms["sqlite"].get(student, (None,))[0], pg["rows"][key].score,
                 pg["export"].get(key), forms["pg"].get(student, (None,))[0]]
        text = ["-" if v is None else f"{v:g}" for v in cells]
        print(f"  {student:<6} sqlite {'/'.join(text[:3]):<12} postgresql {'/'.join(text[3:])}")
    for side in (sq, pg):
        for student in STUDENTS:
            key = (student, AID)
            assert side["rows"][key].status == side["journal"][key]["status"] == "graded"
            assert side["rows"][key].score == side["export"][key] == expected[student]
        assert side["rows"][("dave", AID)].status == "rejected"
        assert side["export"].get(("dave", AID)) is None  # never a silent 0
    for side in forms.values():
        assert {s: side[s] for s in STUDENTS} == {
            s: (expected[s], EXPECTED[AID]["max"], False) for s in STUDENTS}
    assert forms["sqlite"] == forms["pg"]
    assert sq["export"] == pg["export"]
    assert {k: (r.status, r.score, r.max_score) for k, r in sq["rows"].items()} == \
        {k: (r.status, r.score, r.max_score) for k, r in pg["rows"].items()}
    assert {k: (e["status"], e["sha256"]) for k, e in sq["journal"].items()} == \
        {k: (e["status"], e["sha256"]) for k, e in pg["journal"].items()}
    gradebook.dispose(pg_url)


KILL_AIDS = ("01_training_cost", "06_continuous_batching")
PROGRESS = re.compile(r"^\[[# ]{20}\]\s+\d+/\d+ (\S+/\S+): (\w+)")


def _prober(root: Path, aid: str, worker_dirs) -> None:
    """A submission (alice's answers) with an added cell that tries to read the course's
    solutions: the worker's scratch copy (relative to the kernel's folder), the driver's
    course root, and each worker's directory."""
    src = root / "samples" / "alice" / aid / f"{aid}.ipynb"
    nb = json.loads(src.read_text())
    probes = [f"_probe('worker-source', '../../../source/{aid}/{aid}.ipynb')",
              f"_probe('driver-source', {str(root / 'source' / aid / (aid + '.ipynb'))!r})",
              f"_probe('driver-key', {str(root / 'notebooks' / (aid + '.py'))!r})"]
    probes += [f"_probe('worker-dir-{i}', {str(d / 'log')!r})" for i, d in enumerate(worker_dirs)]
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                        "execution_count": None, "id": "probe-cell",
                        "source": PROBE + "\n".join(probes)})
    dest = root / "submitted" / "eve" / aid
    dest.mkdir(parents=True)
    (dest / src.name).write_text(json.dumps(nb, indent=1))


def test_a_worker_killed_mid_run_loses_nothing(tmp_path, postgres_server, cluster):
    url = postgres_server.create_database("dask_kill")
    root = copy_course(tmp_path / "course")
    pairs = [(s, KILL_AIDS[0]) for s in STUDENTS] + [("bob", KILL_AIDS[1])]
    for student, aid in pairs:
        dest = root / "submitted" / student / aid
        dest.mkdir(parents=True)
        for f in (root / "samples" / student / aid).iterdir():
            (dest / f.name).write_bytes(f.read_bytes())
    _prober(root, KILL_AIDS[0], cluster.dirs.values())
    n_subs = len(pairs) + 1
    before = cluster.workers()
    lines, killed = [], {}

    def out(line):
        lines.append(line)
        if killed or not PROGRESS.match(line):
            return
        # the first result is in: SIGKILL the other worker, which is mid-grading
        first = journal.Journal(url, create=False).entries()
        first_pid = next(iter(first.values()))["worker"].rpartition(":")[2]
        busy = cluster.client.processing()
        for name, w in before.items():
            if str(w["pid"]) != first_pid:
                killed.update(name=name, pid=w["pid"], busy=len(busy.get(w["address"], ())))
                os.kill(w["pid"], signal.SIGKILL)
                break

    results = _with_gradebook(url, grader.grade, root, workers=2, out=out,
                              scheduler=cluster.address)
    assert killed and killed["busy"] >= 1, (killed, lines)
    assert killed["name"] not in cluster.workers()  # it stayed dead (no nanny)
    print(f"\nkilled worker {killed['name']} (pid {killed['pid']}) with {killed['busy']} "
          f"task(s) on it after the first result; the run went on:")
    print("\n".join(f"  {line}" for line in lines if line.startswith("[")))

    # nothing lost, nothing counted twice: one journal row, one progress line and one
    # gradebook submission per submission, every score the expected one
    assert len(results) == n_subs and all(e["status"] == "graded" for e in results.values()), \
        (results, lines)
    done = [m.group(1) for m in map(PROGRESS.match, lines) if m]
    assert sorted(done) == sorted(f"{s}/{a}" for s, a in results), lines
    with gradebook.engine(url).connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM coursekit_journal")).scalar() == n_subs
        assert conn.execute(sa.text("SELECT count(*) FROM submitted_assignment")).scalar() == \
            n_subs
    rows = _with_gradebook(url, pipeline.report, root, out=lines.append)[0]
    scores = {(r.student, r.assignment): r.score for r in rows if r.status != "missing"}
    want = {(s, a): EXPECTED[a][s] for s, a in pairs}
    want[("eve", KILL_AIDS[0])] = EXPECTED[KILL_AIDS[0]]["alice"]
    assert scores == want, scores

    # the hostile cell ran on a Dask worker inside the sandbox: every probe blocked
    nb = json.loads((root / "autograded" / "eve" / KILL_AIDS[0] /
                     f"{KILL_AIDS[0]}.ipynb").read_text())
    text = "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert text.count("BLOCKED") == 3 + len(cluster.dirs) and "LEAK" not in text, text[-2000:]

    # a rerun finds everything graded and grades nothing
    lines.clear()
    again = _with_gradebook(url, grader.grade, root, workers=2, out=lines.append,
                            scheduler=cluster.address)
    assert "[grade] 0 to grade" in "\n".join(lines), lines
    assert f"{n_subs} already graded" in "\n".join(lines), lines
    assert again == results
    gradebook.dispose(url)


def test_what_travels_to_a_worker():
    url = "postgresql+psycopg://grader@db.example.org/mlsys"
    env = {"COURSEKIT_CELL_TIMEOUT": "5", "COURSEKIT_SANDBOX_STATUS": "/x", "HOME": "/root"}
    cf = distmod.course_files(ROOT, "01_training_cost", url, environ=env)
    names = {n for n, _ in cf.files}
    assert {n for n, _ in cf.common} >= {"nbgrader_config.py", "pyproject.toml"}
    assert {"source/01_training_cost/01_training_cost.ipynb", "notebooks/01_training_cost.py",
            "release/01_training_cost/01_training_cost.ipynb"} <= names
    assert all(n.split("/")[1] == "01_training_cost" or n == "notebooks/01_training_cost.py"
               for n in names)  # nothing of another assignment, no submission, no sample
    assert dict(cf.env) == {"COURSEKIT_CELL_TIMEOUT": "5", gradebook.ENV: url}
    again = distmod.course_files(ROOT, "01_training_cost", url, environ=env)
    assert (again.key, again.files_key) == (cf.key, cf.files_key)
    other = distmod.course_files(ROOT, "01_training_cost", url, environ={})
    assert other.key != cf.key and other.files_key == cf.files_key
    for bad in ("../x", "/etc/passwd", "a/../../b", "", "a//b"):
        with pytest.raises(ValueError, match="plain relative path"):
            distmod.safe_relpath(bad)


def test_cluster_options_are_checked(tmp_path, monkeypatch):
    root = copy_course(tmp_path / "course")
    monkeypatch.setenv(gradebook.ENV, str(root / "gradebook.db"))
    with pytest.raises(ValueError, match=r"SQLite file.*postgresql\+psycopg://"):
        grader.grade(root, scheduler="tcp://grader.example.org:8786")
    with pytest.raises(ValueError, match="executor='threads': use one of dask, pool"):
        grader.grade(root, executor="threads")
    proc = subprocess.run([sys.executable, "-m", "coursekit.grading", "--root", str(root),
                           "grade", "--scheduler", "tcp://grader.example.org:8786"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, gradebook.ENV: str(root / "gradebook.db")})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "SQLite" in proc.stderr and "postgresql+psycopg://" in proc.stderr
    assert not (root / "gradebook.db").exists()
