"""training_peak_memory against every row of the H200 GPT-2 training-memory measurements.

Data: coursekit/data/h200_gpt2_training_memory.json (copied from the course data set
../shared/data/h200-gpt2, section A: one NVIDIA H200, PyTorch 2.11.0+cu130, transformers
5.17.0, GPT-2 124M/355M/1.5B with random weights, s = 1024, dropout 0.1, Hugging Face loss,
zero_grad(set_to_none=True)). The measured activation peak is the data README's
definition: peak of a steady-state step (peak_fwd_bwd2) minus parameters + gradients +
optimizer state.

Model settings that describe these runs (not fitted): Hugging Face GPT-2 uses
activation_function="gelu_new", the tanh GELU written as tensor ops
(transformers.activations.NewGELUActivation) -> gelu="python-tanh"; the data's modes map
to precision fp32 (fp32_adamw_*), bf16-autocast (bf16_autocast_adamw) and bf16
(bf16_pure_adamw); gradient checkpointing per block -> recompute="full".

Run ``python tests/test_h200_memory.py`` to print the table (before = the eager-only
Korthikanti formula as the library computed it before issue #17, after = the peak model).
"""

import json
from importlib import resources

import pytest

from coursekit.models import get_model
from coursekit.training import memory as mem

GiB = 2**30
ROWS = json.loads(resources.files("coursekit.data").joinpath(
    "h200_gpt2_training_memory.json").read_text())["rows"]
MODEL = {"124M": "gpt2-124m", "355M": "gpt2-355m", "1.5B": "gpt2-1.5b"}
PRECISION = {"fp32_adamw_default": "fp32", "bf16_autocast_adamw": "bf16-autocast",
             "bf16_pure_adamw": "bf16"}
TOLERANCE = 0.25

# Rows the model cannot reach within +-25% without a fudge factor. All are gradient-
# checkpointing runs whose activations are small next to the gradients, so the peak falls
# late in the backward, where the model counts all gradients + one recomputed layer (or
# the embedding's dense V x h gradient) but not the backward's per-layer gradient
# temporaries. The model under-predicts there. The 1.5B rows also carry 0.12-0.27 GiB
# that the allocator still holds after the first optimizer step
# (opt_state_alloc_measured - opt_state_bytes in the raw data), which the README's
# "peak - static" counts as activation.
KNOWN_LIMITS = {
    "124M-fp32-eager-ckpt-B1", "124M-fp32-sdpa-ckpt-B1", "124M-bf16-autocast-eager-ckpt-B1",
    "124M-bf16-autocast-sdpa-ckpt-B1", "355M-fp32-eager-ckpt-B1", "355M-fp32-sdpa-ckpt-B1",
    "355M-bf16-eager-ckpt-B1", "355M-bf16-sdpa-ckpt-B1",
    "1.5B-bf16-autocast-eager-ckpt-B1", "1.5B-bf16-autocast-eager-ckpt-B4",
    "1.5B-bf16-autocast-eager-ckpt-B8", "1.5B-bf16-autocast-sdpa-ckpt-B1",
    "1.5B-bf16-autocast-sdpa-ckpt-B4", "1.5B-bf16-autocast-sdpa-ckpt-B8",
    "1.5B-bf16-eager-ckpt-B1", "1.5B-bf16-sdpa-ckpt-B1",
}


def row_id(row):
    ckpt = "-ckpt" if row["ckpt"] else ""
    return f"{row['size']}-{PRECISION[row['mode']]}-{row['attn']}{ckpt}-B{row['B']}"


def predict(row):
    return mem.training_peak_memory(
        MODEL[row["size"]], micro_batch=row["B"], seq_len=row["S"],
        precision=PRECISION[row["mode"]], attention=row["attn"], dropout=True,
        gelu="python-tanh", recompute="full" if row["ckpt"] else "none")


def measured(row):
    static = row["param_bytes"] + row["grad_bytes"] + row["opt_state_bytes"]
    return row["peak_fwd_bwd2"] - static


