"""Benchmark: grading a class, plain serial nbgrader vs the course's ``grade`` (pool, Dask).

Builds a class of 48 submissions (the three sample students of every assignment, twice
over: alice, bob, carol, alice2, bob2, carol2) in scratch copies of the course and
grades it, in the same run:

1. plain serial ``nbgrader autograde <assignment>`` (one process per assignment, every
   student), kernels sandboxed as configured in ``nbgrader_config.py``;
2. ``python -m coursekit.grading grade --executor pool --workers N``: a local
   multiprocessing pool (N = cores by default);
3. ``python -m coursekit.grading grade --workers N``: the default, a Dask LocalCluster of
   N single-threaded worker processes on the same cores (same grading function; the
   course files and submissions travel to the workers as data);
4. plain serial ``nbgrader autograde`` again with ``COURSEKIT_SANDBOX=off`` (no
   launcher at all), to price the sandbox.

Pool and Dask alternate which runs first in each repeat. Prints seconds per submission
for each (median of R repeats), the Dask/pool ratio (the issue's target: at most 1.05),
the CPU-seconds per submission each path used (the driver, workers and sandboxed
kernels: :class:`CpuMeter`), an estimate for a 10,000-submission class on N
machines of C cores from those CPU-seconds, and checks that every grade cell's score is
identical between all paths. ``--skip-serial`` runs only 2 and 3.
Run: ``.venv/bin/python bench/grade_throughput.py [--workers N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import os
import resource
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


ONLY: list = []  # --assignments: a smaller class for a quick look


def assignments(root: Path) -> list:
    return [a for a in buildmod.assignments(root) if not ONLY or a in ONLY]


def make_class(dest: Path) -> tuple:
    root = copy_course(dest)
    n = 0
    for student, sample in STUDENTS.items():
        for folder in sorted((root / "samples" / sample).iterdir()):
            if ONLY and folder.name not in ONLY:
                continue
            target = root / "submitted" / student / folder.name
            target.mkdir(parents=True)
            for f in folder.iterdir():
                shutil.copy2(f, target / f.name)
            n += 1
    return root, n


def env_for(root: Path, **extra) -> dict:
    return buildmod.nbgrader_env({"COURSEKIT_GRADEBOOK": str(root / "gradebook.db"), **extra})


def register(root: Path, env: dict) -> None:
    for aid in assignments(root):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", aid,
                            "--force", f"--CourseDirectory.release_directory={tmp}"],
                           cwd=root, env=env, check=True, capture_output=True)


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


class CpuMeter:
    """CPU-seconds of a command's whole process tree, kernels included.

    A sandboxed kernel ends inside bubblewrap's PID namespace and is reaped outside the
    grader's process tree, so ``getrusage(RUSAGE_CHILDREN)`` misses it (measured here: 0.08
    CPU-s of children per submission). With cgroup v1's separate ``cpuacct`` hierarchy
    (as root), the command runs in a ``cpuacct`` group of its own: every descendant stays
    in it (the sandbox moves kernels only in the cpu and pids hierarchies). Elsewhere the
    meter falls back to ``RUSAGE_CHILDREN`` and says so (``self.how``)."""

    def __init__(self):
        self.group = None
        if (CPUACCT / "cpuacct.usage").exists() and os.access(CPUACCT, os.W_OK):
            group = CPUACCT / f"coursekit-bench-{os.getpid()}"
            try:
                group.mkdir(exist_ok=True)
                self.group = group
            except OSError:
                self.group = None
        self.how = ("cgroup v1 cpuacct (driver, workers and sandboxed kernels)" if self.group
                    else "getrusage(RUSAGE_CHILDREN): sandboxed kernels NOT counted")

    def preexec(self):
        """For ``subprocess.run(preexec_fn=...)``: join the group before exec."""
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def read(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        use = resource.getrusage(resource.RUSAGE_CHILDREN)
        return use.ru_utime + use.ru_stime

    def close(self):
        if self.group is not None:
            try:
                self.group.rmdir()
            except OSError:
                pass


METER = CpuMeter()


def serial(root: Path, env: dict) -> tuple:
    register(root, env)
    start, cpu = time.perf_counter(), METER.read()
    for aid in assignments(root):
        subprocess.run([sys.executable, "-m", "nbgrader", "autograde", aid, "--force"],
                       cwd=root, env=env, check=True, capture_output=True,
                       preexec_fn=METER.preexec)
    return time.perf_counter() - start, METER.read() - cpu


def course_grade(root: Path, env: dict, workers: int, executor: str) -> tuple:
    """``grade`` with ``executor`` (pool or dask): wall seconds and CPU-seconds of the
    whole process tree (driver, workers, kernels: :class:`CpuMeter`)."""
    register(root, env)
    start, cpu = time.perf_counter(), METER.read()
    proc = subprocess.run([sys.executable, "-m", "coursekit.grading", "--root", str(root),
                           "grade", "--workers", str(workers), "--executor", executor],
                          cwd=root, env=env, capture_output=True, text=True,
                          preexec_fn=METER.preexec)
    if proc.returncode:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit(f"grade --executor {executor} failed ({proc.returncode})")
    again = [line for line in proc.stdout.splitlines() if "once more" in line]
    if again:  # a machine too loaded: timeouts/errors graded again, one at a time
        print(f"  note: {executor}: {again[0].strip()}", flush=True)
    return time.perf_counter() - start, METER.read() - cpu


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


def estimate_table(cpu_per_sub: float, n_subs: int = 10_000, machines=(1, 10, 50),
                   cores: int = 16) -> list:
    """Lines of a small table: hours for ``n_subs`` submissions on N machines of
    ``cores`` cores, one single-threaded worker per core, from measured CPU-seconds per
    submission (perfect packing; the gradebook and the driver are not the bottleneck)."""
    lines = [f"estimate for {n_subs:,} submissions at {cpu_per_sub:.2f} CPU-s each "
             f"({cores} worker processes per machine):",
             f"  {'machines':>8} {'cores':>6} {'hours':>7} {'minutes':>8}"]
    for n in machines:
        seconds = n_subs * cpu_per_sub / (n * cores)
        lines.append(f"  {n:>8} {n * cores:>6} {seconds / 3600:>7.2f} {seconds / 60:>8.1f}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--skip-serial", action="store_true",
                        help="only the pool and Dask paths (no plain serial nbgrader)")
    parser.add_argument("--assignments", nargs="+", default=[],
                        help="only these assignments (default: all)")
    parser.add_argument("--cores", type=int, default=16,
                        help="cores per machine in the 10,000-submission estimate")
    args = parser.parse_args()
    ONLY[:] = args.assignments
    modes = ["pool", "dask"] if args.skip_serial else [
        "serial", "pool", "dask", "serial_unsandboxed"]
    times = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    n = 0
    for rep in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="coursekit-bench-") as tmp:
            tmp = Path(tmp)
            roots = {}
            for mode in modes:
                roots[mode], n = make_class(tmp / mode)
            order = list(modes)
            if rep % 2:  # alternate which of pool and Dask runs first
                i, j = order.index("pool"), order.index("dask")
                order[i], order[j] = order[j], order[i]
            for mode in order:
                root = roots[mode]
                if mode == "serial":
                    wall, used = serial(root, env_for(root))
                elif mode == "serial_unsandboxed":
                    wall, used = serial(root, env_for(root, COURSEKIT_SANDBOX="off"))
                else:
                    wall, used = course_grade(root, env_for(root), args.workers, mode)
                times[mode].append(wall)
                cpu[mode].append(used)
            print(f"repeat {rep + 1}: " + ", ".join(
                f"{m} {times[m][-1]:.1f} s ({cpu[m][-1]:.0f} CPU-s)" for m in order),
                flush=True)
            scores = {m: cell_scores(roots[m]) for m in modes if m != "serial_unsandboxed"}
            base = "serial" if "serial" in scores else "pool"
            for mode, got in scores.items():
                same = got == scores[base] and len(got) > 0
                if mode != base:
                    print(f"repeat {rep + 1}: {len(got)} grade cells; {mode} scores identical "
                          f"to {base}: {same}")
                if not same:
                    diff = sorted(k for k in set(got) | set(scores[base])
                                  if got.get(k) != scores[base].get(k))
                    print("  differing cells:", diff[:10])
                    return 1
    med = {k: statistics.median(v) for k, v in times.items()}
    per = {k: v / n for k, v in med.items()}
    cpu_per = {k: statistics.median(v) / n for k, v in cpu.items()}
    print(f"class: {n} submissions, {len(assignments(ROOT))} assignments, "
          f"{os.cpu_count()} cores, median of {args.repeats} run(s)")
    label = {"serial": "plain serial nbgrader autograde (sandboxed)",
             "pool": f"grade --executor pool --workers {args.workers}",
             "dask": f"grade --workers {args.workers} (Dask LocalCluster)",
             "serial_unsandboxed": "plain serial nbgrader autograde (no sandbox)"}
    for mode in modes:
        print(f"{label[mode]:<46} {per[mode]:6.2f} s/submission ({med[mode]:.1f} s), "
              f"{cpu_per[mode]:5.2f} CPU-s/submission")
    paired = [d / p for d, p in zip(times["dask"], times["pool"])]
    ratio = statistics.median(paired)
    print(f"dask/pool ratio: {ratio:.3f} (median of the per-repeat ratios; overhead "
          f"{100 * (ratio - 1):+.1f}%, target <= +5%); per repeat: "
          + ", ".join(f"{r:.3f}" for r in paired)
          + f"; ratio of the medians {med['dask'] / med['pool']:.3f}")
    print(f"CPU measured with {METER.how}")
    if "serial" in modes:
        print(f"speedup pool vs serial: {med['serial'] / med['pool']:.2f}x, "
              f"Dask vs serial: {med['serial'] / med['dask']:.2f}x")
        print(f"sandbox cost per submission: "
              f"{100 * (med['serial'] / med['serial_unsandboxed'] - 1):+.1f}%")
    for line in estimate_table(cpu_per["dask"], cores=args.cores):
        print(line)
    METER.close()
    print(f"  (from wall time here instead: {per['dask'] * args.workers:.2f} core-s per "
          f"submission with {args.workers} workers on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
