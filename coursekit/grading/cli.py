"""Command line of the course's grading pipeline: ``python -m coursekit.grading CMD``.

Commands: ``build`` (notebooks -> source -> release -> samples, leak check),
``verify-build`` (committed files equal a fresh build), ``collect`` (copy the sample
class into submitted/), ``check`` (pre-check submissions), ``grade`` (parallel,
sandboxed, resumable), ``statuses`` (flags in formgrader for what could not be graded),
``feedback``, ``report``, ``demo`` (all of it), and the student
side: ``student-bundle`` and ``student-lab``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from . import build as buildmod
from . import pipeline
from .precheck import QUARANTINE


def _root(args) -> Path:
    return buildmod.course_root(args.root)


def cmd_build(args) -> int:
    """``build``: generate source/, release/ and samples/."""
    buildmod.build(_root(args), only=args.only, execute=not args.no_execute)
    return 0


def cmd_verify_build(args) -> int:
    """``verify-build``: fail if generated files are stale or leak."""
    root = _root(args)
    diffs = buildmod.check_up_to_date(root, log=lambda *_: None)
    leaks = buildmod.release_leaks(root)
    for line in diffs + leaks:
        print(line)
    if diffs or leaks:
        print("generated files are out of date or leak: run `make build` and commit")
        return 1
    print("source/, release/ and samples/ are exactly what `make build` produces")
    return 0


def cmd_collect(args) -> int:
    """``collect``: copy samples/ into submitted/."""
    root = _root(args)
    n = pipeline.collect_samples(root)
    print(f"[collect] copied {n} sample submission(s) from samples/ into submitted/")
    return 0


def cmd_check(args) -> int:
    """``check``: pre-check submitted/."""
    from . import precheck

    root = _root(args)
    findings = precheck.check_submissions(root, args.assignment, args.student,
                                          fix=not args.dry_run,
                                          max_bytes=int(args.max_mib * 2**20))
    print(precheck.format_findings(findings) or "no submissions found under submitted/")
    n_bad = sum(f.level == "rejected" for f in findings)
    print(f"[check] {len(findings)} finding(s), {n_bad} submission(s) rejected")
    return 1 if n_bad else 0


def cmd_grade(args) -> int:
    """``grade``: grade submitted/ in parallel."""
    root = _root(args)
    try:
        results = pipeline.grade(root, assignments=args.assignment, students=args.student,
                                 workers=args.workers, regrade=args.regrade,
                                 executor=args.executor, scheduler=args.scheduler)
    except KeyboardInterrupt:
        return 130
    bad = {k: v for k, v in results.items() if v["status"] != "graded"}
    print(f"[grade] {len(results)} submission(s) in this run, {len(bad)} need attention")
    for (student, aid), v in sorted(bad.items()):
        print(f"  {v['status'].upper():<8} {student}/{aid}: {v['reason']}")
    return 1 if bad else 0


def cmd_feedback(args) -> int:
    """``feedback``: feedback HTML."""
    root = _root(args)
    paths = pipeline.feedback(root, assignments=args.assignment, show_hidden=args.show_hidden)
    print(f"[feedback] {len(paths)} feedback file(s) under {root / 'feedback'}")
    return 0


def cmd_report(args) -> int:
    """``report``: print and write the report."""
    root = _root(args)
    rows, paths = pipeline.report(root)
    from .report import to_table

    print(to_table(rows))
    print(f"\nreports: {paths['csv']}  {paths['txt']}")
    return 0


def cmd_statuses(args) -> int:
    """``statuses``: flag in the gradebook what the journal says could not be graded."""
    from . import gradebook as gbmod
    from . import statuses
    from .journal import Journal

    root = _root(args)
    url = gbmod.gradebook_url(root)
    if not gbmod.exists(url):
        print(f"[statuses] no gradebook yet ({gbmod.mask(url)}): run grade first")
        return 0
    entries = Journal(url, create=False).entries()
    if args.assignment:
        entries = {k: v for k, v in entries.items() if k[1] in args.assignment}
    statuses.apply(root, entries)
    with gbmod.open_gradebook(url) as gb:
        states = statuses.flag_states(gb)
    for (student, aid), state in sorted(states.items()):
        entry = entries.get((student, aid)) or {}
        print(f"  {state.upper():<9} {student}/{aid}: {entry.get('status', '?')}: "
              f"{entry.get('reason', '')}")
    print(f"[statuses] {sum(s == 'pending' for s in states.values())} flagged submission(s) "
          f"wait for a manual grade in formgrader, {sum(s == 'resolved' for s in states.values())} "
          "graded by hand")
    return 0


def cmd_demo(args) -> int:
    """``demo``: the whole pipeline on the sample class."""
    root = _root(args)
    print("== 1/5 build release/ from source/ ==")
    buildmod.build(root, execute=not args.no_execute)
    print("== 2/5 collect the sample class (alice: solution, bob: partial, carol: untouched) ==")
    for folder in ("submitted", "autograded", "feedback", QUARANTINE):
        shutil.rmtree(root / folder, ignore_errors=True)
    from . import gradebook as gbmod

    url = gbmod.gradebook_url(root)
    if url == gbmod.gradebook_url(root, gbmod.DEFAULT_FILE):  # the default gradebook.db
        (root / gbmod.DEFAULT_FILE).unlink(missing_ok=True)  # afresh, with its journal
    else:  # a configured gradebook is never dropped: the sample class is regraded
        print(f"   (gradebook {gbmod.mask(url)} kept; the sample submissions are regraded)")
    (root / ".grading-state.json").unlink(missing_ok=True)
    pipeline.collect_samples(root)
    print("== 3/5 autograde ==")
    pipeline.grade(root, regrade=True)
    print("== 4/5 feedback ==")
    paths = pipeline.feedback(root)
    print("== 5/5 report ==")
    rows, reports = pipeline.report(root)
    from .report import to_table

    print(to_table(rows))
    print(f"\nfeedback: {len(paths)} HTML file(s) under {root / 'feedback'}/<student>/<assignment>/")
    for p in paths[:3]:
        print(f"  e.g. {p.relative_to(root)}")
    print(f"reports:  {reports['csv'].relative_to(root)}, {reports['txt'].relative_to(root)}")
    return 0


def cmd_student_bundle(args) -> int:
    """``student-bundle DEST``: release notebooks and a student JupyterLab configuration."""
    from . import student

    dest = student.bundle(_root(args), Path(args.dest))
    print(f"[student-bundle] {dest}: release notebooks and a JupyterLab without instructor "
          f"tools (see {dest / 'README.md'})")
    return 0


def cmd_student_lab(args) -> int:
    """``student-lab DEST``: JupyterLab on the student workspace (127.0.0.1, a token)."""
    import os

    from . import student

    dest = Path(args.dest)
    if not (dest / student.CONFIG_DIR).is_dir():
        raise ValueError(f"dest={dest}: not a student workspace (run `make student-bundle`)")
    cmd = student.lab_command(dest, port=args.port)
    os.execve(cmd[0], cmd, student.lab_env(dest))


def main(argv=None) -> int:
    """Parse the command line and run one command; 2 on a user error."""
    parser = argparse.ArgumentParser(prog="python -m coursekit.grading",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--root", help="course directory (default: found from cwd)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("build", help="generate source/, release/ and samples/")
    p.add_argument("--only", nargs="+", help="assignment ids")
    p.add_argument("--no-execute", action="store_true",
                   help="do not execute pinned cells (keep the committed pinned outputs)")
    p.set_defaults(func=cmd_build)
    p = sub.add_parser("verify-build", help="fail if generated files are stale or leak")
    p.set_defaults(func=cmd_verify_build)
    p = sub.add_parser("collect", help="copy samples/ into submitted/")
    p.set_defaults(func=cmd_collect)
    p = sub.add_parser("check", help="pre-check submitted/ and report problems per file")
    p.add_argument("--assignment", nargs="+")
    p.add_argument("--student", nargs="+")
    p.add_argument("--dry-run", action="store_true", help="report, but do not rename files")
    p.add_argument("--max-mib", type=float, default=20.0, help="size limit per notebook")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("grade", help="pre-check and autograde submitted/ in parallel")
    p.add_argument("--assignment", nargs="+")
    p.add_argument("--student", nargs="+")
    p.add_argument("--workers", type=int, default=None,
                   help="parallel workers (default: number of cores)")
    p.add_argument("--regrade", action="store_true",
                   help="grade again even what the journal says is done")
    p.add_argument("--scheduler", metavar="tcp://HOST:8786",
                   help="grade on this existing Dask cluster (Kubernetes, Slurm, several "
                        "machines); the gradebook must be a database every worker reaches "
                        "(postgresql+psycopg://...). Default: a Dask LocalCluster of "
                        "--workers processes on this machine")
    p.add_argument("--executor", choices=("dask", "pool"), default="dask",
                   help="dask (default) or pool: a local multiprocessing pool running the "
                        "same grading function (the benchmark's baseline)")
    p.set_defaults(func=cmd_grade)
    p = sub.add_parser("feedback", help="generate feedback HTML (hidden tests stripped)")
    p.add_argument("--assignment", nargs="+")
    p.add_argument("--show-hidden", action="store_true",
                   help="show hidden tests (e.g. after the deadline)")
    p.set_defaults(func=cmd_feedback)
    p = sub.add_parser("report", help="score table and CSV with error statuses")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("statuses", help="flag in the gradebook (formgrader) the submissions "
                       "the journal lists as error, timeout or rejected; list them")
    p.add_argument("--assignment", nargs="+")
    p.set_defaults(func=cmd_statuses)
    p = sub.add_parser("demo", help="build, collect samples, grade, feedback, report")
    p.add_argument("--no-execute", action="store_true")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("student-bundle", help="student workspace: release notebooks and a "
                       "JupyterLab without instructor tools")
    p.add_argument("dest", help="folder to write (e.g. dist/student)")
    p.set_defaults(func=cmd_student_bundle)
    p = sub.add_parser("student-lab", help="JupyterLab on a student workspace")
    p.add_argument("dest")
    p.add_argument("--port", type=int, default=8888)
    p.set_defaults(func=cmd_student_lab)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
