"""Issue 8, instant feedback everywhere: the ungraded "predict before you run" cells of
assignments 01-06.

Each prediction cell asks a question by its short id (``sc.predict("nb01_p1_dominant", x)``),
looked up in the packaged ``coursekit/data/predictions.json`` (keys made once with
``make_question``); the answers live only here, with their source. Checked:

* every token in notebooks/01-06 is listed below (and nothing else is);
* each token accepts its answer (in the forms a student writes) and rejects clearly wrong
  ones, with a hint after a wrong answer and the explanation after a right one;
* each prediction cell is an ordinary cell right after its "Predict" markdown, prints
  nothing while its variables are None, and gives feedback once they are set;
* no release notebook shows an answer next to a prediction cell: the prompt markdown, the
  prediction cell (its token aside) and the token's plain fields (prompt, hints, source)
  contain none of the answer's telltale strings.
"""

import contextlib
import io
import json
import re
from pathlib import Path

import nbformat
import pytest

from coursekit.grading import selfcheck as sc
from coursekit.grading.authoring import parse, read_py

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[1-6]_*.py"))
RELEASES = sorted((ROOT / "release").glob("0[1-6]*/*.ipynb"))
TOKEN = re.compile(r'sc\.predict\("([A-Za-z0-9_.-]+)"')  # the question id
PREDICTIONS_JSON = ROOT / "coursekit" / "data" / sc.PREDICTIONS_FILE


def P(nb, var, correct, wrong, leaks):
    """One prediction: notebook prefix, the cell's variable, answers accepted (the first is
    the reference), answers rejected, and telltale strings of the answer that must not
    appear in plain text next to the prediction cell."""
    return dict(nb=nb, var=var, correct=correct, wrong=wrong, leaks=leaks)


