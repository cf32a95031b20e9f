"""Two tiny n-gram language models for speculative decoding, built from a shipped corpus.

The draft is a smoothed bigram model, the target an interpolated trigram model
(Jelinek & Mercer 1980 interpolation; Jurafsky & Martin, "Speech and Language
Processing", 3rd ed. draft, §3.5-3.6). Both are built in milliseconds from
``coursekit/data/speculative_corpus.txt`` (original text written for the course), so
students can run real draft-and-verify generation token by token with no download.
A model maps a context (token ids) to a probability vector over the whole vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..units import check_number

TOKEN_PATTERN = re.compile(r"[a-z]+|[.,]")
"""Tokens are lower-case words and the punctuation marks '.' and ','."""

TARGET_WEIGHTS = (0.80, 0.15, 0.05)
"""Trigram / bigram / unigram interpolation weights of the target model."""

DRAFT_WEIGHTS = (0.60, 0.40)
"""Bigram / unigram interpolation weights of the draft model."""


def load_corpus() -> str:
    """The shipped training text (a few KB of original prose)."""
    return resources.files("coursekit.data").joinpath("speculative_corpus.txt") \
        .read_text(encoding="utf-8")


def tokenize(text) -> tuple:
    """Lower-cased words and '.'/',' tokens of ``text`` (a tuple of strings)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return tuple(TOKEN_PATTERN.findall(text.lower()))


@dataclass(frozen=True, eq=False)
class NGramLM:
    """An interpolated n-gram model (order 2 or 3) over a fixed vocabulary.

    p(w | a, b) = l3 c(a,b,w)/c(a,b) + l2 c(b,w)/c(b) + l1 (c(w)+1)/(N+V); an unseen
    context drops its term and renormalizes the remaining weights.
    """

    name: str
    order: int
    vocab: tuple
    weights: tuple
    unigram: np.ndarray       # (V,) add-one smoothed unigram probabilities
    bigram: np.ndarray        # (V, V) maximum-likelihood p(w | b); zero rows for unseen b
    bigram_seen: np.ndarray   # (V,) bool: context b was seen
    trigram: dict             # (a, b) -> (V,) maximum-likelihood p(w | a, b)

    @property
    def vocab_size(self) -> int:
        """Number of distinct tokens V."""
        return len(self.vocab)

    def encode(self, text) -> tuple:
        """Token ids of ``text``; a word outside the vocabulary raises ValueError."""
        index = {w: i for i, w in enumerate(self.vocab)}
        ids = []
        for tok in tokenize(text):
            if tok not in index:
                raise ValueError(f"text contains {tok!r}, which is not in the corpus vocabulary "
                                 f"({self.vocab_size} tokens, e.g. {', '.join(self.vocab[:8])})")
            ids.append(index[tok])
        return tuple(ids)

    def decode(self, ids) -> str:
        """Text of token ids (punctuation attached to the previous word)."""
        text = " ".join(self.vocab[int(i)] for i in ids)
        return text.replace(" .", ".").replace(" ,", ",")

    def next_distribution(self, context) -> np.ndarray:
        """p(next token | context) over the vocabulary (array of V probabilities)."""
        ctx = tuple(int(i) for i in context)
        parts = []
        if self.order == 3 and len(ctx) >= 2 and (ctx[-2], ctx[-1]) in self.trigram:
            parts.append((self.weights[0], self.trigram[(ctx[-2], ctx[-1])]))
        if ctx and self.bigram_seen[ctx[-1]]:
            parts.append((self.weights[-2], self.bigram[ctx[-1]]))
        parts.append((self.weights[-1], self.unigram))
        total = sum(w for w, _ in parts)
        out = sum(w * row for w, row in parts) / total
        return out / out.sum()


def _counts(corpus):
    tokens = tokenize(corpus)
    if len(tokens) < 3:
        raise ValueError(f"corpus must hold at least 3 tokens, got {len(tokens)}")
    vocab = tuple(sorted(set(tokens)))
    index = {w: i for i, w in enumerate(vocab)}
    ids = np.array([index[t] for t in tokens], dtype=np.int64)
    v = len(vocab)
    uni = np.bincount(ids, minlength=v).astype(float)
    unigram = (uni + 1.0) / (uni.sum() + v)
    big = np.zeros((v, v))
    np.add.at(big, (ids[:-1], ids[1:]), 1.0)
    row = big.sum(axis=1, keepdims=True)
    seen = row[:, 0] > 0
    bigram = np.divide(big, row, out=np.zeros_like(big), where=row > 0)
    tri = {}
    for a, b, w in zip(ids[:-2].tolist(), ids[1:-1].tolist(), ids[2:].tolist()):
        tri.setdefault((a, b), np.zeros(v))[w] += 1.0
    trigram = {key: counts / counts.sum() for key, counts in tri.items()}
    return vocab, unigram, bigram, seen, trigram


def build_models(corpus=None):
    """(draft, target): a bigram and a trigram model over the same vocabulary.

    ``corpus`` defaults to the shipped text. Draft weights DRAFT_WEIGHTS, target
    weights TARGET_WEIGHTS.
    """
    corpus = load_corpus() if corpus is None else corpus
    if not isinstance(corpus, str):
        raise TypeError(f"corpus must be a str, got {type(corpus).__name__}")
    vocab, unigram, bigram, seen, trigram = _counts(corpus)
    draft = NGramLM("bigram draft", 2, vocab, DRAFT_WEIGHTS, unigram, bigram, seen, {})
    target = NGramLM("trigram target", 3, vocab, TARGET_WEIGHTS, unigram, bigram, seen, trigram)
    return draft, target


@dataclass(frozen=True)
class Generation:
    """Plain autoregressive generation: new token ids and the number of forward passes."""

    tokens: tuple
    n_passes: int


def generate(model, prompt, n_tokens, seed=0, greedy=False) -> Generation:
    """The generate() loop: one forward pass (next_distribution) per new token.

    Samples from p (or takes argmax p when ``greedy``); ``prompt`` is a sequence of ids.
    """
    n_tokens = check_number("n_tokens", n_tokens, minimum=1, integer=True)
    rng = np.random.default_rng(seed)
    ctx = [int(i) for i in prompt]
    out = []
    for _ in range(n_tokens):
        p = model.next_distribution(ctx)
        tok = int(np.argmax(p)) if greedy else int(rng.choice(p.size, p=p))
        out.append(tok)
        ctx.append(tok)
    return Generation(tuple(out), n_tokens)
