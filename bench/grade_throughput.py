"""Benchmark: grading a class, plain serial nbgrader vs the course's parallel ``grade``.

Builds a class of 42 submissions (the three sample students of every assignment, twice
over: alice, bob, carol, alice2, bob2, carol2) in scratch copies of the course and
grades it, in the same run:

1. plain serial ``nbgrader autograde <assignment>`` (one process per assignment, every
   student), kernels sandboxed as configured in ``nbgrader_config.py``;
2. ``python -m coursekit.grading grade --workers N`` (N = cores by default);
3. plain serial ``nbgrader autograde`` again with ``COURSEKIT_SANDBOX=off`` (no
   launcher at all), to price the sandbox.

Prints seconds per submission for each, the parallel/serial ratio and the sandbox's
cost, and checks that every grade cell's score is identical between 1 and 2.
Run: ``.venv/bin/python bench/grade_throughput.py [--workers N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coursekit.grading import build as buildmod  # noqa: E402
from tests.conftest import copy_course  # noqa: E402

STUDENTS = {"alice": "alice", "bob": "bob", "carol": "carol",
            "alice2": "alice", "bob2": "bob", "carol2": "carol"}


def make_class(dest: Path) -> tuple:
    root = copy_course(dest)
    n = 0
    for student, sample in STUDENTS.items():
        for folder in sorted((root / "samples" / sample).iterdir()):
            target = root / "submitted" / student / folder.name
            target.mkdir(parents=True)
            for f in folder.iterdir():
                shutil.copy2(f, target / f.name)
            n += 1
    return root, n


def env_for(root: Path, **extra) -> dict:
    return buildmod.nbgrader_env({"COURSEKIT_GRADEBOOK": str(root / "gradebook.db"), **extra})


def register(root: Path, env: dict) -> None:
    for aid in buildmod.assignments(root):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", aid,
                            "--force", f"--CourseDirectory.release_directory={tmp}"],
                           cwd=root, env=env, check=True, capture_output=True)


def serial(root: Path, env: dict) -> float:
    register(root, env)
    start = time.perf_counter()
    for aid in buildmod.assignments(root):
        subprocess.run([sys.executable, "-m", "nbgrader", "autograde", aid, "--force"],
                       cwd=root, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def parallel(root: Path, env: dict, workers: int) -> float:
    register(root, env)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "coursekit.grading", "--root", str(root), "grade",
                    "--workers", str(workers)], cwd=root, env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - start


def cell_scores(root: Path) -> dict:
    """(student, assignment, grade cell) -> score, read through nbgrader's API."""
    import warnings

    warnings.filterwarnings("ignore")
    from coursekit.grading.gradebook import gradebook_url, open_gradebook

    out = {}
    with open_gradebook(gradebook_url(root, str(root / "gradebook.db"))) as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                for nb in sub.notebooks:
                    for grade in nb.grades:
                        out[(sub.student.id, assignment.name, grade.name)] = grade.score
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    times = {"serial": [], "parallel": [], "serial_unsandboxed": []}
    n = 0
    for rep in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="coursekit-bench-") as tmp:
            tmp = Path(tmp)
            a, n = make_class(tmp / "serial")
            b, _ = make_class(tmp / "parallel")
            c, _ = make_class(tmp / "unsandboxed")
            times["serial"].append(serial(a, env_for(a)))
            times["parallel"].append(parallel(b, env_for(b), args.workers))
            times["serial_unsandboxed"].append(serial(c, env_for(c, COURSEKIT_SANDBOX="off")))
            print(f"repeat {rep + 1}: serial {times['serial'][-1]:.1f} s, parallel "
                  f"{times['parallel'][-1]:.1f} s, serial unsandboxed "
                  f"{times['serial_unsandboxed'][-1]:.1f} s", flush=True)
            sa, sb = cell_scores(a), cell_scores(b)
            same = sa == sb and len(sa) > 0
            print(f"repeat {rep + 1}: {len(sa)} grade cells; parallel scores identical to "
                  f"serial nbgrader: {same}")
            if not same:
                diff = sorted(k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k))
                print("  differing cells:", diff[:10])
                return 1
    med = {k: statistics.median(v) for k, v in times.items()}
    per = {k: v / n for k, v in med.items()}
    print(f"class: {n} submissions, {len(buildmod.assignments(ROOT))} assignments, "
          f"{os.cpu_count()} cores, median of {args.repeats} run(s)")
    print(f"plain serial nbgrader autograde (sandboxed):   {per['serial']:6.2f} s/submission "
          f"({med['serial']:.1f} s)")
    print(f"coursekit grade --workers {args.workers}:                {per['parallel']:6.2f} "
          f"s/submission ({med['parallel']:.1f} s)")
    print(f"plain serial nbgrader autograde (no sandbox):  {per['serial_unsandboxed']:6.2f} "
          f"s/submission ({med['serial_unsandboxed']:.1f} s)")
    print(f"speedup parallel vs serial: {med['serial'] / med['parallel']:.2f}x")
    print(f"sandbox cost per submission: "
          f"{100 * (med['serial'] / med['serial_unsandboxed'] - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
