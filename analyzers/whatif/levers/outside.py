"""How `tracetriage try` turns a knob without editing the user's code: one spec per knob, data only.

`try` applies a knob in a child process (tracetriage.capture.knob_runner) that sets it and then runs the
user's script as __main__; nothing here imports torch, and nothing edits a file. A knob is applied by:

    attrs      module attributes set before the script runs (`torch.backends.cudnn.benchmark = True`)
    env        environment variables of the child (`CUDA_MODULE_LOADING=EAGER`)
    overrides  a library constructor or method whose keyword arguments are forced (`torch.optim.AdamW(...,
               fused=True)`, `DataLoader(..., pin_memory=True)`, `zero_grad(set_to_none=True)`): a class is
               replaced by a subclass that forces them, a function by a wrapper
    noops      library calls made no-ops (`torch.cuda.empty_cache`)
    autocast   the whole script run under torch.autocast with this dtype ("bfloat16")

    numerics   the change alters the numbers the script computes (lower precision): its row says so
    gpu_only   it only means something on a GPU (tensor cores, cuDNN, pinned memory, CUDA modules)
    probe      names in the trace that show the knob applies where no lever prices it (a CPU trace has no
               GPU timeline to replay): a substring of any event name; () for none
    priced     the lever of its catalogue entry predicts this knob's saving (False: the trace cannot show what it
               buys, its row is measured only)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Outside:
    key: str                      # the knob's name in the try table and on --knob
    how: str                      # what the child does, in one line
    attrs: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    overrides: dict = field(default_factory=dict)
    noops: tuple[str, ...] = ()
    autocast: str = ""
    numerics: bool = False
    gpu_only: bool = False
    probe: tuple[str, ...] = ()
    priced: bool = True

    def paths(self) -> list[str]:
        """The library objects it touches: every run resolves all knobs' paths first, so that none is charged
        the imports (seconds: torch.optim pulls in torch._dynamo) another run made before its profiler started."""
        return [*self.attrs, *self.overrides, *self.noops]

    def to_json(self) -> dict:
        """What the child runner reads (it does not import the analyzers)."""
        d = asdict(self)
        d["noops"] = list(self.noops)
        d["probe"] = list(self.probe)
        return d


NONE = Outside(key="baseline", how="the script as it is")