def before(row):
    """The library's estimate before issue #17: Korthikanti, eager, no buffers."""
    return mem.activation_bytes(MODEL[row["size"]], row["S"], row["B"],
                                recompute="full" if row["ckpt"] else "none")


def table():
    lines = [f"{'row':<34} {'measured':>9} {'before':>8} {'ratio':>6} {'after':>8} "
             f"{'ratio':>6}  phase (GiB)"]
    for row in sorted(ROWS, key=lambda r: (r["param_count"], r["mode"], r["attn"],
                                           r["ckpt"], r["B"])):
        p, meas = predict(row), measured(row)
        flag = "  outside +-25% (known limit)" if row_id(row) in KNOWN_LIMITS else ""
        lines.append(f"{row_id(row):<34} {meas / GiB:>9.3f} {before(row) / GiB:>8.3f} "
                     f"{before(row) / meas:>6.2f} {p.activation_peak / GiB:>8.3f} "
                     f"{p.activation_peak / meas:>6.2f}  {p.phase}{flag}")
    return "\n".join(lines)


def test_every_row_is_covered_once():
    ids = [row_id(r) for r in ROWS]
    assert len(ids) == len(set(ids)) == 88
    assert KNOWN_LIMITS <= set(ids)


@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_static_bytes_exact(row):
    p = predict(row)
    assert (p.weights, p.gradients, p.master + p.optimizer) == (
        row["param_bytes"], row["grad_bytes"], row["opt_state_bytes"])
    assert get_model(MODEL[row["size"]]).n_params == row["param_count"]
    assert measured(row) == row["activation_est"]  # the README's definition


@pytest.mark.parametrize("row", [
    pytest.param(r, marks=pytest.mark.xfail(strict=True, reason="gradient checkpointing "
                                            "with small activations: the peak is set by "
                                            "backward temporaries the model leaves out"))
    if row_id(r) in KNOWN_LIMITS else r for r in ROWS], ids=row_id)
def test_activation_peak_within_25_percent(row):
    ratio = predict(row).activation_peak / measured(row)
    print(f"{row_id(row)}: predicted/measured = {ratio:.3f}")
    assert 1 - TOLERANCE <= ratio <= 1 + TOLERANCE, f"{row_id(row)}: ratio {ratio:.3f}"


def test_every_row_without_checkpointing_is_within_25_percent():
    # the regime: eager and SDPA, fp32, fp32-autocast and pure bf16, every size
    # and batch measured, no gradient checkpointing
    plain = [r for r in ROWS if not r["ckpt"]]
    assert len(plain) == 44
    ratios = {row_id(r): predict(r).activation_peak / measured(r) for r in plain}
    assert all(1 - TOLERANCE <= x <= 1 + TOLERANCE for x in ratios.values()), ratios


def test_known_limits_are_underestimates():
    # the model leaves terms out there; it never invents memory
    for r in ROWS:
        if row_id(r) in KNOWN_LIMITS:
            assert predict(r).activation_peak < measured(r), row_id(r)


def test_eager_over_sdpa_ratios_reproduced():
    # the issue: eager / SDPA measured peaks 1.75x (124M), 2.04x (355M), 2.32x (1.5B):
    # fp32-autocast, no checkpointing, the largest micro-batch measured with eager
    # (8, 8 and 4; 1.5B eager at 8 ran out of the H200's memory)
    def pick(size, attn, b):
        return next(r for r in ROWS if r["size"] == size and r["attn"] == attn and r["B"] == b
                    and not r["ckpt"] and r["mode"] == "bf16_autocast_adamw")
    for size, b, want in (("124M", 8, 1.75), ("355M", 8, 2.04), ("1.5B", 4, 2.32)):
        eager, sdpa = pick(size, "eager", b), pick(size, "sdpa", b)
        assert measured(eager) / measured(sdpa) == pytest.approx(want, abs=0.01)
        got = predict(eager).activation_peak / predict(sdpa).activation_peak
        assert got == pytest.approx(want, rel=0.05), (size, got)


def test_print_table(capsys):
    text = table()
    print(text)
    assert len(text.splitlines()) == 89


if __name__ == "__main__":
    print(table())
