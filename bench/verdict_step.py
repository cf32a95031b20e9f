"""Benchmark: what trusted grading adds per submission, against executing it.

For every sample submission (alice, bob, carol x every assignment) it times, in the same
run, (a) the steps the trusted grading added: rebuilding the template from source/ and
release/ (``template.merge``), and judging it outside the kernel (``verdicts.grade_notebook``:
static analysis, record matching, per-case comparison) on the merged notebook; and (b)
executing that merged notebook in a kernel (nbclient, no sandbox), the bulk of a
submission's grading time. Prints medians over repeats and the ratio (a)/(b).

Run: ``.venv/bin/python bench/verdict_step.py [--repeats R]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coursekit.grading import authoring, build, template, verdicts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--execute", type=int, default=3,
                        help="how many submissions to execute for the baseline")
    args = parser.parse_args()
    from nbclient import NotebookClient

    jobs = []
    for aid in build.assignments(ROOT):
        src = nbformat.read(ROOT / "source" / aid / f"{aid}.ipynb", as_version=4)
        rel = nbformat.read(ROOT / "release" / aid / f"{aid}.ipynb", as_version=4)
        key = authoring.answer_key(authoring.read_py(ROOT / "notebooks" / f"{aid}.py"))
        for student in build.SAMPLE_STUDENTS:
            sub = json.loads((ROOT / "samples" / student / aid / f"{aid}.ipynb").read_text())
            jobs.append((aid, src, template.stub_sources(rel), sub, key))

    added = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for aid, src, stubs, sub, key in jobs:
            merged, _ = template.merge(src, stubs, sub)
            verdicts.grade_notebook(merged, key)
        added.append((time.perf_counter() - start) / len(jobs))

    executed = []
    for aid, src, stubs, sub, key in jobs[:args.execute]:
        merged, _ = template.merge(src, stubs, sub)
        start = time.perf_counter()
        NotebookClient(merged, timeout=120, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(ROOT / "source" / aid)}}).execute()
        executed.append(time.perf_counter() - start)
    a, b = statistics.median(added), statistics.median(executed)
    print(f"trusted template + verdicts: {a * 1000:.1f} ms per submission "
          f"(median of {args.repeats} passes over {len(jobs)} submissions)")
    print(f"executing a submission:      {b * 1000:.1f} ms (median of {len(executed)})")
    print(f"ratio added/executing:       {a / b:.3f} ({a / b * 100:.1f}% more per submission)")


if __name__ == "__main__":
    main()