M = "my_prediction"
PREDICTIONS = {
    # ---------------------------------------------------------------- 01 training cost
    # chapter Napkin 1.1 (GPT-2 XL, B=32, S=1024, d=1600): FFN 16·B·S·d² = 1,342.2 GFLOP of
    # a 2,228.0 GFLOP layer; the two S² products are 107.4 GFLOP each -> the FFN dominates
    "nb01_p1_dominant": P("01", M, ["FFN", "ffn"], ["attention"],
                          ["60%", "1,342", "The FFN is"]),
    # 1,342,177,280,000 / 2,228,014,284,800 = 0.6024 (rel 0.15)
    "nb01_p1_ffn_share": P("01", "my_ffn_share", [0.6024, 0.6, "0.6"], [0.1, 0.9, 0.3],
                           ["60%", "0.60", "1,342"]),
    # chapter Napkin 1.5: 6 × 70e9 × 2e12 = 8.4e23 FLOPs, nearest option 1e23 (rel 0.95
    # accepts 4.2e22..1.64e24, so 1e23 in, 1e21 and 1e25 out)
    "nb01_p2_magnitude": P("01", M, [8.4e23, 1e23], [1e21, 1e25],
                           ["8.4e23", "8.4 × 10", "8.4e+23"]),
    # Napkin 1.5: 8.4e23 / (989e12 × 0.5 × 1024) = 1,658,872.6 s = 19.2 days
    "nb01_p3_duration": P("01", M, ["a few weeks", "A few weeks"], ["a day", "a year"],
                          ["19.2 days", "1,658,872", "1.66e6"]),
    # chapter Def 1.4: 6 × 7e9 × 1024 / (312e12 × 1.2) = 0.1149 -> below 50%
    "nb01_p4_mfu": P("01", M, ["below", "Below"], ["above"], ["11.5", "0.115", "0.1148"]),
    # chapter Napkin 1.11: (1024 × 400 + 128 × 200) W × 262,920.67 s / 3.6e6 = 31,784.2 kWh
    # (rel 0.5: the option 30,000 is accepted, 3,000 and 300 are not)
    "nb01_p5_energy": P("01", M, [31_784.2, 30_000], [300, 3000, 100_000],
                        ["31,784", "31784", "435.2"]),
    # chapter Napkin 1.7: 2 weeks / 1.2 weeks = 1.67x, not 2.4x -> False
    "nb01_p6_speedup": P("01", M, [False, "no"], [True], ["1.67", "It is not"]),
    # ---------------------------------------------------------------- 02 memory calculator
    # chapter Def 1.1 / lesson plan: 7e9 × (2 + 2 + 8) bytes = 84 GB (rel 0.05)
    "nb02_p1_static_gb": P("02", M, [84, 84.0], [14, 28, 56, 112],
                           ["84e9", "= 84", "is 84"]),
    # Korthikanti et al. 2022 / Napkin 1.3: 5·25·1024/1600 = 80; 80 / (34 + 80) = 0.7018
    "nb02_p2_attn_fraction": P("02", M, [0.7018, 0.7], [0.25, 0.5, 0.95],
                               ["70%", "0.70", "0.7017", "1,048.6"]),
    # ZeRO paper Fig. 1: 7.5e9 × 16 bytes = 120 GB per GPU at stage 0
    "nb02_p3_zero_stage0_gb": P("02", "my_stage0_gb", [120], [1.875, 31.4, 16.6],
                                ["120 GB", "120e9"]),
    # stage 3: 120 GB / 64 = 1.875 GB (the paper prints 1.9; rel 0.05 accepts it)
    "nb02_p3_zero_stage3_gb": P("02", "my_stage3_gb", [1.875, 1.9], [120, 16.6, 31.4],
                                ["1.875", "1.9 GB"]),
    # lesson plan: stage 1 keeps 70e9 × (2 + 2) = 280 GB on every GPU > 80 GB -> False
    "nb02_p4_zero1_fits": P("02", M, [False], [True], ["It does not", "276 GB"]),
    # ---------------------------------------------------------------- 03 bottlenecks
    # square bf16 GEMM: I = n/3; n/3 = 312e12 / 2.039e12 -> n = 459.05; option 512
    # (rel 0.15 accepts 390..528)
    "nb03_p1_ridge_n": P("03", M, [459.05, 512, 460], [64, 4096],
                         ["n/3", "n \\approx 460", "459"]),
    # roofline: 32 × 2.039e12 / 312e12 = 0.2091 (65.2 of 312 TFLOP/s)
    "nb03_p2_attn_peak_fraction": P("03", M, [0.2091, 0.2], [1.0, 0.5, 0.05],
                                    ["65.2", "0.209", "21%"]),
    # chapter Eq 11 text: 200 / 2000 = 0.1
    "nb03_p3_utilization": P("03", M, [0.1], [0.2, 1.0, 0.5], ["10%", "sits at"]),
    # Figure 10: 10 + 15 + 5 + 25 = 55 ms serial
    "nb03_p4_serial_ms": P("03", "my_serial_ms", [55], [25, 30], ["55 ms", "0.055"]),
    # Eq 13 / Figure 11: max(10, 15, 5, 25) = 25 ms overlapped
    "nb03_p4_overlapped_ms": P("03", "my_overlapped_ms", [25], [55, 15],
                               ["0.025", "= 25 ms", "overlapped 25"]),
    # U = b / (ceil(b/32) × 32): 97/128 = 0.7578125 (rel 0.01)
    "nb03_p5_warp97": P("03", "my_batch97", [0.7578125, 0.76], [0.5, 0.97, 0.75],
                        ["0.7578", "75.8"]),
    # 100/128 = 0.78125
    "nb03_p5_warp100": P("03", "my_batch100", [0.78125, 0.78], [1.0, 0.75, 0.5],
                         ["0.78125", "78.1"]),
    # chapter Self-Check 4 Run B + the course rule (row 2): data-bound
    "nb03_p6_label": P("03", M, ["data-bound", "Data-bound", "data bound"],
                       ["memory-bound", "compute-bound", "capacity-bound", "overhead-bound"],
                       ["Run B is data-bound", "is data-bound"]),
    # ---------------------------------------------------------------- 04 parallelism
    # 1e9 B / 300e9 B/s (NVLink 3 per direction) × 312e12 FLOP/s = 1.04e12 (rel 0.5)
    "nb04_p1_nvlink_flops": P("04", M, [1.04e12, 1e12], [1e9, 1e11, 1e14],
                              ["1.04e12", "3.33 ms", "**trillion**"]),
    # chapter Napkin 1.10: 2 × 7/8 × 14e9 / 12.5e9 = 1.96 s > 1 s -> more
    "nb04_p2_allreduce_vs_compute": P("04", M, ["more", "More"], ["less"],
                                      ["1.96", "network wall"]),
    # lab Part 1: the all-reduce does not shrink with N -> not exactly 8x
    "nb04_p3_exactly_8x": P("04", "my_exactly_8x", [False], [True],
                            ["does not drop by exactly", "less than 8"]),
    # lab Part 1: 3 GB all-reduce ~0.12 s on InfiniBand 400G vs ~4.8 s on 10 GbE
    "nb04_p3_better_link": P("04", "my_better_link", ["InfiniBand", "infiniband"], ["10GbE"],
                             ["0.12 s", "4.8 s"]),
    # bubble (p-1)/(m+p-1) = 3/4 at p = 4, m = 1
    "nb04_p4_bubble": P("04", "my_idle_share", [0.75], [0.25, 0.1, 0.5],
                        ["0.75", "75 %", "75%"]),
    # 3/(m+3) < 0.1 -> m > 27 -> 28 (exact, abs_tol 0.5)
    "nb04_p4_microbatches": P("04", "my_microbatches", [28, 28.0], [27, 30, 9],
                              ["m = 28", "m \\ge 28", "28 micro"]),
    # lab Part 2: each stage holds 1/pp of the layers -> neither
    "nb04_p7_pp_weight_bytes": P("04", M, ["neither", "Neither"], ["increase", "decrease"],
                                 ["changes only where", "1/pp"]),
    # 1 - 0.95^64 = 0.96248 (rel 0.03)
    "nb04_p8_straggler_share": P("04", "my_straggler_share", [0.9625, 0.96], [0.05, 0.5, 0.8],
                                 ["0.962", "96 %", "96%"]),
    # seeded simulation in the notebook: async ~2.6x the updates/s of sync -> True
    "nb04_p8_async_faster": P("04", "my_async_faster", [True, "yes"], [False],
                              ["2.6×", "2.6x"]),
    # ---------------------------------------------------------------- 05 speculative
    # lesson 003 §7a worked example: 3 accepted drafts + the target's "it" = 4 tokens
    "nb05_p2_tokens_emitted": P("05", M, [4], [3, 5], ["Four tokens", "4 tokens from", "emits 4"]),
    # Leviathan et al. 2023 Eq. 1: (1 - 0.8^4)/0.2 = 2.952
    "nb05_p3_tokens_k3": P("05", "my_tokens_k3", [2.952, 2.95], [3.2, 2.4, 4],
                           ["2.952"]),
    # (1 - 0.8^101)/0.2 = 4.99999999919 -> 1/(1 - 0.8) = 5
    "nb05_p3_tokens_k100": P("05", "my_tokens_k100", [5.0, 5], [100, 101, 3.0],
                             ["1/(1−α)", "= 5 tokens", "4.99"]),
    # argmax_k (1 - 0.8^(k+1)) / (0.2 (0.1k + 1)) = 6 (2.4696x)
    "nb05_p6_best_k": P("05", M, [6], [2, 12], ["k = 6", "best k = 6"]),
    # min(1, p[1]/q[1]) = 0.3/0.5 = 0.6
    "nb05_p7_accept_prob": P("05", "my_accept_prob", [0.6], [1.0, 0.3, 0.5],
                             ["0.6", "= 0.6"]),
    # residual max(0, p - q) = [0.3, 0, 0] -> token 0
    "nb05_p7_replacement": P("05", "my_replacement_token", [0], [1, 2],
                             ["[1, 0, 0]", "token 0"]),
    # Mixtral: e = 34e9/6, s = 13e9 - 2e; (s + 8e(1 - 0.75^5))/13e9 = 2.787860576923077
    "nb05_p9_moe_ratio": P("05", M, [2.787860576923077, 3, 2.8], [1, 8, 2.0],
                           ["2.79", "2.78"]),
    # ---------------------------------------------------------------- 06 batching
    # lesson 003 waste example: sum = 740 of 8 × 200 = 1600 -> 0.4625 (rel 0.1)
    "nb06_p1_useful_fraction": P("06", M, [0.4625, 0.45], [0.25, 0.75, 0.95],
                                 ["46.25", "0.4625", "860"]),
    # Exercise 3, 8 slots, static (pinned in test_static_sim): 0.5119 > 0.4625 -> above
    "nb06_p3_above_below": P("06", M, ["above", "Above"], ["below"],
                             ["51.2", "0.5119", "51%"]),
    # Exercise 3 (pinned in the hidden tests): continuous 643 / static 1092 = 0.5888 (rel 0.1)
    "nb06_p4_continuous_share": P("06", M, [0.5888, 0.6], [0.95, 0.8, 0.4],
                                  ["643", "0.589", "59%"]),
    # queueing: waiting time ∝ 1/(1 - load) -> blows up
    "nb06_p5_latency_shape": P("06", M, ["blows up", "Blows up"], ["linear"],
                               ["shoots up", "1/(1 − load)"]),
    # (80e9 - 2 × 6,738,415,616) // (16 × 524,288) = 7930 blocks // 256 = 30 (rel 0.2)
    "nb06_p6_kv_sequences": P("06", M, [30], [8, 120, 500], ["30 sequences", "Only **30**"]),
}


