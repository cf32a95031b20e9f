"""The README's instructor workflow is true, command by command (issue #16, item 6).

Every fenced block of README.md preceded by ``<!-- tested: instructor -->``,
``<!-- tested: student -->`` or ``<!-- tested: student-config -->`` is run exactly as
written, in README order, in a scratch copy of the course: instructor blocks with
``COURSE`` set to it (the README says to set it to the checkout), student blocks in a
student's own home folder, whose ``~/.jupyter/nbgrader_config.py`` is the student-config
block with the hub's exchange path replaced by the scratch course's exchange. The student
is the user running the tests (nbgrader's student id is the login name). Each block must
exit 0, and what the README claims it does is checked after it.
"""

import csv
import os
import pwd
import re
import subprocess
import textwrap

from .conftest import ROOT, copy_course

AID = "02_memory_calculator"
HUB_EXCHANGE = "/srv/nbgrader/exchange"
BLOCK = re.compile(r"<!-- tested: (instructor|student-config|student) -->[ \t]*\n"
                   r"([ \t]*)```(\w+)\n(.*?)\n[ \t]*```", re.DOTALL)


def readme_blocks(text: str) -> list:
    """``[(kind, language, code)]`` of the README's tested blocks, in order."""
    return [(kind, lang, textwrap.dedent(code))
            for kind, _indent, lang, code in BLOCK.findall(text)]


def test_readme_marks_the_workflow():
    kinds = [k for k, _, _ in readme_blocks((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert kinds == ["instructor", "student-config", "student", "instructor", "student"]


def _run(code: str, cwd, env) -> str:
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"README block failed ({proc.returncode}):\n{code}\n---\n" \
                                 f"{out[-6000:]}"
    return out


def test_instructor_section_runs_as_written(tmp_path):
    course = copy_course(tmp_path / "course")
    (course / ".venv").symlink_to(ROOT / ".venv")
    instructor_home, student_home = tmp_path / "instructor", tmp_path / "student"
    instructor_home.mkdir()
    (student_home / ".jupyter").mkdir(parents=True)
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("COURSEKIT_") and k not in ("JUPYTER_CONFIG_DIR",
                                                            "JUPYTER_DATA_DIR", "VIRTUAL_ENV")}
    base["PATH"] = f"{ROOT / '.venv' / 'bin'}:{base.get('PATH', '/usr/bin:/bin')}"
    base["MPLBACKEND"] = "Agg"
    teacher = {**base, "COURSE": str(course), "HOME": str(instructor_home)}
    student = {**base, "HOME": str(student_home)}
    me = pwd.getpwuid(os.getuid()).pw_name  # nbgrader's student id for `submit`

    blocks = readme_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    outputs = []
    for kind, lang, code in blocks:
        if kind == "student-config":
            assert lang == "python" and HUB_EXCHANGE in code
            (student_home / ".jupyter" / "nbgrader_config.py").write_text(
                code.replace(HUB_EXCHANGE, str(course / "exchange")))
            continue
        assert lang == "bash"
        outputs.append(_run(code, course if kind == "instructor" else student_home,
                            teacher if kind == "instructor" else student))

    released, submitted_, graded, fetched = outputs
    exchange = course / "exchange" / "mlsys-training-serving"
    # 1. release and list: the release notebook is in the exchange and listed
    assert (exchange / "outbound" / AID / f"{AID}.ipynb").is_file()
    assert f"mlsys-training-serving {AID}" in released
    # 2. the student fetched the release notebook and submitted it (one inbound folder)
    assert (student_home / AID / f"{AID}.ipynb").is_file()
    assert len(list((exchange / "inbound").glob(f"{me}+{AID}+*"))) == 1
    # 3. collected, placed by hand, graded, reported, exported and released
    for sid in (me, "alice"):
        assert (course / "submitted" / sid / AID / f"{AID}.ipynb").is_file()
        assert (course / "feedback" / sid / AID / f"{AID}.html").is_file()
    rows = {r["student"]: r for r in csv.DictReader(open(course / "reports" / "grades.csv"))
            if r["assignment"] == AID}
    assert rows["alice"]["status"] == rows[me]["status"] == "graded"
    assert float(rows["alice"]["score"]) == float(rows["alice"]["max_score"]) > 0
    assert float(rows[me]["score"]) == 0  # the untouched release notebook
    export = {r["student_id"]: r for r in csv.DictReader(open(course / "grades.csv"))
              if r["assignment"] == AID}
    assert export["alice"]["status"] == export[me]["status"] == "graded"
    assert float(export["alice"]["score"]) == float(rows["alice"]["score"])
    assert len(list((exchange / "feedback").glob("*.html"))) == 2  # hand-placed one too
    # ... and nbgrader works from another folder with --CourseDirectory.root
    assert AID in graded.rsplit("assignments in the database", 1)[-1]
    assert not (instructor_home / "gradebook.db").exists()
    # 4. the student fetched their feedback through the exchange
    assert list((student_home / AID / "feedback").glob(f"*/{AID}.html")), fetched
