"""capture/fresh3.py to fresh8.py: eight before/after workloads each, written by
someone who never read the analyzers (issue 33's held-out real workloads: captured on an H100, judged blind before
the tool ran). Each script's registry and one pair's two variants, run on the CPU at the script's SMALL sizes. The
GPU runs (capture/record_fresh*.sh) are the device's; this keeps the plumbing honest."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, sys
sys.path.insert(0, "capture")
module = __import__(sys.argv[1])
w = {m["name"]: m for m in module.WORKLOADS}
out = {"names": sorted(w), "fix_differs": all(m["fix_before"] != m["fix_after"] for m in w.values()),
       "caps": all(m["cap_s"] > 0 for m in w.values())}
for variant in ("before", "after"):
    r = w[sys.argv[2]]["build"](variant)
    r.prepare(); r.step(); r.step()
    extra = r.extra()
    out[variant] = extra.get("n_params", sorted(extra))
print(json.dumps(out))
"""

# (script, the pair run on the CPU, what both variants must share)
PAIRS = [
    ("fresh3", "unet_ema_loop", "the same UNet's parameters, updated by both EMA forms"),
    ("fresh4", "tabular_item_sync", "the same model and data, the loss read or not"),
    ("fresh5", "transformer_cpu_mask", "the same model and batch, the mask built on the host or the device"),
    ("fresh6", "ctr_bag_python_loop", "the same model and batches, each bag pooled in a loop or by embedding_bag"),
    ("fresh7", "two_tower_broadcast_score", "the same towers and items, scored by a broadcast product or a matmul"),
    ("fresh8", "gpt_onehot_fp32_loss", "the same GPT and tokens, the loss by a one-hot product or cross_entropy"),
]


REGISTRIES = r"""
import json, sys
sys.path.insert(0, "capture")
out = {}
for script in sys.argv[1:]:
    w = __import__(script).WORKLOADS
    out[script] = [len(w), all(m["fix_before"] != m["fix_after"] and m["cap_s"] > 0 for m in w)]
print(json.dumps(out))
"""


def test_each_fresh_script_registers_eight_workloads_that_each_change_one_line():
    # (and capture/pending_pairs.py its six: the pairs measured for a lever written without one, pinned_batches;
    # capture/pending_pairs2.py its ten: one pair for each of ten levers written from one development pair;
    # capture/pairs6.py its four: everyday mistakes in families no lever was written from)
    scripts = [p[0] for p in PAIRS]
    done = subprocess.run([sys.executable, "-c", REGISTRIES, *scripts, "pending_pairs", "pending_pairs2",
                           "pairs6"], cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {**{s: [8, True] for s in scripts},
                                                               "pending_pairs": [6, True], "pending_pairs2": [10, True],
                                                               "pairs6": [4, True]}


@pytest.mark.slow   # builds and steps a real model on the CPU per script (6-7 s each): the registries stay fast above
@pytest.mark.parametrize("script, pair, shared", PAIRS, ids=[p[0] for p in PAIRS])
def test_the_eight_workloads_each_change_one_line_and_one_pair_runs_both_variants_on_the_cpu(script, pair, shared):
    env = {**os.environ, "SMALL": "1", "DEVICE": "cpu"}
    done = subprocess.run([sys.executable, "-c", PROBE, script, pair], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(out["names"]) == 8 and out["fix_differs"] and out["caps"], out
    assert out["before"] == out["after"], (shared, out)
    assert out["before"] and (not isinstance(out["before"], int) or out["before"] > 50), (shared, out)