def _prediction_cells(path):
    """(index, cells, [tokens]) for every ordinary cell of an authoring file with tokens."""
    cells = parse(read_py(path))
    return [(i, cells, TOKEN.findall(c.source)) for i, c in enumerate(cells)
            if "sc.predict(" in c.source]


def _all_tokens():
    out = {}
    for path in NOTEBOOKS:
        for _, _, tokens in _prediction_cells(path):
            for tok in tokens:
                q = sc.get_question(tok)
                assert q.qid not in out, f"{q.qid} pasted twice"
                out[q.qid] = (path.name, tok)
    return out


TOKENS = _all_tokens()


def _plain_fields(qid):
    """The question's packaged fields that are plain text (everything but key/explanation)."""
    d = json.loads(PREDICTIONS_JSON.read_text(encoding="utf-8"))["questions"][qid]
    return " ".join(str(d[k]) for k in ("prompt", "hints", "source", "unit", "section",
                                        "variable", "option_texts"))


def test_every_token_is_listed():
    assert NOTEBOOKS and len(NOTEBOOKS) == 6
    assert set(TOKENS) == set(PREDICTIONS)
    for qid, (name, _) in TOKENS.items():
        assert name.startswith(PREDICTIONS[qid]["nb"] + "_"), (qid, name)


