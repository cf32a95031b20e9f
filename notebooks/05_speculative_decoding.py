# %% [markdown]
# # 05 · Speculative decoding: draft, verify, and why it is faster
#
# **Follows:** the lesson plan "Training & Serving at Scale" (003), sections *Inference: the
# sequential bottleneck* and *Speculative decoding* (7a), its worked example, misconception 3,
# Exercise 2 and Check 2; primary sources Leviathan, Kalman & Matias 2023 ("Fast Inference from
# Transformers via Speculative Decoding", ICML) and Chen et al. 2023 ("Accelerating LLM
# Decoding with Speculative Sampling").
#
# **You will be able to:** verify a draft greedily; compute the expected tokens per target
# pass and the walltime speedup for acceptance rate α, draft length k and cost ratio c; find
# the best draft length; implement the speculative-sampling accept/resample rule and check
# that it leaves the target's distribution *exactly* unchanged; explain with numbers why one
# target pass can check k tokens, and when (Mixture-of-Experts) it cannot.
#
# **Time:** about 85 minutes. **Points:** 20, in 8 graded cells.
#
# ### Conventions used in this notebook
# * **α** = probability that one draft token is accepted (the same at every position unless
#   stated); **k** = number of drafted tokens per step (the lesson's K, Leviathan's γ);
#   **c** = time of one draft forward pass ÷ time of one target forward pass.
# * One **step** = k draft passes + **one** target pass. Every step emits the accepted drafts
#   **plus one token from the target** (the correction at the first rejection, or a bonus token
#   when all k drafts are accepted).
# * Times inside `coursekit` are seconds; we print ms.

# %% [setup]
# Setup: imports. In Colab this installs coursekit first if it is missing (no restart needed).
{{COURSEKIT_SETUP}}
import math
import numpy as np
import matplotlib.pyplot as plt
from coursekit.grading import checks as ck
from coursekit.grading import selfcheck as sc  # instant feedback on predictions
from coursekit.serving import speculative as ref_spec
from coursekit.serving import toy_lm
from coursekit.units import MS
print(f"coursekit {coursekit.__version__}")

# %% [markdown]
# ## Part 1 · The problem: one forward pass per token
#
# Your `generate()` loop runs the whole model once for every new token: forward pass, take the
# last logits, sample, append, repeat. The passes cannot overlap, because pass *t+1* needs the
# token chosen by pass *t*. A 70B model manages about 30–50 tokens/s for one user this way
# (lesson 003 §7). **1000 users × 100 tokens = 100,000 sequential forward passes.**
#
# Part 5 measures a GPT-2 pair on an H200: at batch 1, one forward pass of GPT-2 1.5B over
# **1** new token takes 3.60 ms of GPU time, and over **8** new tokens 4.30 ms (1.19×). The
# pass is paid mostly for reading the weights from memory, not for the arithmetic. If only we
# knew the next 8 tokens in advance, one pass could check them all.
#
# **Speculative decoding** guesses them. A small *draft* model writes k tokens one by one
# (cheap passes); the big *target* model scores all k in **one** pass; we keep the longest
# prefix the target agrees with, plus one token of the target's own.
#
# ## Part 2 · Greedy verification: the worked example
#
# Lesson 003 §7a's worked example ("The capital of France is Paris, and"): after "The capital
# of France is", the draft model proposes `["Paris", ",", "and", "the", "city"]`; the target's
# own choices at those positions are `["Paris", ",", "and", "it", …]`. The first three agree, the fourth does
# not. Keep the agreeing prefix; at the first disagreement the target's token ("it") is
# already computed by the same pass, so emit it too. If all k drafts agree and the target list
# has one more entry (the position after the last draft), emit that **bonus** token.
#
# **Predict before you run:** how many tokens does that one target pass emit: 3 or 4?

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_prediction = None  # your guess: 3 or 4 tokens?
sc.predict("nb05_p2_tokens_emitted", my_prediction)

# %% [answer id=ex_verify_greedy partial]
def verify_greedy_tokens(draft_tokens, target_tokens):
    """Return (n_accepted, emitted) for greedy verification.

    draft_tokens: k drafted tokens. target_tokens: the target's choice at each draft
    position (length k) and optionally one more (length k+1, the bonus position).
    emitted = the accepted prefix + the target's token at the first mismatch (or the
    bonus token if all k match and it exists). Both are lists; n_accepted is an int.
    """
    ### BEGIN SOLUTION
    n = 0
    while n < len(draft_tokens) and draft_tokens[n] == target_tokens[n]:
        n += 1
    emitted = list(draft_tokens[:n])
    if n < len(target_tokens):
        emitted.append(target_tokens[n])
    return n, emitted
    ### END SOLUTION

# %% [test id=test_verify_greedy points=3]
# Visible test: the lesson's worked example.
_n, _emitted = ck.call(verify_greedy_tokens, ["Paris", ",", "and", "the", "city"],
                       ["Paris", ",", "and", "it", "is", "the"])
ck.check_exact(_n, 3, name="n_accepted (worked example)", reveal=True)
ck.check_exact(_emitted, ["Paris", ",", "and", "it"], name="emitted (worked example)",
               reveal=True)
