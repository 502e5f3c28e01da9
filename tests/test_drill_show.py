"""`drill show` prints what its questions need: the costed ops with FLOPs, bytes, rates and the device's peaks
for a roofline question, copies on a lane of their own in the copy colour, the host call in each large gap."""
from __future__ import annotations

import json
import re

from tracetriage.cli import main
from tracetriage.drills import bank, evidence, render


def _show(capsys, drill_id: str, *extra) -> str:
    main(["drill", "show", drill_id, *extra])
    return capsys.readouterr().out


def test_a_roofline_drill_shows_each_costed_ops_flops_bytes_and_the_peaks_but_not_its_rates_nor_its_bound(capsys):
    # the drill asks the achieved rate: a row printing it beside the peaks answers the question for the student
    out = _show(capsys, "M01.05-b")
    assert "the costed ops (roofline" in out
    assert not re.search(r"\d+ TFLOP/s, [\d,.]+ GB/s\n", out) and "-bound)" not in out, out
    assert "the device's peaks: " in out
    info = json.loads(_show(capsys, "M01.05-b", "--json"))
    assert {"flops", "bytes", "device_us", "peak_tflops", "peak_gbps"} <= set(info["kernels"][0])
    assert not {"bound", "tflops", "gbps"} & set(info["kernels"][0])


def test_a_roofline_drill_on_tf32_matmuls_shows_the_tf32_peak_and_no_bound(capsys):
    out = _show(capsys, "M01.05-a")      # fp32 matmuls with TF32 on: the peak shown is the TF32 one
    assert re.search(r"aten::mm\s+\[4096x4096, 4096x4096\]\s+tf32\s+×8\s+1,099\.5 GFLOP", out), out
    assert re.search(r"the device's peaks: [\d,]+ TFLOP/s \(tf32\), 4,246 GB/s of HBM", out), out
    info = json.loads(_show(capsys, "M01.05-a", "--json"))
    assert "bound" not in info["kernels"][0]


def test_the_shapes_drill_gives_flops_and_time_but_not_the_rates_it_asks_for(capsys):
    info = json.loads(_show(capsys, "M01.04-a", "--json"))
    assert {k["shapes"] for k in info["kernels"]} == {"256x256, 256x256", "8192x8192, 8192x8192"}
    assert all("tflops" not in k and k["flops"] > 0 and k["device_us"] > 0 for k in info["kernels"])


def test_copies_get_a_lane_of_their_own_in_the_copy_colour():
    t = evidence.lanes(bank.get("M02.04-d").trace_path())
    text = render.draw(t, cause_marks=False)
    assert "gpu0 stream 7 copies" in text.plain
    copy_row = next(line for line in text.plain.splitlines() if line.startswith("gpu0 stream 7 copies"))
    assert "█" in copy_row
    bar_styles = {str(s.style) for s in text.spans if set(text.plain[s.start:s.end]) <= set("█▌▏ ")
                  and "█" in text.plain[s.start:s.end]}
    assert render.KIND_STYLE["memcpy"] in bar_styles       # the copies' own colour, beside the host's


def test_each_large_gap_names_the_host_call_it_waited_in(capsys):
    out = _show(capsys, "M02.04-c")
    assert "the longest idle gaps, and the host call the host was in during each:" in out
    assert re.search(r"at\s+[\d.]+ ms:\s+[\d.]+ µs idle, the host in cudaStreamSynchronize", out), out


def test_the_size_sweep_says_it_is_unprofiled_and_not_what_the_drill_asks(capsys):
    out = _show(capsys, "M01.08-a")
    assert "timed unprofiled with CUDA events" in out and "the drill asks about the traced spans above" in out


def test_the_ranges_drill_asks_to_predict_the_ttft_it_asks_for_not_the_floor_drills_per_token_time(capsys):
    out = _show(capsys, "M02.02-a")
    assert "tracetriage predict ttft_ms VALUE" in out and "predict per_token_ms" not in out


INCIDENTS = [d for d in bank.all_drills() if d.kind == "incident"]


def test_an_incident_shows_the_passes_its_ttft_and_per_token_time_are_read_from(capsys):
    for d in INCIDENTS:
        passes = json.loads(_show(capsys, d.id, "--json"))["passes"]
        prompt = [p for p in passes if p.get("to_host_ms")]
        tokens = [p for p in passes if p["forward"] and not p.get("to_host_ms")]
        assert len(prompt) == 1 and prompt[0]["tokens"] > 1, d.id   # the prompt's pass: many new tokens per sequence
        assert len(tokens) == 1 and len(tokens[0]["walls_ms"]) == tokens[0]["last"] - tokens[0]["first"] + 1, d.id
    out = _show(capsys, "M00.04-d")
    assert re.search(r"batch 1 × 128 new tokens; wall [\d.]+ ms\n\s+device-to-host copies from the request's first "
                     r"pass on \(.*\), ending at \(ms\): [\d., ]*17\.853", out), out
    assert re.search(r"passes 3–33 \(31\)\s+starts\s+[\d.]+ ms\s+batch 1 × 1 new token each; walls in ms, in order:",
                     out)
    shown = out.split("questions")[0]
    assert "median" not in shown and "reaches the host" not in shown
    assert "prefill" not in out.split("questions")[0].lower()     # the phases are the student's to name


def test_the_idle_cause_and_bound_drills_show_the_timeline_and_its_longest_gaps_not_the_idle_summed_by_cause(capsys):
    # the idle summed by host call maps one-to-one onto the cause classes (cudaStreamSynchronize -> synchronization):
    # the question answered; what a timeline reader sees (the lanes, the longest gaps and the host call in each) stays
    a_rows = render.idle_by_call(evidence.lanes(bank.get("M02.01-a").trace_path()))
    assert {call: of_span for call, _, of_span in a_rows}["cudaStreamSynchronize"] >= 0.10   # what the key rests on
    for drill_id in ("M02.01-a", "M02.03-a", "M02.03-c", "M02.04-a"):
        shown = _show(capsys, drill_id).split("questions")[0]
        assert "all gaps summed" not in shown and "of the span" not in shown.split("idle gaps")[-1], drill_id
        assert re.search(r"the longest idle gaps, and the host call the host was in during each:\n\s+at ", shown), \
            drill_id


def test_a_timers_repeats_say_how_many_calls_each_repeat_holds(capsys):
    # the small RMSNorm+SwiGLU's repeats are 47-75 ms: 200 calls each, not one call's time
    out = _show(capsys, "M01.03-b")
    assert "wall ms of each repeat (200 calls one after another):" in out and "per call" not in out, out
