"""The student library's pieces (issue #14 item 3): the replay encoding and keys
(coursekit/replay.py), the source transform and the explorer sweep
(coursekit/grading/studentlib.py). The whole wheel is tested in test_student_bundle.py."""

import ast
import math

import ipywidgets as w
import numpy as np
import pytest

from coursekit import replay as rp
from coursekit.grading import studentlib
from coursekit.training import memory


@pytest.mark.parametrize("value", [
    1.5, float("inf"), -0.0, 7, True, None, "text", np.float32(0.25), np.int64(3),
    np.arange(6, dtype=np.int32).reshape(2, 3), np.linspace(0, 1, 5),
    np.array([{"a": 1}, None], dtype=object), (1, (2.5, "x")), [1, [2, None]],
    {(1, 2): "pair", 3: [4.0]}, {1, 2, 3}, frozenset({"a"}), range(2, 9, 3),
    memory.zero_bytes_per_gpu(7e9, 8, 2),
])
def test_encode_decode_round_trip(value):
    back = rp.decode(rp.encode(value))
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and back.shape == value.shape
        assert back.tolist() == value.tolist()
    else:
        assert back == value


def test_nan_and_generators_round_trip():
    assert math.isnan(rp.decode(rp.encode(float("nan"))))
    rng = np.random.default_rng(5)
    rng.random(3)
    again = rp.decode(rp.encode(rng))
    assert again.random() == rng.random()


def test_call_keys_ignore_argument_order_and_float_noise_only():
    assert rp.call_key("m.f", {"a": 0.35, "b": 2}) == rp.call_key("m.f", {"b": 2, "a": 35 * 0.01})
    assert rp.call_key("m.f", {"a": np.array([0.1 + 0.2])}) == \
        rp.call_key("m.f", {"a": np.array([0.3])})
    assert rp.call_key("m.f", {"a": 0.35}) != rp.call_key("m.f", {"a": 0.36})
    assert rp.call_key("m.f", {"a": 1}) != rp.call_key("m.g", {"a": 1})
    with pytest.raises(rp.Unencodable):
        rp.call_key("m.f", {"fn": lambda x: x})          # a notebook's own function


MODULE = '''"""Doc."""
from __future__ import annotations


def _only_graded(x):
    return x * 2  # the formula


def _shared(x):
    return x + 1


def graded(x, y=3):
    """Contract: 2x + 1, bytes."""
    return _shared(_only_graded(x)) + y


def public(x):
    return _shared(x)
'''


def test_strip_module_keeps_the_contract_and_drops_the_implementation():
    new, stripped = studentlib.strip_module(MODULE, "pkg.mod", {"pkg.mod.graded"})
    assert stripped == ["graded"]
    tree = ast.parse(new)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert set(funcs) == {"_shared", "graded", "public"}   # _only_graded had no other use
    assert ast.get_docstring(funcs["graded"]) == "Contract: 2x + 1, bytes."
    assert ast.unparse(funcs["graded"].body[-1]) == \
        "return _replay_('pkg.mod.graded', locals())"
    assert "the formula" not in new and "x * 2" not in new
    assert new.index("from __future__") < new.index("from coursekit.replay import")


@pytest.mark.parametrize("control,expected", [
    (w.IntSlider(value=3, min=1, max=5), [1, 2, 3, 4, 5]),
    (w.Dropdown(options=[("one", 1), ("two", 2)], value=1), [1, 2]),
    (w.SelectionSlider(options=[4, 8, 16], value=4), [4, 8, 16]),
    (w.ToggleButtons(options=["static", "continuous"]), ["static", "continuous"]),
])
def test_control_values_are_every_setting_a_student_can_pick(control, expected):
    assert studentlib.control_values(control) == expected


def test_float_slider_values_include_each_step():
    values = studentlib.control_values(w.FloatSlider(value=0.8, min=0.0, max=0.99, step=0.01))
    assert len(values) == 100 and values[35] == 0.35 and values[-1] == 0.99
    logs = studentlib.control_values(w.FloatLogSlider(value=0.05, base=10, min=-3, max=0,
                                                      step=0.1))
    assert len(logs) == 31 and logs[0] == pytest.approx(1e-3) and logs[-1] == 1.0


def test_the_instructors_library_has_no_table_to_replay():
    """A submission that calls the replay hook in the grading kernel (the instructor's full
    library) to borrow recorded answers gets an error, never a value: the table exists only
    in the student wheel, and a graded call replayed there comes from the notebooks' own
    arguments, not the hidden tests'."""
    rp._table.cache_clear()
    with pytest.raises(rp.NotInStudentLibrary, match="missing from this student library"):
        rp.replay("coursekit.training.memory.model_state_bytes",
                  {"n_params": 1.5e9, "recipe": "mixed+adam"})