print(f"visible test passed: {_n} drafts accepted, {len(_emitted)} tokens from one target pass")
### BEGIN HIDDEN TESTS
ck.forbid(ref_spec.verify_greedy)
# all accepted + bonus token (Leviathan et al. 2023, §2)
ck.case('n_accepted_all_match', lambda: verify_greedy_tokens([4, 8, 15], [4, 8, 15, 16])[0],
        expect=ck.exactly(3), name='n_accepted, all match')
ck.case('emitted_all_match_bonus', lambda: list(verify_greedy_tokens([4, 8, 15], [4, 8, 15, 16])[1]),
        expect=ck.exactly([4, 8, 15, 16]), name='emitted, all match + bonus')
# all accepted, no bonus position supplied
ck.case('n_accepted_no_bonus', lambda: verify_greedy_tokens([4, 8, 15], [4, 8, 15])[0],
        expect=ck.exactly(3), name='n_accepted, no bonus')
ck.case('emitted_no_bonus', lambda: list(verify_greedy_tokens([4, 8, 15], [4, 8, 15])[1]),
        expect=ck.exactly([4, 8, 15]), name='emitted, no bonus')
# first draft rejected: the target's token still comes out
ck.case('n_accepted_first_rejected', lambda: verify_greedy_tokens([7, 8, 9], [1, 8, 9, 10])[0],
        expect=ck.exactly(0), name='n_accepted, first rejected')
ck.case('emitted_first_rejected', lambda: list(verify_greedy_tokens([7, 8, 9], [1, 8, 9, 10])[1]),
        expect=ck.exactly([1]), name='emitted, first rejected')
# a later match after a mismatch does not count
ck.case('n_accepted_match_after_mismatch', lambda: verify_greedy_tokens(["a", "b", "c", "d"], ["a", "x", "c", "d", "e"])[0],
        expect=ck.exactly(1), name='n_accepted, match after mismatch')
ck.case('emitted_match_after_mismatch', lambda: list(verify_greedy_tokens(["a", "b", "c", "d"], ["a", "x", "c", "d", "e"])[1]),
        expect=ck.exactly(["a", "x"]), name='emitted, match after mismatch')
### END HIDDEN TESTS

# %% [markdown]
# Four tokens, not three: the lesson counts the 3 accepted drafts, but the verifying pass
# also produced "it". Plain decoding would have needed **4 target passes** for the same 4
# tokens. With greedy verification the output is *identical* to the target's own greedy
# output: drafting changes the speed, never the text.
#
# ## Part 3 · How many tokens per target pass?
#
# Suppose each draft token is accepted with probability α, independently. Draft *i* survives
# only if drafts 1…*i* are all accepted (probability α^i), and every step adds one target
# token. So the expected number of tokens per target pass is (Leviathan et al. 2023, Eq. 1)
#
# $$E[\text{tokens}] = 1 + \alpha + \alpha^2 + \dots + \alpha^k = \frac{1-\alpha^{k+1}}{1-\alpha}
# \qquad (= k+1 \text{ at } \alpha = 1).$$
#
# **Predict:** with α = 0.8, how many tokens per pass do k = 3 drafts give? And k = 100?

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_tokens_k3   = None  # your guess, tokens per target pass at k = 3
my_tokens_k100 = None  # your guess, tokens per target pass at k = 100
sc.predict("nb05_p3_tokens_k3", my_tokens_k3)
sc.predict("nb05_p3_tokens_k100", my_tokens_k100)

# %% [answer id=ex_expected_tokens partial]
def expected_tokens(alpha, k):
    """Expected tokens per target pass, (1 - alpha**(k+1)) / (1 - alpha); k+1 at alpha = 1.

    Raise ValueError if alpha is outside [0, 1] or k < 1.
    """
    ### BEGIN SOLUTION
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if alpha == 1:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)
    ### END SOLUTION

# %% [test id=test_expected_tokens points=2]
ck.check_close(ck.call(expected_tokens, 0.8, 3), 2.952, name="expected_tokens(0.8, 3)",
               reveal=True, unit="tokens")
print("visible test passed: alpha=0.8, k=3 gives 2.952 tokens per target pass")
### BEGIN HIDDEN TESTS
ck.forbid(ref_spec.expected_tokens_per_step, ref_spec.expected_accepted_drafts, ref_spec.walltime_speedup)
# recomputed: (1 - 0.6^6)/0.4 = 2.38336
ck.case('0.6_5', lambda: expected_tokens(0.6, 5),
        expect=ck.approx(2.38336), name='(0.6, 5)')
# recomputed: (1 - 0.9^8)/0.1 = 5.6953279
ck.case('0.9_7', lambda: expected_tokens(0.9, 7),
        expect=ck.approx(5.6953279), name='(0.9, 7)')
# special cases: alpha = 0 -> 1 token; alpha = 1 -> k + 1 (Leviathan §3.3)
ck.case('0_7', lambda: expected_tokens(0.0, 7),
        expect=ck.approx(1.0), name='(0, 7)')
ck.case('1_4', lambda: expected_tokens(1.0, 4),
        expect=ck.approx(5.0), name='(1, 4)')
ck.case('expected_tokens_alpha_1.2', lambda: expected_tokens(1.2, 3),
        expect=ck.raises(ValueError), name='expected_tokens(alpha=1.2)')
ck.case('expected_tokens_k_0', lambda: expected_tokens(0.5, 0),
        expect=ck.raises(ValueError), name='expected_tokens(k=0)')
### END HIDDEN TESTS

