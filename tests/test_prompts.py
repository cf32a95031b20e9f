"""Every behaviour a hidden test checks is stated in the prompt the student reads (issue #15
item 2).

The prompt of a test cell is what the release notebook shows between the previous test cell
and it: the markdown, the answer stub with its docstring, the demos. The contract read from
each hidden case:

* ``ck.raises(E)``: the prompt names ``E``;
* ``ck.exactly(<int>)``: the prompt asks for an int (``int``, ``integer`` or ``whole
  number``), because an exact check compares types and ``5.0`` is not ``5``;
* 07's graded numbers: the prompt states the precision ("3 significant digits"), and the
  hidden tolerance accepts every answer written to that precision.
"""

import importlib.util
import json
import re

import pytest

from coursekit.grading import authoring

from .conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[1-68]_*.py"))
INT_WORDS = re.compile(r"\bint\b|\bints\b|integer|whole number")


def contracts(path):
    """(test cell id, case, prompt text) for every hidden case of one notebook."""
    release = json.loads((ROOT / "release" / path.stem / f"{path.stem}.ipynb").read_text())
    cells = release["cells"]
    ids = [c.get("metadata", {}).get("nbgrader", {}).get("grade_id") for c in cells]
    for spec in authoring.parse(authoring.read_py(path)):
        for case in getattr(spec, "cases", None) or ():
            j, parts = ids.index(spec.grade_id) - 1, []
            while j >= 0 and not cells[j].get("metadata", {}).get("nbgrader", {}).get("grade"):
                parts.insert(0, "".join(cells[j]["source"]))
                j -= 1
            yield spec.grade_id, case, "\n".join(parts)


def broken_contracts(path) -> list:
    problems = []
    for cell_id, case, prompt in contracts(path):
        expect = case["expect"]
        if expect["kind"] == "raises" and expect["exception"] not in prompt:
            problems.append(f"{cell_id}/{case['id']}: raises {expect['exception']}, "
                            "which the prompt never asks for")
        if expect["kind"] == "exactly":
            values = expect["value"] if isinstance(expect["value"], list) else [expect["value"]]
            if any(type(v) is int for v in values) and not INT_WORDS.search(prompt):
                problems.append(f"{cell_id}/{case['id']}: expects an int, the prompt never "
                                "says so")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_hidden_behaviour_is_in_the_prompt(path):
    assert broken_contracts(path) == []


def test_contract_check_finds_an_unstated_rule(monkeypatch):
    """Remove the sentence that asks for ValueError and the check must complain."""
    path = ROOT / "notebooks" / "03_bottlenecks.py"
    original = contracts

    def without_value_error(p):
        for cell_id, case, prompt in original(p):
            yield cell_id, case, prompt.replace("ValueError", "an error")
    monkeypatch.setitem(globals(), "contracts", without_value_error)
    assert any("raises ValueError" in p for p in broken_contracts(path))


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_selfcheck_keys", ROOT / "tools" / "build_selfcheck_keys.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_graded_07_numbers_state_their_precision_and_accept_it():
    build = _builder()
    text = authoring.read_py(ROOT / "notebooks" / "07_self_checks.py")
    for _, it in build.all_items():
        if it["kind"] != "number":
            continue
        block = text[text.index(f"**{it['var']}.**"):]
        block = block[:block.index("\n# %%")]
        if it.get("integer"):
            assert "whole number" in block, it["qid"]
            continue
        assert "3 significant digits" in block, it["qid"]
        rounded = float(f"{it['answer']:.3g}")
        assert abs(rounded - it["answer"]) <= it["rel"] * abs(it["answer"]), it["qid"]