@pytest.mark.parametrize("qid", sorted(PREDICTIONS))
def test_token_accepts_answer_rejects_wrong(qid):
    spec, token = PREDICTIONS[qid], TOKENS[qid][1]
    q = sc.get_question(token)
    assert q.qid == qid and q.kind in ("number", "label", "bool", "choice")
    assert q.variable == spec["var"] and q.hints and q.explanation_text()
    for answer in spec["correct"]:
        r = sc.check(token, answer)
        assert r.valid and r.correct is True, (qid, answer, r.message)
        assert r.explanation == q.explanation_text()
    for answer in spec["wrong"]:
        r = sc.check(token, answer)
        assert r.valid and r.correct is False, (qid, answer)
        assert r.hint and r.explanation is None      # first try: a hint, no explanation
        assert sc.check(token, answer, attempt=q.reveal_after).explanation  # then revealed
    if q.kind == "number":
        ref = float(spec["correct"][0])
        assert sc.is_correct(token, ref) and not sc.is_correct(token, -ref - 1)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_prediction_cells_are_ungraded_and_quiet(path):
    found = _prediction_cells(path)
    assert found
    for i, cells, tokens in found:
        cell, prev = cells[i], cells[i - 1]
        assert cell.kind == "code" and cell.grade_id is None and cell.points is None
        assert prev.kind == "markdown" and "predict" in prev.source.lower(), prev.source[:80]
        specs = [PREDICTIONS[sc.get_question(t).qid] for t in tokens]
        for spec in specs:
            assert re.search(rf"^{spec['var']}\s*= None  # ", cell.source, re.M)
        for bad in ("make_question", "answer=", "BEGIN SOLUTION", "HIDDEN"):
            assert bad not in cell.source
        # untouched (None): runs, prints nothing
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(cell.source, {"sc": sc})  # the setup cell imports selfcheck as sc
        assert out.getvalue() == ""
        # answered: right -> "Correct." + explanation; wrong -> "Not quite." + a hint
        for guesses, expect in (([s["correct"][0] for s in specs], "Correct."),
                                ([s["wrong"][0] for s in specs], "Not quite.")):
            sc._PREDICTION_GUESSES.clear()  # a fresh kernel
            out = _run_with(cell.source, specs, guesses, {"sc": sc})
            assert out.count(expect) == len(specs), out
        # a second, different wrong guess is attempt 2 and reveals the explanation (running
        # the cell again with the same guess is not a new attempt)
        sc._PREDICTION_GUESSES.clear()
        ns = {"sc": sc}
        out = _run_with(cell.source, specs, [s["wrong"][0] for s in specs], ns)
        out += _run_with(cell.source, specs, [s["wrong"][0] for s in specs], ns)
        out += _run_with(cell.source, specs, [s["wrong"][-1] for s in specs], ns)
        distinct = sum(s["wrong"][0] != s["wrong"][-1] for s in specs)
        assert out.count("Explanation:") == distinct, out