# %% [markdown]
# The sum is geometric: as k → ∞ it approaches **1/(1−α)** = 5 tokens at α = 0.8, however long
# the draft. Long drafts mostly produce tokens that get thrown away: the **fraction of drafted
# tokens accepted** is $(E[\text{tokens}]-1)/k$ and falls as k grows. That is the lesson's
# Exercise 2 observation, "acceptance rate decreases with K":

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'K':>3} " + " ".join(f"{'alpha=' + str(a):>11}" for a in (0.6, 0.8, 0.9)))
for _k in (1, 3, 5, 8):
    print(f"{_k:>3} " + " ".join(f"{ref_spec.acceptance_rate(a, _k):>10.1%} " for a in (0.6, 0.8, 0.9)))
print("(fraction of drafted tokens accepted, formula)")

# %% [markdown]
# ## Part 4 · Speedup once drafting costs something
#
# A step costs k draft passes (k·c in units of one target pass) plus one target pass, and
# plain decoding emits one token per target pass. Leviathan et al. (2023, Thm 3.8):
#
# $$\text{speedup} = \frac{1-\alpha^{k+1}}{(1-\alpha)(k\,c+1)}.$$
#
# This assumes the verifying pass over k tokens costs the same as a pass over one token
# (Part 5 checks that on a real GPU). **Predict:** at k = 1 the formula becomes what?

# %% [answer id=ex_speedup]
def speedup(alpha, k, c):
    """Walltime speedup of speculative decoding over plain decoding (Leviathan Thm 3.8).

    Raise ValueError if alpha is outside [0, 1], k < 1 or c < 0.
    """
    ### BEGIN SOLUTION
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if c < 0:
        raise ValueError(f"c must be >= 0, got {c}")
    tokens = k + 1 if alpha == 1 else (1 - alpha ** (k + 1)) / (1 - alpha)
    return tokens / (k * c + 1)
    ### END SOLUTION

# %% [test id=test_speedup points=2]
ck.check_close(ck.call(speedup, 0.8, 3, 0.1), 2.952 / 1.3, name="speedup(0.8, 3, 0.1)",
               reveal=True)
print(f"visible test passed: speedup(0.8, 3, 0.1) = {speedup(0.8, 3, 0.1):.4f}x")
### BEGIN HIDDEN TESTS
ck.forbid(ref_spec.walltime_speedup, ref_spec.expected_tokens_per_step, ref_spec.time_per_token)
# k = 1: (1 + alpha)/(1 + c), recomputed 1.5/1.18
ck.case('speedup_0.5_1_0.18', lambda: speedup(0.5, 1, 0.18),
        expect=ck.approx(1.2711864406779663), name='speedup(0.5, 1, 0.18)')
# recomputed: (1 - 0.75^7)/0.25/1.6 = 3.466064453125/1.6 (not alpha = 0.8, whose speedup
# the MoE demo of Part 9 prints)
ck.case('speedup_0.75_6_0.1', lambda: speedup(0.75, 6, 0.1),
        expect=ck.approx(2.166290283203125), name='speedup(0.75, 6, 0.1)')
# alpha = 1: (k + 1)/(k c + 1) = 5/2
ck.case('speedup_1_4_0.25', lambda: speedup(1.0, 4, 0.25),
        expect=ck.approx(2.5), name='speedup(1, 4, 0.25)')
# alpha = 0: every draft wasted, 1/(k c + 1) = 1/1.5
ck.case('speedup_0_5_0.1', lambda: speedup(0.0, 5, 0.1),
        expect=ck.approx(1 / 1.5), name='speedup(0, 5, 0.1)')
ck.case('speedup_c_-0.1', lambda: speedup(0.5, 3, -0.1),
        expect=ck.raises(ValueError), name='speedup(c=-0.1)')
ck.case('speedup_alpha_-0.5', lambda: speedup(-0.5, 3, 0.1),
        expect=ck.raises(ValueError), name='speedup(alpha=-0.5)')
### END HIDDEN TESTS

# %% [markdown]
# ### The lesson's plot: speedup against K for several α
# Each curve rises while extra drafts still tend to be accepted, then falls as the drafting
# cost k·c keeps growing and the accepted tokens level off at 1/(1−α). The circles mark the
# best k. The curves use **your** `speedup` when it works.

# %%
from coursekit.viz import speculative as viz
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
viz.plot_speedup_vs_k((0.6, 0.7, 0.8, 0.9), c=0.05, k_max=16, speedup_fn=speedup, ax=ax1)
viz.plot_speedup_vs_k((0.6, 0.7, 0.8, 0.9), c=0.2, k_max=16, speedup_fn=speedup, ax=ax2)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Part 5 · Why can one target pass check k tokens? (misconception 3)
#
# > **Misconception 3:** "Speculative decoding is faster because it uses a smaller model."
#
# If the small model were good enough we would just serve it. The output is the **target's**
# (exactly, Part 7); the draft only proposes. The speed comes from the target checking k
# tokens in **one** pass instead of k passes, and that works because a decode pass is
# **memory-bound**. (The lesson plan's misconception table says the pass is "compute-bound";
# it is the opposite: at batch 1 the pass must stream every weight from HBM once, and doing
# 2 FLOPs per weight for 1 token or for 8 tokens hardly changes the time, until the
# arithmetic catches up.)
#
# Roofline numbers for GPT-2 1.5B in bf16 on an H200 (4.8 TB/s, 989 TFLOP/s dense bf16):
# reading 3.1 GB of weights takes 0.65 ms; the arithmetic for one token, 2 × 1.56 × 10⁹ FLOPs,
# takes 0.003 ms. The pass stays memory-bound until k ≈ 989/4.8 × 2 bytes / 2 FLOPs ≈ **206
# tokens** per pass.
#
# The course measured it (H200, PyTorch 2.11, 512-token KV cache, batch 1):

