"""The chain finder sees a ResNet's eager elementwise chains: batch norm then ReLU (aten::clamp_min_), and the
residual add then ReLU (heldout-user3 review class B: 'no eager elementwise chain here for torch.compile to fuse'
on ResNets with 16-176 back-to-back add_ -> clamp_min_ pairs and BN -> elementwise pairs). On the real
inference_mode_resnet capture (a ResNet-50 forward, bf16): every bottleneck's BN -> ReLU and BN -> add_ -> ReLU."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from tracetriage.analyzers.analyses import fusion
from tracetriage.analyzers.loading.load import load

ROOT = Path(__file__).resolve().parent.parent


def test_batch_norm_relu_and_residual_add_relu_are_chains():
    tr = load(ROOT / "traces" / "fixes" / "knobs3" / "inference_mode_resnet--before.json.gz")
    chains = fusion.chains(tr)
    shapes = Counter(tuple(tr.names[tr.ev.name[o]] for o in c.ops) for c in chains)
    assert shapes[("aten::native_batch_norm", "aten::clamp_min_")] > 0
    assert shapes[("aten::native_batch_norm", "aten::add_", "aten::clamp_min_")] > 0
    # every chain moves fewer bytes fused than eager: BN's output is read once by the ReLU instead of written+read
    assert all(c.fused_bytes < c.eager_bytes for c in chains)
