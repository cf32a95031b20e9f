"""Every explorer widget: built without a student function, and every label readable in
full (issue #14: ipywidgets cut "micro-batch" to "micro-bat…" at its default 90 px)."""

import matplotlib
import pytest

from coursekit.parallel import advisor
from coursekit.viz import batching, memory, parallel, speculative, training

matplotlib.use("Agg")

EXPLORERS = {
    "memory": memory.memory_explorer,
    "roofline": training.roofline_explorer,
    "pipeline": training.pipeline_explorer,
    "speculative": speculative.speculative_explorer,
    "timeline": lambda: batching.timeline_explorer(n_requests=20),
    # 04's puzzle job (notebooks/04_parallelism_advisor.py)
    "parallel": lambda: parallel.parallelism_configurator(advisor.make_job(
        "gpt3-175b", 64, "A100-80GB", 8, "NVLink-A100", "InfiniBand-HDR", 64, 2048)),
}


def _widgets(w):
    yield w
    for child in getattr(w, "children", ()):
        yield from _widgets(child)


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_every_label_is_shown_in_full(name):
    labelled = [w for w in _widgets(EXPLORERS[name]()) if getattr(w, "description", "")]
    assert labelled, f"{name}: no labelled control"
    cut = [w.description for w in labelled if w.style.description_width != "initial"]
    assert cut == [], f"{name}: labels that ipywidgets may cut: {cut}"


def test_memory_explorer_has_the_attention_kernel():
    # issue #17: eager (the default, Korthikanti's 5as/h term) or SDPA / FlashAttention
    box = memory.memory_explorer()
    attention = [w for w in _widgets(box) if getattr(w, "description", "") == "attention"]
    assert len(attention) == 1
    assert [v for _, v in attention[0].options] == ["eager", "sdpa"]
    assert attention[0].value == "eager"
    attention[0].value = "sdpa"  # redraws headless without an error