# %%
# NBVAL_CHECK_OUTPUT
_meas = {m: ref_spec.load_decode_measurements(m) for m in ("124M", "1.5B")}
print(f"{'k':>3} | {'124M GPU ms':>11} {'x k=1':>6} | {'1.5B GPU ms':>11} {'x k=1':>6} | "
      f"{'1.5B wall ms (median)':>21}")
for _i, _k in enumerate(_meas["1.5B"].k):
    _d, _t = _meas["124M"], _meas["1.5B"]
    print(f"{_k:>3} | {_d.gpu_kernel[_i] / MS:>11.3f} {_d.gpu_ratio_to_k1()[_i]:>6.2f} | "
          f"{_t.gpu_kernel[_i] / MS:>11.3f} {_t.gpu_ratio_to_k1()[_i]:>6.2f} | "
          f"{_t.wall_median[_i] / MS:>21.1f}")
_c_gpu = _meas["124M"].gpu_kernel[0] / _meas["1.5B"].gpu_kernel[0]
print(f"draft/target cost ratio c (GPU kernels, k=1): {_c_gpu:.3f}")

# %% [markdown]
# Checking 8 tokens costs **1.19×** one token, 64 tokens 1.29×. The roofline (dashed) gets the
# flatness right and the level wrong: the real pass takes 3.6 ms, not 0.65 ms, because this
# small model's many small kernels and the framework's KV-cache copy (`torch.cat`) do not
# reach peak bandwidth. The wall-clock column is worse still: at about 23 ms per pass the
# host-side kernel launches dominate (the k = 1 median, 35.8 ms, includes outliers; its
# minimum is 22.8 ms), so c measured on wall time (0.13) differs from c on GPU time (0.18).
# Serving engines capture the whole pass in a CUDA graph to remove that launch cost.

# %%
_ks = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
_roof = {"roofline, 1.5B": (_ks, [ref_spec.decode_pass_time(1_557_611_200, int(k), "H200")
                                  for k in _ks])}
viz.plot_decode_cost_vs_k(list(_meas.values()), roofline=_roof)
plt.show()

# %% [markdown]
# ## Part 6 · The best draft length
#
# Longer drafts help while the next draft is likely to survive, and cost k·c each. For a given
# α and c there is a best k (Leviathan et al. 2023, §3.5 and Fig. 3).
#
# **Predict:** at α = 0.8 and c = 0.1, is the best k closer to 2, 6 or 12?

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_prediction = None  # your guess for the best k: 2, 6 or 12?
sc.predict("nb05_p6_best_k", my_prediction)

# %% [answer id=ex_best_k partial]
def best_draft_length(alpha, c, k_max=32):
    """The k in 1..k_max with the largest walltime speedup (the smallest such k on ties)."""
    ### BEGIN SOLUTION
    best_k, best_s = 1, -1.0
    for k in range(1, k_max + 1):
        tokens = k + 1 if alpha == 1 else (1 - alpha ** (k + 1)) / (1 - alpha)
        s = tokens / (k * c + 1)
        if s > best_s * (1 + 1e-12):
            best_k, best_s = k, s
    return best_k
    ### END SOLUTION

# %% [test id=test_best_k points=3]
ck.check_exact(ck.call(best_draft_length, 0.8, 0.1), 6, name="best_draft_length(0.8, 0.1)",
               reveal=True)
print("visible test passed: alpha=0.8, c=0.1 -> best k = 6")
### BEGIN HIDDEN TESTS
ck.forbid(ref_spec.optimal_draft_length, ref_spec.walltime_speedup, ref_spec.expected_tokens_per_step)
# recomputed: argmax_k (1-0.6^(k+1))/(0.4(0.05k+1)) -> k = 4 (1.9213x)
ck.case('0.6_0.05', lambda: best_draft_length(0.6, 0.05),
        expect=ck.exactly(4), name='(0.6, 0.05)')
# recomputed: argmax_k (1-0.9^(k+1))/(0.1(0.05k+1)) -> k = 13 (4.6741x)
ck.case('0.9_0.05', lambda: best_draft_length(0.9, 0.05),
        expect=ck.exactly(13), name='(0.9, 0.05)')
# H200 GPT-2 124M/1.5B c = 0.18 at alpha = 0.5: k = 2 (1.75/1.36 = 1.2868x)
ck.case('0.5_0.18', lambda: best_draft_length(0.5, 0.18),
        expect=ck.exactly(2), name='(0.5, 0.18)')
# c = 0: drafting is free, longer never hurts -> k_max
ck.case('c_0', lambda: best_draft_length(0.7, 0.0, 10),
        expect=ck.exactly(10), name='c = 0')
