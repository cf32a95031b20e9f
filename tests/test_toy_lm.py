"""Tests for coursekit.serving.toy_lm (n-gram draft/target pair) and real speculative runs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coursekit.serving import speculative as sp
from coursekit.serving import toy_lm


@pytest.fixture(scope="module")
def models():
    return toy_lm.build_models()


def test_corpus_and_vocab(models):
    draft, target = models
    text = toy_lm.load_corpus()
    assert 3_000 < len(text.encode()) < 20_000  # "a few KB"
    assert draft.vocab == target.vocab
    assert draft.order == 2 and target.order == 3
    assert "." in target.vocab and "river" in target.vocab
    assert toy_lm.tokenize("The River, runs.") == ("the", "river", ",", "runs", ".")


def test_encode_decode_roundtrip(models):
    _, target = models
    ids = target.encode("The baker opens the shop.")
    assert target.decode(ids) == "the baker opens the shop."
    with pytest.raises(ValueError, match="vocabulary"):
        target.encode("the spaceship")


@settings(max_examples=50, deadline=None)
@given(ctx=st.lists(st.integers(0, 200), min_size=0, max_size=4))
def test_distributions_are_valid(models, ctx):
    for model in models:
        p = model.next_distribution(ctx)
        assert p.shape == (model.vocab_size,)
        assert np.all(p > 0)  # smoothed: every token possible
        assert p.sum() == pytest.approx(1.0, abs=1e-12)


def test_draft_is_bigram_target_is_trigram(models):
    draft, target = models
    a = target.encode("in the")
    b = target.encode("of the")
    np.testing.assert_allclose(draft.next_distribution(a), draft.next_distribution(b))
    assert not np.allclose(target.next_distribution(a), target.next_distribution(b))


def test_models_disagree_but_overlap(models):
    draft, target = models
    ctx = target.encode("the river")
    alpha = sp.acceptance_probability(target.next_distribution(ctx), draft.next_distribution(ctx))
    assert 0.3 < alpha < 0.95


def test_plain_generate_counts_passes(models):
    _, target = models
    g = toy_lm.generate(target, target.encode("the baker"), 20, seed=1)
    assert len(g.tokens) == 20 and g.n_passes == 20


def test_greedy_speculative_equals_target_greedy(models):
    # greedy draft-and-verify emits exactly the target's greedy text (Leviathan §2)
    draft, target = models
    prompt = target.encode("the baker opens the")
    plain = toy_lm.generate(target, prompt, 60, greedy=True)
    for k in (1, 3, 5):
        spec = sp.speculative_generate(target, draft, prompt, 60, k, verify="greedy")
        assert spec.tokens == plain.tokens
        assert spec.n_target_passes < 60
        assert spec.n_draft_passes == k * spec.n_target_passes


def test_sampling_speculative_generation(models):
    draft, target = models
    prompt = target.encode("the river")
    res = sp.speculative_generate(target, draft, prompt, 200, 4, seed=3)
    assert len(res.tokens) == 200
    assert all(0 <= a <= 4 for a in res.accepted)
    assert sum(res.accepted) + len(res.accepted) >= 200
    assert 0.2 < res.alpha_estimate < 0.9
    assert 1.0 < res.tokens_per_target_pass < 5.0
    # the measured rate follows the i.i.d. formula at the measured alpha within ~25 %
    assert res.tokens_per_target_pass == pytest.approx(
        sp.expected_tokens_per_step(res.alpha_estimate, 4), rel=0.25)


def test_bad_input(models):
    draft, target = models
    with pytest.raises(TypeError):
        toy_lm.tokenize(3)
    with pytest.raises(ValueError):
        toy_lm.build_models("too short")
    with pytest.raises(ValueError, match="verify"):
        sp.speculative_generate(target, draft, [0], 5, 2, verify="beam")
    with pytest.raises(ValueError, match="k"):
        sp.speculative_generate(target, draft, [0], 5, 0)
