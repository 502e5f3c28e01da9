"""Prefill and decode are read from the steps' shapes only where the trace shows a sequence model
(tracetriage.analyzers.analyses.inference.sequence_model): matrix rows alone say nothing of tokens.

heldout-user19 gp_cudagraph multiplies 100x100 matrices once eagerly, then replays them from a CUDA graph 19
times: it was read as 'prefill (TTFT) 3.55 s ... a 100-token prompt', '19 decode steps' and 'prefill is
compute-bound, decode compute-bound'. The same readings from a loop of plain matmuls whose first step is larger
than the rest are built here; with an embedding lookup, or a generate() frame around them, they stay phases.
"""
from __future__ import annotations

import kineto_factory as kf
from test_steps import MS, US, Timeline, forward
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.voice.report import five_lines

TOKEN_WORDS = ("prefill", "decode", "token", "prompt", "TTFT")


def matmul_loop(tl: Timeline, batch: int = 8):
    """A first step of [batch, 256, 512] rows, then 16 steps of [batch, 1, 512]: what a prefill and its decode
    look like through the matmuls' rows, with no embedding lookup and no attention."""
    for rows in [256] + [1] * 16:
        for _ in range(2):
            tl.op("aten::linear", 30 * US + batch * rows * 100, dims=[[batch, rows, 512], [512, 512]])
            tl.op("aten::relu", 10 * US)
        tl.op("aten::linear", 40 * US, dims=[[batch, rows, 512], [10, 512]])
        tl.op("aten::argmax", 5 * US)
        tl.host(200 * US)


def test_a_matmul_loop_with_no_sequence_model_gets_no_prefill_decode_or_tokens(tmp_path):
    tl = Timeline()
    matmul_loop(tl)
    a = analyze_trace(tl.write(tmp_path / "mlp.json"))
    assert a.steps is not None and a.steps.found         # the loop's steps are still found
    assert a.inference is None and a.phases is None
    text = " ".join(five_lines(a))
    assert not any(w in text for w in TOKEN_WORDS), text


def test_the_same_loop_with_an_embedding_lookup_is_a_prefill_and_its_decode(tmp_path):
    tl = Timeline()
    forward(tl, 8, 256)
    for _ in range(16):
        forward(tl, 8, 1)
        tl.host(200 * US)
    a = analyze_trace(tl.write(tmp_path / "gen.json"))
    assert a.phases is not None and a.phases.prompt_tokens == 256 and a.phases.decode.count == 16


def test_a_generate_frame_around_a_matmul_loop_shows_a_sequence_model(tmp_path):
    tl = Timeline()
    matmul_loop(tl)
    end = tl.t + 1 * MS
    tl.extra.append({"ph": "X", "cat": "python_function", "name": "transformers/generation/utils.py(1940): generate",
                     "pid": kf.PID, "tid": kf.TID, "ts": round((kf.ORIGIN_NS + 50 * US) / 1000, 3),
                     "dur": round((end - 50 * US) / 1000, 3), "args": {"Python id": 1, "Python parent id": 0}})
    a = analyze_trace(tl.write(tmp_path / "hf.json"))
    assert a.phases is not None and a.phases.decode.count == 16