# alpha = 0: nothing is accepted, the shortest draft wastes least
ck.case('alpha_0', lambda: best_draft_length(0.0, 0.3),
        expect=ck.exactly(1), name='alpha = 0')
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise: how short a draft can you afford?
# The best k is rarely worth its last few tokens: a longer draft holds more KV cache, wastes
# more draft work on every rejection and makes step times less even, for a speedup that is
# flat near the top. Serving teams pick the **shortest** k that keeps most of the best
# speedup. Write `shortest_k_within(alpha, c, fraction, k_max=32)`: the smallest k (an int) in
# 1..k_max whose walltime speedup is at least `fraction` × the best speedup over 1..k_max
# (use your `speedup`). Raise `ValueError` unless 0 < `fraction` ≤ 1. Decide first: at
# α = 0.8 and c = 0.1, how much shorter than the best k = 6 can a 95% draft be?

# %% [answer id=ex_short_k]
def shortest_k_within(alpha, c, fraction, k_max=32):
    """Smallest k in 1..k_max with speedup >= fraction * (best speedup over 1..k_max);
    ValueError unless 0 < fraction <= 1."""
    ### BEGIN SOLUTION
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction={fraction} must be in (0, 1]")
    speeds = [speedup(alpha, k, c) for k in range(1, k_max + 1)]
    target = fraction * max(speeds) * (1 - 1e-12)
    return next(k for k, s in enumerate(speeds, start=1) if s >= target)
    ### END SOLUTION

# %% [test id=test_short_k points=3]
ck.check_exact(ck.call(shortest_k_within, 0.8, 0.1, 0.95), 4,
               name="shortest_k_within(0.8, 0.1, 0.95)", reveal=True)
print("visible test passed: at alpha=0.8, c=0.1 a draft of 4 keeps 95% of the best speedup")
### BEGIN HIDDEN TESTS
ck.forbid(ref_spec.optimal_draft_length, ref_spec.walltime_speedup, ref_spec.expected_tokens_per_step)
# recomputed by brute force over k = 1..32 with E/(kc + 1), E = (1 - a^(k+1))/(1 - a):
# a = 0.9, c = 0.05: best 4.6741x at k = 13; k = 9 gives 4.4919x >= 0.95 x 4.6741 = 4.4404
ck.case('0.9_0.05_95pct', lambda: shortest_k_within(0.9, 0.05, 0.95),
        expect=ck.exactly(9), name='(0.9, 0.05, 95%)')
# a = 0.6, c = 0.05: best 1.9213x at k = 4; k = 2 gives 1.7818x >= 0.9 x 1.9213 = 1.7292
ck.case('0.6_0.05_90pct', lambda: shortest_k_within(0.6, 0.05, 0.9),
        expect=ck.exactly(2), name='(0.6, 0.05, 90%)')
# a = 0.9, c = 0.02: best 6.3654x at k = 19; 99% needs k = 16 (6.3123x >= 6.3017)
ck.case('0.9_0.02_99pct', lambda: shortest_k_within(0.9, 0.02, 0.99),
        expect=ck.exactly(16), name='(0.9, 0.02, 99%)')
# c = 0, k_max = 10: best is k = 10 (3.2674x); 90% = 2.9407 -> k = 5 (2.9412x)
ck.case('c_0_kmax_10', lambda: shortest_k_within(0.7, 0.0, 0.9, 10),
        expect=ck.exactly(5), name='(0.7, 0, 90%, k_max = 10)')
# fraction 1: the best k itself (Part 6: 6)
ck.case('fraction_1', lambda: shortest_k_within(0.8, 0.1, 1.0),
        expect=ck.exactly(6), name='fraction = 1')
ck.case('fraction_0', lambda: shortest_k_within(0.8, 0.1, 0.0),
        expect=ck.raises(ValueError), name='fraction = 0')
ck.case('fraction_above_1', lambda: shortest_k_within(0.8, 0.1, 1.5),
        expect=ck.raises(ValueError), name='fraction = 1.5')
### END HIDDEN TESTS

# %% [markdown]
# ### Time per accepted token, with the measured H200 costs
# The verifying pass is not perfectly flat: we use the measured GPU time of the 1.5B model at
# k+1 new tokens (the last accepted token plus k drafts) and c = 0.18 for the 124M draft.
# Plain decoding costs 3.60 ms per token.

# %%
_t_target = _meas["1.5B"].gpu_kernel[0]
_t_draft = _meas["124M"].gpu_kernel[0]
_verify = lambda k: float(np.interp(k + 1, _meas["1.5B"].k, _meas["1.5B"].gpu_kernel))
for _alpha in (0.6, 0.8):
    _best = min(range(1, 17), key=lambda k: ref_spec.time_per_token(
        _alpha, k, _t_draft, _t_target, _verify(k)))
    _tpt = ref_spec.time_per_token(_alpha, _best, _t_draft, _t_target, _verify(_best))
    print(f"alpha = {_alpha}: best k = {_best}, {_tpt / MS:.2f} ms per token vs "
          f"{_t_target / MS:.2f} ms plain ({_t_target / _tpt:.2f}x faster)")
viz.plot_time_per_token(0.8, _t_draft, _t_target, 16, t_verify=_verify)
plt.show()