def _run_with(source, specs, guesses, namespace):
    """Run a prediction cell with its variables set to ``guesses``; return what it printed."""
    for spec, guess in zip(specs, guesses):
        source = re.sub(rf"^{spec['var']}(\s*)= None", rf"{spec['var']}\1= {guess!r}", source,
                        flags=re.M)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(source, namespace)
    return out.getvalue()


def test_release_asks_by_id_only():
    assert len(RELEASES) == 6
    seen = set()
    for path in RELEASES:
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            tokens = TOKEN.findall(cell.source)
            if not tokens:
                continue
            assert cell.cell_type == "code" and not cell.outputs
            assert not cell.metadata.get("nbgrader", {}).get("grade")
            prompt = nb.cells[i - 1]
            assert prompt.cell_type == "markdown" and "predict" in prompt.source.lower()
            assert sc.TOKEN_PREFIX not in cell.source  # a short id, not an inline token
            visible = cell.source + "\n" + prompt.source
            for tok in tokens:
                qid = sc.get_question(tok).qid
                seen.add(qid)
                spec = PREDICTIONS[qid]
                assert re.search(rf"^{spec['var']}\s*= None", cell.source, re.M)
                plain = _plain_fields(qid)
                for leak in spec["leaks"]:
                    assert leak not in visible, f"{path.name} {qid}: {leak!r} in plain text"
                    assert leak not in plain, f"{qid}: {leak!r} readable in the packaged data"
                if isinstance(spec["correct"][0], float):
                    # numbers travel only as the obfuscated key
                    assert repr(spec["correct"][0]) not in visible + plain, qid
    assert seen == set(PREDICTIONS)
