"""Write analyzers/model/aten_ops.txt: the ATen operator names of the torch installed here.

    python -m tools.aten_ops

The vocabulary that splits an Inductor kernel's fused-op list back into ops
(tracetriage.analyzers.analyses.inductor). Needs torch; the report reads the file and never imports torch.
"""
from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "analyzers" / "model" / "aten_ops.txt"


def main() -> int:
    import torch

    names = {s.name.removeprefix("aten::") for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")}
    names |= {n.removeprefix("aten::").split(".")[0] for n in torch._C._dispatch_get_all_op_names()
              if n.startswith("aten::")}
    head = (f"# ATen operator names (torch {torch.__version__.split('+')[0]} schemas), one a line: the vocabulary that "
            "splits an Inductor kernel's\n# fused-op list (triton_poi_fused_add_native_layer_norm_0) back into ops. "
            "Regenerate: python -m tools.aten_ops\n")
    OUT.write_text(head + "\n".join(sorted(names)) + "\n", encoding="utf-8")
    print(f"wrote {len(names)} names to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