# %% [markdown]
# ## Part 7 · Speculative *sampling*: faster without changing the distribution
#
# With sampling, "does the target agree?" has no yes/no answer: the target gives a
# distribution *p* over the vocabulary, the draft a distribution *q*, and the draft token *x*
# was sampled from *q*. Rule (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023):
#
# * accept *x* with probability $\min\left(1, \dfrac{p(x)}{q(x)}\right)$;
# * otherwise sample a replacement from the **residual** $r = \dfrac{\max(0,\, p-q)}{\sum \max(0,\, p-q)}$.
#
# Then the emitted token is distributed **exactly** as *p*. Why: token *y* comes out either as
# an accepted draft, $q(y)\min(1, p(y)/q(y)) = \min(p(y), q(y))$, or from the residual after a
# rejection, $(1 - \sum_x \min(p,q))\, r(y) = \max(0, p(y) - q(y))$; the two add up to *p(y)*.
# The acceptance probability is $\alpha = \sum_x \min(p(x), q(x))$.
#
# Implement the rule with explicit uniform draws so it can be tested exactly: accept if
# `u_accept < min(1, p[x]/q[x])`; otherwise return the token at `u_resample` of the residual's
# cumulative distribution: the first index *i* with `u_resample < cumsum(r)[i]`.
#
# **Predict:** p = [0.5, 0.3, 0.2], q = [0.2, 0.5, 0.3] and the draft x = 1. With which
# probability is x accepted, and which token replaces it when it is rejected?

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_accept_prob       = None  # your guess, a probability
my_replacement_token = None  # your guess, a token index: 0, 1 or 2
sc.predict("nb05_p7_accept_prob", my_accept_prob)
sc.predict("nb05_p7_replacement", my_replacement_token)

# %% [answer id=ex_spec_sample]
def speculative_sample(p, q, x, u_accept, u_resample):
    """One position of speculative sampling. p, q: target and draft probabilities (same
    length); x: the drafted token index; u_accept, u_resample: uniforms in [0, 1).
    Return the emitted token index (an int)."""
    ### BEGIN SOLUTION
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if u_accept < min(1.0, p[x] / q[x]):
        return int(x)
    residual = np.maximum(p - q, 0.0)
    residual = residual / residual.sum()
    cdf = np.cumsum(residual)
    for i, edge in enumerate(cdf):
        if u_resample < edge and residual[i] > 0:
            return i
    return int(np.flatnonzero(residual > 0)[-1])
    ### END SOLUTION

# %% [test id=test_spec_sample points=4]
_p, _q = [0.5, 0.3, 0.2], [0.2, 0.5, 0.3]
ck.check_exact(ck.call(speculative_sample, _p, _q, 1, 0.5, 0.3), 1,
               name="accepted draft (u_accept=0.5 < 0.3/0.5)", reveal=True)
ck.check_exact(ck.call(speculative_sample, _p, _q, 1, 0.7, 0.3), 0,
               name="rejected draft resampled from the residual [1, 0, 0]", reveal=True)
print("visible test passed: accept below p/q, resample from max(0, p - q) above it")
### BEGIN HIDDEN TESTS
ck.forbid(ref_spec.speculative_token, ref_spec.residual_distribution, ref_spec.speculative_step, ref_spec.output_distribution)


def _enumerate_outputs(fn, p4, q4):
    """Exact output distribution: every draft x (weight q), both uniforms on the midpoints
    of a 12-point grid. Entries are multiples of 1/4, so every threshold p/q and residual
    CDF is a multiple of 1/12 and the grid reproduces each probability exactly.
    Returns integer weights, one per output token."""
    p, q = [a / 4 for a in p4], [b / 4 for b in q4]
    grid = [(j + 0.5) / 12 for j in range(12)]
    out = [0] * len(p)
    for x, qx in enumerate(q4):
        if qx == 0:
            continue
        for u in grid:
            for v in grid:
                out[int(fn(p, q, x, u, v))] += qx
    return out


# pairs of distributions in quarters; a correct rule gives 144 * p4 (Leviathan Thm 3.5)
ck.case("exact_dist_a", lambda: _enumerate_outputs(speculative_sample, [2, 1, 1], [1, 2, 1]),
        expect=ck.exactly([288, 144, 144]), name="exact output distribution, p=[2, 1, 1]/4")
ck.case("exact_dist_b", lambda: _enumerate_outputs(speculative_sample, [0, 1, 3, 0], [2, 1, 0, 1]),
        expect=ck.exactly([0, 144, 432, 0]), name="exact output distribution, p=[0, 1, 3, 0]/4")
ck.case("exact_dist_c", lambda: _enumerate_outputs(speculative_sample, [1, 1, 1, 1], [4, 0, 0, 0]),
        expect=ck.exactly([144, 144, 144, 144]),
        name="exact output distribution, p=[1, 1, 1, 1]/4")
ck.case("exact_dist_d", lambda: _enumerate_outputs(speculative_sample, [3, 0, 1], [1, 3, 0]),
        expect=ck.exactly([432, 0, 144]), name="exact output distribution, p=[3, 0, 1]/4")
# the residual never emits the rejected token itself
ck.case('residual_at_u_resample_0', lambda: speculative_sample([0.1, 0.6, 0.3], [0.4, 0.4, 0.2], 0, 0.9, 0.0),
        expect=ck.exactly(1), name='residual at u_resample=0')
### END HIDDEN TESTS

# %% [markdown]
# ### A chi-square test on real models
# `coursekit` ships two tiny language models built from a few KB of text: a smoothed **bigram**
# draft and an interpolated **trigram** target. Below, 20,000 one-position draft-and-verify
# outcomes are compared with the target's *p* by a chi-square goodness-of-fit test (fixed seed;
# we would reject "the output follows p" at p-value < 0.001). Speculative sampling passes.
# **Greedy drafting** (always draft argmax q, then apply the same accept/resample rule) does not:
# the rule's proof needs x ~ q.

