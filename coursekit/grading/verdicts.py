"""Verdicts outside the kernel: compare recorded cases with the instructor's key.

After the trusted template has run, :class:`SaveVerdicts` (nbgrader's autograde step,
replacing ``SaveAutoGrades``) reads, for every test cell, the case records that cell
emitted (plain data, :data:`coursekit.grading.checks.RECORD_MIME`) and compares them with
the key parsed from ``notebooks/<assignment>.py``. The key never enters the kernel.

* A cell's score is ``points * (weights of passed cases) / (weights of all cases)``.
* A case whose record is missing, duplicated, malformed, or emitted by another cell scores
  0, and its verdict says which. Errors, printed text or an execute_result never matter.
* If the student's code reaches a reference function the cell forbids (static analysis,
  :mod:`coursekit.grading.static`, or the in-kernel tripwire), every case of the cell
  scores 0 with the reason. Dynamic code is flagged for review (needs manual grade).

The test cell's outputs are replaced by a one-line-per-case summary (label, points, and
for a failed case the value got), which is what feedback shows; the verdicts are also
stored in ``metadata.coursekit.verdicts`` for the course report. Expected values never
appear in either.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.preprocessors import SaveAutoGrades
from traitlets import Unicode

from . import authoring, static
from .checks import RECORD_MIME

_KEYS: dict = {}


@dataclass(frozen=True)
class CaseVerdict:
    """One case's outcome (no expected value in it)."""

    case: str
    name: str
    points: float
    earned: float
    status: str  # pass, wrong, missing, duplicated, malformed, misplaced, delegated
    detail: str = ""

    def as_dict(self) -> dict:
        return {"case": self.case, "name": self.name, "points": self.points,
                "earned": self.earned, "status": self.status, "detail": self.detail}


def load_key(root, aid: str) -> dict:
    """The key of an assignment from ``notebooks/<aid>.py`` (cached by modification time)."""
    path = Path(root) / "notebooks" / f"{aid}.py"
    stamp = path.stat().st_mtime_ns
    cached = _KEYS.get(str(path))
    if cached and cached[0] == stamp:
        return cached[1]
    key = authoring.answer_key(authoring.read_py(path))
    _KEYS[str(path)] = (stamp, key)
    return key


# ---------------------------------------------------------------------------- comparing


def _number(value):
    """A recorded value as a float if it is a plain number (not a bool), else None."""
    if type(value) in (int, float):
        return float(value)
    if isinstance(value, dict) and set(value) == {"$float"}:
        return float(value["$float"]) if value["$float"] in ("nan", "inf", "-inf") else None
    return None


def _close(got, expected, rel, tol) -> bool:
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(
            _close(g, e, rel, tol) for g, e in zip(got, expected))
    g = _number(got)
    return g is not None and math.isfinite(g) and abs(g - expected) <= rel * abs(expected) + tol


def _exact(got, expected) -> bool:
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(
            _exact(g, e) for g, e in zip(got, expected))
    if type(expected) is float:
        return _number(got) == expected
    return type(got) is type(expected) and got == expected


def _safe_predicate(source: str):
    return eval(source, {"__builtins__": {"abs": abs, "min": min, "max": max, "len": len,
                                         "sum": sum, "all": all, "any": any, "sorted": sorted,
                                         "round": round, "isinstance": isinstance,
                                         "int": int, "float": float, "str": str,
                                         "bool": bool, "list": list, "dict": dict,
                                         "set": set, "range": range}})


def compare(expect: dict, record: dict) -> bool:
    """Whether one well-formed record meets one expectation."""
    kind = expect["kind"]
    if kind == "raises":
        return record.get("outcome") == "raised" and expect["exception"] in record.get(
            "exception", [])
    if record.get("outcome") != "value":
        return False
    got = record.get("value")
    if kind == "approx":
        return _close(got, expect["value"], expect["rel"], expect["abs"])
    if kind == "exactly":
        return _exact(got, expect["value"])
    try:
        return _safe_predicate(expect["source"])(got) is True
    except Exception:  # noqa: BLE001 - a predicate failing on odd data is a wrong answer
        return False


