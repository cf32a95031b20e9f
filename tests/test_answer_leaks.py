"""No hidden-test answer is printed in a release notebook (issue #15 item 1).

Every reference value of every hidden case (``ck.approx`` / ``ck.exactly`` numbers in
notebooks/0N_*.py) is searched for in each release notebook's markdown and non-test code
(answer stubs, demos, prediction cells), in the forms a student would read it: as written,
rounded to 2-4 significant digits, with thousands separators, and as a percent. Allowed:
a value a visible test shows on purpose (a literal in a visible test cell of the same
notebook), and the few listed in ALLOWED, where the answer is a number the problem gives.
"""

import json
import sys
import re
from pathlib import Path

import pytest

from coursekit.grading import authoring

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[1-68]_*.py"))

# (assignment, case id) -> why the number may appear: the answer is a given of the problem.
ALLOWED = {
    ("01_training_cost", "Table_19_energy"):
        "the chapter's Table 19 lists 3,914 kWh; the case checks the student reproduces it",
    ("03_bottlenecks", "Example_1.1_overlapped"):
        "overlapped, the step is the slowest stage: the given 84.4 ms accelerator step",
    ("03_bottlenecks", "batch_65"):
        "Table 6's 65 -> 67.7% is the worked example; the prediction asks for 97 and 100",
    ("06_continuous_batching", "lesson_8_requests_continuous"):
        "with nothing queued, continuous batching ends with the longest request: 200 steps, "
        "a length the lesson gives",
}


def _sig_digits(text: str) -> int:
    """Significant digits as written (trailing zeros after a decimal point do not count:
    "0.100" is as common as "0.1")."""
    if "." in text:
        text = text.rstrip("0")
    return len(re.sub(r"[^0-9]", "", text).lstrip("0"))


def number_forms(value) -> set:
    """How a student would see ``value`` written: repr, 2-4 significant digits, thousands
    separators, percent (for 0 < |value| < 1). Too-common forms (integers below 100, one
    significant digit) are left out."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value == 0:
        return set()
    a, out = abs(value), {repr(value)}
    for n in (2, 3, 4):
        out.add(f"{value:.{n}g}")
        out.add(f"{value:.{n - 1}f}")          # fixed decimals: "2.470", "0.86"
        if a >= 1000 and n >= 3:
            out.add(f"{float(f'{value:.{n}g}'):,.0f}")
        if a < 1:
            out.add(f"{value * 100:.{n}g}%")
    if a >= 1000:
        out.add(f"{value:,.0f}")
        if float(value).is_integer():
            out.add(str(int(value)))

    def distinctive(form):
        if "e" in form.lower() and not form.endswith("%"):
            return False
        number = form.rstrip("%").replace(",", "")
        if not form.endswith("%") and float(number).is_integer() and abs(float(number)) < 100:
            return False
        return _sig_digits(number) >= 2
    return {f for f in out if distinctive(f)}


def hidden_values(path: Path) -> list:
    """(case id, value) for every number a hidden case expects."""
    out = []
    for cell in authoring.parse(authoring.read_py(path)):
        for case in getattr(cell, "cases", None) or ():
            expect = case["expect"]
            if expect["kind"] in ("approx", "exactly"):
                v = expect["value"]
                for x in (v if isinstance(v, (list, tuple)) else [v]):
                    if isinstance(x, (int, float)) and not isinstance(x, bool):
                        out.append((case["id"], x))
    return out


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _cells(aid: str) -> list:
    """(index, is a test cell, source and pinned output text) of each release cell."""
    nb = json.loads((ROOT / "release" / aid / f"{aid}.ipynb").read_text(encoding="utf-8"))
    out = []
    for i, c in enumerate(nb["cells"]):
        shown = [_text(o.get("text")) + _text(o.get("data", {}).get("text/plain"))
                 + _text(o.get("data", {}).get("text/markdown")) for o in c.get("outputs", [])]
        out.append((i, c.get("metadata", {}).get("nbgrader", {}).get("grade", False),
                    "\n".join([_text(c["source"]), *shown])))
    return out


def _visible_literals(cells) -> list:
    """Numbers written in the visible test cells (shown to the student on purpose)."""
    found = []
    for _, graded, src in cells:
        if graded:
            found += [float(m.replace("_", "")) for m in
                      re.findall(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?", src)]
    return found


def executed_cells(nb) -> list:
    """:func:`_cells` of an executed notebook node: what the student sees after running it
    (each cell's source and outputs)."""
    out = []
    for i, c in enumerate(nb.cells):
        shown = [_text(o.get("text")) + _text(o.get("data", {}).get("text/plain"))
                 + _text(o.get("data", {}).get("text/markdown")) for o in c.get("outputs", [])
                 if o.get("output_type") != "error"]
        out.append((i, c.get("metadata", {}).get("nbgrader", {}).get("grade", False),
                    "\n".join([c.source, *shown])))
    return out


def leaks(path: Path, cells=None) -> list:
    """Hidden answers readable in the release notebook of ``path`` (or in ``cells``, e.g.
    :func:`executed_cells` of the release notebook after a run)."""
    aid = path.stem
    cells = _cells(aid) if cells is None else cells
    visible = _visible_literals(cells)
    found = []
    for case_id, value in hidden_values(path):
        if (aid, case_id) in ALLOWED or any(
                abs(v - value) <= 1e-9 * max(1.0, abs(value)) for v in visible):
            continue
        for form in sorted(number_forms(value)):
            # a unit may follow ("2.47x", "84.4ms"); another digit or an exponent may not
            pattern = re.compile(r"(?<![\w.,])" + re.escape(form)
                                 + r"(?!\d|[.,]\d|[eE][+-]?\d|%)")
            for i, graded, src in cells:
                if graded:
                    continue
                for m in pattern.finditer(src):
                    line = src.splitlines()[src[:m.start()].count("\n")].strip()
                    found.append(f"{aid} cell {i}: {case_id} = {value!r} as {form!r}: "
                                 f"{line[:100]}")
    return found


def test_number_forms_cover_the_ways_a_number_is_written():
    assert {"0.086", "0.0864", "8.6%", "8.64%"} <= number_forms(0.0864)
    assert {"20,500", "20,450", "20,455"} <= number_forms(20454.545)
    assert not [f for f in number_forms(20454.545) if "e" in f]
    assert {"1,092", "1092"} <= number_forms(1092)
    assert "2.470" in number_forms(2.46964)
    assert number_forms(2) == set() and number_forms(0.1) == {"10%"}


def test_detector_finds_a_planted_answer(tmp_path, monkeypatch):
    planted = {(0, False, "The MFU comes out at **8.64%** here.")}
    monkeypatch.setattr(sys.modules[__name__], "_cells", lambda aid: list(planted))
    found = leaks(ROOT / "notebooks" / "01_training_cost.py")
    assert any("Example_1.3_MFU" in f and "8.64%" in f for f in found), found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_release_prints_no_hidden_answer(path):
    assert leaks(path) == []


def test_allowed_entries_are_still_needed():
    """An ALLOWED entry whose case no longer exists is stale."""
    ids = {(p.stem, cid) for p in NOTEBOOKS for cid, _ in hidden_values(p)}
    assert set(ALLOWED) <= ids, set(ALLOWED) - ids