# %%
# NBVAL_CHECK_OUTPUT
_draft, _target = toy_lm.build_models()
print(f"vocabulary: {_target.vocab_size} tokens; corpus: {len(toy_lm.load_corpus()):,} characters")
for _text in ("the baker opens the", "the river"):
    _ctx = _target.encode(_text)
    _pt, _qd = _target.next_distribution(_ctx), _draft.next_distribution(_ctx)
    print(f"context '{_text}': alpha = sum min(p, q) = {ref_spec.acceptance_probability(_pt, _qd):.3f}")
    for _mode in ("sample", "greedy"):
        _s = ref_spec.sample_verified_tokens(_pt, _qd, 20_000, seed=7, draft=_mode)
        _res = ref_spec.chi_square_test(_s, _pt)
        print(f"   {_mode:>6} drafting: chi2 = {_res.statistic:10.1f} on {_res.dof} dof, "
              f"p-value = {_res.p_value:.3g}")

# %% [markdown]
# ## Part 8 · Measuring α end to end, and Monte Carlo vs the formula
#
# Lesson Exercise 2 asks for the acceptance rate at K = 1, 3, 5, 8 measured on real models.
# Here the toy pair generates 300 tokens per K with speculative sampling; `alpha_estimate` is
# the mean of Σ min(p, q) over the verified positions.

# %%
_prompt = _target.encode("the baker opens the")
_measured_k, _measured_rate = [], []
print(f"{'K':>2} {'accepted/drafted':>17} {'alpha est.':>10} {'tokens/pass':>12} {'formula':>8}")
for _k in (1, 3, 5, 8):
    _g = ref_spec.speculative_generate(_target, _draft, _prompt, 300, _k, seed=1)
    _measured_k.append(_k)
    _measured_rate.append(_g.acceptance_rate)
    print(f"{_k:>2} {_g.acceptance_rate:>17.3f} {_g.alpha_estimate:>10.3f} "
          f"{_g.tokens_per_target_pass:>12.2f} "
          f"{ref_spec.expected_tokens_per_step(_g.alpha_estimate, _k):>8.2f}")
print("sample:", _target.decode(_g.tokens[:25]), "...")
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
viz.plot_acceptance_vs_k((0.5, 0.8), (1, 3, 5, 8),
                         measured={"toy bigram→trigram (measured)": (_measured_k, _measured_rate)},
                         ax=ax1)
viz.plot_monte_carlo(0.8, (1, 3, 5, 8, 12), n_steps=20_000, seed=0, ax=ax2)
plt.tight_layout()
plt.show()

# %% [markdown]
# The toy pair's α is only about 0.5, so drafts beyond 2–3 tokens rarely survive; the
# formula with the measured α tracks the measured tokens per pass, though not exactly,
# because real acceptance varies by position and context (some phrases are easy, others
# are not). The Monte Carlo simulator (vectorized numpy, one random number per step) agrees
# with the formula within its error bars.
#
# ## Part 9 · Check 2: a Mixture-of-Experts target
#
# Lesson Check 2: Mixtral 8x7B has 47B parameters, of which 13B are active per token (2 of 8
# experts per layer). Would speculative decoding work well? The lesson's answer: yes, a small
# dense draft is cheap compared with 13B active parameters.
#
# But look at what made verification nearly free: the pass reads the weights once for all k
# tokens. In an MoE, **each token picks its own experts**: k tokens together touch more
# experts, so the verifying pass reads more bytes. With shared parameters *s* (attention,
# embeddings), *E* experts of *e* parameters each and top-*t* routing, *s + E e* = 47B and
# *s + t e* = 13B. If each token picks its experts uniformly and independently (an
# assumption; real routing is correlated), an expert is untouched by one token with
# probability 1 − t/E, so by k tokens with probability (1 − t/E)^k. The bytes read relative
# to a one-token pass are
#
# $$\frac{s + E\,e\,\bigl(1 - (1 - t/E)^k\bigr)}{s + t\,e}.$$
#
# **Predict:** for Mixtral at k = 5, is this ratio about 1, 3 or 8?

# %%
# Your prediction (ungraded; a wrong guess is fine): replace None and run for instant feedback.
my_prediction = None  # your guess for the ratio: 1, 3 or 8?
sc.predict("nb05_p9_moe_ratio", my_prediction)

# %% [answer id=ex_moe]
def moe_verify_ratio(k, n_experts, top_k, total_params, active_params):
    """Parameters read by one pass over k tokens / parameters read for one token, for an
    MoE with uniform independent top-k routing (memory-bound decode)."""
    ### BEGIN SOLUTION
    expert = (total_params - active_params) / (n_experts - top_k)
    shared = active_params - top_k * expert
    touched = n_experts * (1 - (1 - top_k / n_experts) ** k)
    return (shared + touched * expert) / active_params
    ### END SOLUTION

# %% [test id=test_moe points=2]
ck.check_close(ck.call(moe_verify_ratio, 1, 8, 2, 47e9, 13e9), 1.0,
               name="moe_verify_ratio(k=1, Mixtral)", reveal=True)
print(f"visible test passed; Mixtral at k=5 reads {moe_verify_ratio(5, 8, 2, 47e9, 13e9):.2f}x "
      "the bytes of a one-token pass")