def _well_formed(data) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("case"), str):
        return False
    if data.get("outcome") == "value":
        return "value" in data
    return data.get("outcome") == "raised" and isinstance(data.get("exception"), list) \
        and all(isinstance(e, str) for e in data["exception"])


def _got_text(record) -> str:
    if record.get("outcome") == "raised":
        names = record.get("exception") or ["an exception"]
        return f"raised {names[0]}"
    value = record.get("value")
    if value is None:
        return "got None: did you forget `return`?"
    text = repr(value) if not isinstance(value, dict) else "an object"
    return "got " + (text if len(text) <= 60 else text[:57] + "...")


def records_by_cell(nb) -> dict:
    """grade_id of the emitting cell -> list of record payloads, in output order."""
    out = {}
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or cell.get("id")
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = o.get("data", {}) if o.get("output_type") in (
                "display_data", "execute_result") else {}
            if RECORD_MIME in data:
                out.setdefault(gid, []).append(data[RECORD_MIME])
    return out


def judge_cell(cell_id: str, spec: dict, records: dict, delegated=()) -> list:
    """The verdicts of one test cell's cases."""
    cases = spec["cases"]
    total = sum(c["weight"] for c in cases)
    own = [r for r in records.get(cell_id, [])]
    elsewhere = {r.get("case") for other, rs in records.items() if other != cell_id
                 for r in rs if isinstance(r, dict) and r.get("cell") == cell_id}
    verdicts = []
    for case in cases:
        points = round(spec["points"] * case["weight"] / total, 4)
        mine = [r for r in own if isinstance(r, dict) and r.get("case") == case["id"]]

        def v(status, detail="", earned=0.0, case=case, points=points):
            return CaseVerdict(case["id"], case["name"], points, earned, status, detail)

        if delegated:
            verdicts.append(v("delegated", "calls the coursekit reference "
                              + ", ".join(sorted(delegated)) + " instead of its own code"))
        elif not mine:
            verdicts.append(v("misplaced", "its record came from another cell")
                            if case["id"] in elsewhere else v("missing", "no record: the "
                            "test did not run to this case"))
        elif len(mine) > 1:
            verdicts.append(v("duplicated", f"{len(mine)} records for one case"))
        elif not _well_formed(mine[0]) or mine[0].get("cell") != cell_id:
            verdicts.append(v("malformed", "the record is not what the test emits"))
        elif mine[0].get("delegated"):
            verdicts.append(v("delegated", "called the coursekit reference at run time"))
        elif compare(case["expect"], mine[0]):
            verdicts.append(v("pass", earned=points))
        else:
            verdicts.append(v("wrong", _got_text(mine[0])))
    return verdicts


def cell_score(spec: dict, verdicts) -> float:
    """Points of a cell: exact full marks when every case passes."""
    total = sum(c["weight"] for c in spec["cases"])
    passed = sum(c["weight"] for c, v in zip(spec["cases"], verdicts) if v.status == "pass")
    return float(spec["points"]) if passed == total else round(
        spec["points"] * passed / total, 4)


def summary_text(verdicts, score, points) -> str:
    """What feedback shows for a test cell: one line per case."""
    lines = [f"Autograder: {score:g} / {points:g} points"]
    for v in verdicts:
        mark = "✓" if v.status == "pass" else "✗"
        extra = "" if v.status == "pass" else f" ({v.status}: {v.detail})" if v.detail \
            else f" ({v.status})"
        lines.append(f"  {mark} {v.name}: {v.earned:g}/{v.points:g}{extra}")
    return "\n".join(lines)


