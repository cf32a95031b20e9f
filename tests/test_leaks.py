"""No reference answer in anything a student receives or the grading kernel can read.

Every expected number of every hidden case (the keys parsed from notebooks/*.py) is
searched for in the release notebooks, in the student wheel, and in the code the grading
kernel executes (the source notebooks' recording code). Feedback is searched in
tests/test_course.py (the sample class) and tests/test_hostile.py (the leak cell).

A number is searched when it is distinctive: at least three significant digits (small
counts such as 1, 3 or 64 appear everywhere as ordinary numbers), not a value a visible
test of the same notebook shows on purpose, and not one of the case's own inputs (the
overlapped time of stages that take 8.2, 0.02 and 84.4 ms is 84.4 ms: the question gives it). It is searched as written in many
forms: Python's repr, an integer with and without thousands separators, and ``%g``.
Strings are choices from options the prompt lists, so they are not searched.
"""

import re
import zipfile

import nbformat
import pytest

from coursekit.grading import authoring

from .conftest import ROOT

ASSIGNMENTS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


def _numbers(value):
    if isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif type(value) in (int, float):
        yield value


def _significant(x) -> str:
    digits = re.sub(r"[^0-9]", "", f"{abs(x):.15g}".split("e")[0]).strip("0")
    return digits


def _visible_numbers(text: str) -> set:
    """Numbers written in the visible part of test cells (shown to students on purpose)."""
    found = set()
    for cell in authoring.parse(text):
        if cell.kind == "test":
            visible = authoring.HIDDEN.sub("", cell.source + "\n")
            for token in re.findall(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:e[-+]?\d+)?", visible):
                found.add(float(token.replace("_", "")))
    return found


def distinctive_answers(aid: str) -> set:
    """The expected numbers of ``aid``'s hidden cases worth searching for (see above)."""
    text = authoring.read_py(ROOT / "notebooks" / f"{aid}.py")
    shown = _visible_numbers(text)
    out = set()
    for gid, spec in authoring.answer_key(text).items():
        for case in spec["cases"]:
            call = next(line for line in spec["kernel_code"].splitlines()
                        if line.startswith(f"_record_({gid!r}, {case['id']!r},"))
            inputs = {float(t) for t in re.findall(
                r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)?", call.split("lambda:", 1)[1])}
            for x in _numbers(case["expect"].get("value")):
                if len(_significant(x)) >= 3 and float(x) not in shown | inputs:
                    out.add(x)
    return out


def forms(x) -> set:
    """Ways a number is commonly written."""
    out = {repr(x), f"{x:g}", f"{x:.6g}"}
    if float(x).is_integer():
        n = int(x)
        out |= {str(n), f"{n:,}", f"{n:_}"}
    return {f for f in out if len(re.sub(r"[^0-9]", "", f)) >= 3}


def find_answers(text: str, answers) -> list:
    """The answers (and the form found) that occur in ``text`` as whole numbers."""
    hits = []
    for x in sorted(answers):
        for f in sorted(forms(x)):
            if re.search(r"(?<![\w.,])" + re.escape(f) + r"(?![\w]|[.,]\d)", text):
                hits.append((x, f))
                break
    return hits


def test_the_search_finds_what_it_should():
    assert find_answers("the answer is 1,494,220,800 bytes", {1494220800}) == [
        (1494220800, "1,494,220,800")]
    assert find_answers("x = 0.0864", {0.0864}) == [(0.0864, "0.0864")]
    assert find_answers("x = 10.0864", {0.0864}) == []
    assert find_answers("8192.5", {8192}) == []
    assert 24e9 not in distinctive_answers("02_memory_calculator")  # two digits: "24"
    assert 1494220800 not in distinctive_answers("02_memory_calculator")  # shown visibly
    assert 445_644_800 in distinctive_answers("02_memory_calculator")


def _notebook_text(path) -> str:
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for o in cell.get("outputs", []):
            parts.append(str(o.get("text", "")) + str(o.get("data", "")))
    return "\n".join(parts)


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_release_notebook_prints_no_reference_answer(aid):
    text = _notebook_text(ROOT / "release" / aid / f"{aid}.ipynb")
    assert find_answers(text, distinctive_answers(aid)) == []


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_grading_kernel_code_holds_no_reference_answer(aid):
    nb = nbformat.read(ROOT / "source" / aid / f"{aid}.ipynb", as_version=4)
    code = "\n".join(m for c in nb.cells if c.cell_type == "code"
                     for m in authoring.HIDDEN.findall(c.source + "\n"))
    assert code
    assert find_answers(code, distinctive_answers(aid)) == []


# Library constants that happen to equal a short answer (three or four digits); each was
# looked up by hand. Longer answers have no exceptions.
WHEEL_COINCIDENCES = {
    8192: "2**13; also Llama-2-70B's hidden size in models.py and viz/memory.py",
    125: "the V100's 125 TFLOP/s fp16 peak in hardware.py",
    1.25: "10 GbE = 1.25 GB/s in hardware.py; Table 5's 1.25 FLOP/byte in roofline.py",
    256: "2**8: SHA-256 in docstrings, the image batch of Listing 4, the sandbox's process limit",
}


def test_student_wheel_holds_no_reference_answer(tmp_path):
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path), str(ROOT)], check=True,
                   cwd=tmp_path)
    (wheel,) = tmp_path.glob("coursekit-*.whl")
    answers = set().union(*(distinctive_answers(a) for a in ASSIGNMENTS))
    with zipfile.ZipFile(wheel) as zf:
        text = "\n".join(zf.read(n).decode("utf-8", "replace") for n in zf.namelist()
                         if n.endswith((".py", ".json", ".txt")))
    hits = find_answers(text, answers - set(WHEEL_COINCIDENCES))
    assert hits == []