### BEGIN HIDDEN TESTS
# recomputed: e = 34e9/6, s = 13e9 - 2e; (s + 8e(1 - 0.75^5))/13e9 = 2.787860576923077
ck.case('Mixtral_k_5', lambda: moe_verify_ratio(5, 8, 2, 47e9, 13e9),
        expect=ck.approx(2.787860576923077), name='Mixtral, k=5')
# recomputed: (s + 8e(1 - 0.75^2))/13e9 = 1.6538461538461537
ck.case('Mixtral_k_2', lambda: moe_verify_ratio(2, 8, 2, 47e9, 13e9),
        expect=ck.approx(1.6538461538461537), name='Mixtral, k=2')
# DeepSeekMoE 16B (Dai et al. 2024: 64 routed experts, top-6, plus 2 shared experts folded
# into s; 16.4B total, 2.8B active): e = 13.6e9/58 = 0.2345e9, s = 2.8e9 - 6e = 1.393e9 >= 0
# (a physical configuration), k=4: (s + 64 e (1 - (58/64)^4)) / 2.8e9 = 2.24200439453125
ck.case('DeepSeekMoE_16B_k_4', lambda: moe_verify_ratio(4, 64, 6, 16.4e9, 2.8e9),
        expect=ck.approx(2.24200439453125), name='DeepSeekMoE 16B (64 experts, top 6), k=4')
### END HIDDEN TESTS

# %% [markdown]
# **Predict and verify:** with a dense draft at c = 0.1 and α = 0.8, the best k for a *dense*
# 13B target is 6 (Part 6 computed its speedup). For the Mixtral target, the verifying pass
# reads k + 1 positions (the k drafts and the last accepted token, the same count Part 6
# measured), so it costs `moe_verify_ratio(k + 1, …)` one-token passes instead of 1. Is the
# **best speedup over all k** for Mixtral `"much smaller"`, `"about the same"` or `"larger"`
# than the dense target's? Decide first, then run the next cell to check.

# %% [answer id=ex_moe_choice partial]
moe_speedup_answer = None  # "much smaller", "about the same" or "larger"
### BEGIN SOLUTION
moe_speedup_answer = "much smaller"
### END SOLUTION

# %% [test id=test_moe_choice points=1]
ck.check_exact(moe_speedup_answer in ("much smaller", "about the same", "larger"), True,
               name='moe_speedup_answer is one of "much smaller", "about the same", "larger"',
               reveal=True)
### BEGIN HIDDEN TESTS
# recomputed: speedup(k) = E(k)/(0.1k + ratio(k+1)), E(k) = (1 - 0.8^(k+1))/0.2: at most
# 1.056x (k = 5) for Mixtral, against 2.470x (k = 6) for the dense target
ck.case('moe_speedup_answer', lambda: moe_speedup_answer.strip().lower(),
        expect=ck.exactly("much smaller"), name='moe_speedup_answer')
### END HIDDEN TESTS

# %%
def _moe_ratio(k):
    try:
        return float(moe_verify_ratio(k, 8, 2, 47e9, 13e9))
    except Exception:  # a stub: say so instead of guessing
        return float("nan")

for _k in range(1, 9):
    _r = _moe_ratio(_k + 1)
    _e = ref_spec.expected_tokens_per_step(0.8, _k)
    print(f"k = {_k}: verify pass over {_k + 1} positions reads {_r:.2f}x one token; "
          f"speedup MoE {_e / (0.1 * _k + _r):.3f}x vs dense {_e / (0.1 * _k + 1):.3f}x")

# %% [markdown]
# At batch 1 the answer to Check 2 needs a caveat: with k + 1 positions in every verifying pass,
# each extra position pulls in more of Mixtral's experts, and the verifying pass costs up to 3
# one-token passes instead of 1. Speculative decoding then gains a few percent at best, far
# below a dense model of the same active size (Part 6). The best k is not what changes most:
# once nearly every expert is read, more drafts cost little extra, so at higher α or lower c
# the best k can even grow. At large batch sizes every expert is read anyway, and the gap
# closes. The lesson's other point stands: the draft must imitate a model whose experts hold
# specialised knowledge, which tends to lower α.
#
# ## Explore
# Move α, k and c. The curve uses **your** `speedup` when it works; the timeline below it
# compares plain decoding (one red target pass per token) with draft (blue) + verify (red) steps.

# %%
viz.speculative_explorer(speedup)

# %% [markdown]
# ## Summary
# * Plain decoding makes one sequential target pass per token. Speculative decoding makes one
#   target pass per *step* and emits $E = (1-\alpha^{k+1})/(1-\alpha)$ tokens per step on
#   average, never more than $1/(1-\alpha)$.
# * Walltime speedup $= E/(k c + 1)$; it has a best draft length, found by search; longer is
#   not better once drafting costs something.
# * It works because a decode pass is **memory-bound**: checking 8 tokens cost 1.19× one token
#   on an H200. The speed does not come from the small model (misconception 3); the output is
#   the target's, exactly, thanks to the min(1, p/q) accept / max(0, p − q) resample rule.
# * When verification is not free (MoE at small batch, compute-bound large batches) the gain
#   shrinks and the best draft gets shorter.
#
# **Reflection (ungraded):** your service runs a 70B dense model at batch 64, where a decode
# pass is much closer to compute-bound. What happens to the "verifying k tokens is free"
# assumption, and would you keep speculative decoding on? What would you measure first?