def student_cells(nb) -> list:
    """The code the student wrote, as the kernel ran it, in order: ``(source, added,
    grade_id of the test cell it precedes)`` for answer cells and added cells."""
    out, pending = [], []
    for cell in nb.cells:
        meta = cell.get("metadata", {})
        nbg = meta.get("nbgrader", {})
        if cell.cell_type == "code" and (nbg.get("solution") or meta.get("coursekit", {}).get(
                "added")):
            pending.append([cell.source, bool(meta.get("coursekit", {}).get("added")), None])
        if nbg.get("grade"):
            for entry in pending:
                entry[2] = nbg.get("grade_id")
            out += pending
            pending = []
    return [tuple(e) for e in out + pending]


def delegation(nb, key: dict) -> tuple:
    """``({test grade_id: forbidden names its item reaches}, dynamic findings)``; an
    item is the answer cells before its test cell, plus what they call (static.reach)."""
    cells = student_cells(nb)
    result = {}
    for gid, spec in key.items():
        names = {n.rpartition(".")[2] for case in spec["cases"] for n in case["forbid"]}
        if not names:
            result[gid] = []
            continue
        item = [(src, added) for src, added, test in cells if test == gid and not added]
        others = [(src, added) for src, added, test in cells if test != gid or added]
        found = static.analyze(static.reach(item, others), names)
        result[gid] = sorted(found.references)
    dynamic = static.analyze([src for src, _, _ in cells], set()).dynamic
    return result, list(dynamic)


def grade_notebook(nb, key: dict) -> dict:
    """Judge every test cell of an executed template notebook (in place: the test cells'
    outputs become the summaries). Returns ``{grade_id: {"score", "points", "verdicts",
    "dynamic"}}``."""
    records = records_by_cell(nb)  # read, then removed from every cell's outputs
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("outputs"):
            cell.outputs = [o for o in cell.outputs if RECORD_MIME not in o.get("data", {})]
    delegated, dynamic = delegation(nb, key)
    results = {}
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid not in key or not cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            continue
        spec = key[gid]
        verdicts = judge_cell(gid, spec, records, delegated[gid])
        score = cell_score(spec, verdicts)
        results[gid] = {"score": score, "points": spec["points"],
                        "verdicts": [v.as_dict() for v in verdicts], "dynamic": dynamic}
        cell.outputs.append(nbformat.v4.new_output(
            "stream", name="stdout", text=summary_text(verdicts, score, spec["points"]) + "\n"))
    missing = set(key) - set(results)
    if missing:
        raise RuntimeError(f"test cells {sorted(missing)} of the key are not in the "
                           "notebook: source/ is stale, run `make build`")
    return results


def check_template(nb, key: dict) -> None:
    """Raise if the executed notebook's recording code is not the key's (stale build)."""
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in key and key[gid]["kernel_code"] not in cell.source:
            raise RuntimeError(f"test cell {gid} in source/ does not match notebooks/: "
                               "run `make build`")


class SaveVerdicts(SaveAutoGrades):
    """Autograde step: per-case verdicts outside the kernel, saved into the gradebook."""

    course_root = Unicode("", help="course directory holding notebooks/").tag(config=True)

    def preprocess(self, nb, resources):
        root = self.course_root or os.getcwd()
        key = load_key(root, resources["nbgrader"]["assignment"])
        check_template(nb, key)
        self._results = grade_notebook(nb, key)
        nb.metadata.setdefault("coursekit", {})["verdicts"] = self._results
        return super().preprocess(nb, resources)

    def _add_score(self, cell, resources):
        gid = cell.metadata["nbgrader"]["grade_id"]
        grade = self.gradebook.find_grade(gid, self.notebook_id, self.assignment_id,
                                          self.student_id)
        result = self._results.get(gid)
        grade.auto_score = result["score"] if result else None
        grade.needs_manual_grade = bool(grade.manual_score is not None or result is None
                                        or result["dynamic"])
        self.gradebook.db.commit()
