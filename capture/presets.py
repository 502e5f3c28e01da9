"""Named presets: a workload class, a few overridden fields, and what it was built to show.

`label` is the ground truth the sample library is checked against: the idle cause
that should dominate (None where the device should hardly idle) and the regime, on a GPU.
On --device cpu a preset runs at its workload class's `cpu_sizes`; a sidecar records the
fields that ran (Workload.params) and the label of that device (Preset.label_on).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Preset:
    name: str
    workload: str                    # "module:Class" under capture/, imported lazily
    overrides: dict = field(default_factory=dict)
    idle_cause: str | None = None    # launch_overhead | host_work | synchronization | data_transfer | None
    regime: str | None = None        # compute | memory | overhead
    about: str = ""

    def label(self) -> dict:
        """What a GPU capture of this preset was built to show."""
        return {"idle_cause": self.idle_cause, "regime": self.regime, "about": self.about}

    def label_on(self, device: str) -> dict:
        """The label for a capture on `device`: a CPU trace has no GPU timeline, so it claims no idle
        cause and no regime, and says it ran at the CPU sizes."""
        if not on_cpu(device):
            return self.label()
        return {"idle_cause": None, "regime": None,
                "about": f"{self.name} at its CPU sizes: a functional check with no GPU timeline (on a GPU: "
                         f"{self.about})"}

    def workload_class(self) -> type:
        import importlib

        mod, cls = self.workload.split(":")
        return getattr(importlib.import_module(f"tracetriage.capture.{mod}"), cls)

    def defaults(self, device: str) -> dict:
        """Every field the user may --set, with the value this preset runs with on `device`."""
        from tracetriage.capture.fields import settable

        klass = self.workload_class()
        values = {f.name: f.default for f in settable(klass)}
        return {**values, **self.overrides, **(klass.cpu_sizes if on_cpu(device) else {})}

    def build(self, device: str, /, **more: Any):
        """The workload, with the user's --set values (checked: FieldError) over the preset's own."""
        from tracetriage.capture.fields import check

        klass = self.workload_class()
        defaults = self.defaults(device)
        values = check(klass, more, who=self.name, defaults=defaults, where=f"on {device}")
        return klass(device=device, **{**defaults, **values})

    def help_lines(self) -> list[str]:
        """`tracetriage capture PRESET --help`: what it shows, and its fields with their defaults."""
        from tracetriage.capture.fields import settable, shown, type_words

        gpu, cpu = self.defaults("cuda"), self.defaults("cpu")
        shows = ", ".join(x for x in (self.idle_cause and f"{self.idle_cause} idle",
                                      self.regime and f"{self.regime}-bound") if x) or "no single idle cause"
        lines = [f"{self.name}: {self.about}", f"built to show, on a GPU: {shows}", "",
                 "fields (--set KEY=VALUE; --steps N sets steps), with their defaults:"]
        width = max(len(f.name) for f in settable(self.workload_class()))
        for f in settable(self.workload_class()):
            g, c = shown(gpu[f.name]), shown(cpu[f.name])
            where = g if g == c else f"{g} on a GPU, {c} on the CPU"
            lines.append(f"  {f.name.ljust(width)}  {type_words(f.type)}: {where}")
        return lines


def on_cpu(device: str) -> bool:
    return device.split(":")[0] == "cpu"


_P = Preset
PRESETS: dict[str, Preset] = {p.name: p for p in [
    # Elementwise chain: fusion's win collapses toward 1x where launches dominate (M01.08).
    _P("chain-eager-small", "chain:ElementwiseChain", {"impl": "eager", "n": 1 << 12}, "launch_overhead", "overhead",
       "eager 4-kernel chain on 4K elements: every kernel shorter than its launch"),
    _P("chain-triton-small", "chain:ElementwiseChain", {"impl": "triton", "n": 1 << 12}, "launch_overhead", "overhead",
       "fused Triton chain on 4K elements: one kernel, still shorter than its launch"),
    _P("chain-eager-large", "chain:ElementwiseChain", {"impl": "eager", "n": 1 << 26}, None, "memory",
       "eager chain on 64M fp32 elements: 9 passes, 2.4 GB per call"),
    _P("chain-triton-large", "chain:ElementwiseChain", {"impl": "triton", "n": 1 << 26}, None, "memory",
       "fused Triton chain on 64M elements: 2 passes, 0.5 GB per call"),
    _P("chain-compile-large", "chain:ElementwiseChain", {"impl": "compile", "n": 1 << 26}, None, "memory",
       "torch.compile'd chain on 64M elements: Inductor fuses it into one kernel"),
    # Matmul sweep (M01.04) and softmax.
    _P("matmul-sweep-bf16", "matmul:MatmulSweep", {"dtype": "bfloat16"}, None, "compute",
       "bf16 matmuls 256^3..8192^3 plus M=1/M=16 skinny shapes"),
    _P("softmax-naive", "softmax:Softmax", {"impl": "naive"}, None, "memory",
       "softmax as five eager kernels on 4096x4096 fp32"),
    _P("softmax-triton", "softmax:Softmax", {"impl": "triton"}, "launch_overhead", "overhead",
       "fused Triton softmax, one program per row: a 38 µs kernel behind a longer Python launch"),
    # The four smells.
    _P("smell-launch-tiny-ops", "smells:LaunchTinyOps", {}, "launch_overhead", "overhead",
       "200 elementwise ops on a 4 KB tensor per step"),
    _P("smell-launch-small-mlp", "smells:LaunchSmallMLP", {}, "launch_overhead", "overhead",
       "24-layer width-256 MLP at batch 8"),
    _P("smell-launch-per-param", "smells:LaunchPerParamUpdate", {}, "launch_overhead", "overhead",
       "hand-written momentum SGD over 150 small parameters, no foreach"),
    _P("smell-host-numpy", "smells:HostNumpy", {}, "host_work", "overhead",
       "numpy sort of 100k floats on the critical path before each GPU phase"),
    _P("smell-host-python", "smells:HostPython", {}, "host_work", "overhead",
       "pure-Python string processing before each GPU phase (untraced host time)"),
    _P("smell-host-cpu-ops", "smells:HostCpuTensorOps", {}, "host_work", "overhead",
       "CPU-tensor image augmentation in the main process before each GPU phase"),
    _P("smell-host-sleep", "smells:HostSleep", {}, "host_work", "overhead",
       "a 2 ms blocking wait (simulated I/O) before each GPU phase"),
    _P("smell-sync-item", "smells:SyncItem", {}, "synchronization", "compute",
       ".item() on the output every iteration, after 0.5 ms of queued matmuls"),
    _P("control-sync-light", "smells:SyncLight", {}, None, None,
       ".item() after ~0.1 ms of small kernels: on the H200 host, sync drains and launch gaps tie "
       "(20% vs 22% of the span); an honest mixed case, not a clean smell"),
    _P("smell-sync-explicit", "smells:SyncExplicit", {}, "synchronization", "compute",
       "torch.cuda.synchronize() after every matmul to time it with host clocks"),
    _P("smell-sync-nonzero", "smells:SyncNonzero", {}, "synchronization", "compute",
       "boolean-mask indexing (nonzero) after each 0.5 ms of matmuls"),
    _P("smell-transfer-pageable-h2d", "smells:TransferPageableH2D", {}, "data_transfer", "overhead",
       "128 MB pageable host->device copy per step, then a short matmul"),
    _P("smell-transfer-d2h", "smells:TransferD2H", {}, "data_transfer", "overhead",
       "128 MB device->host copy into pageable memory per step"),
    _P("smell-transfer-pinned-serial", "smells:TransferPinnedSerial", {}, "data_transfer", "overhead",
       "pinned non_blocking copies on the compute stream: no overlap"),
    _P("healthy-overlap", "smells:HealthyOverlap", {}, None, "compute",
       "pinned copies prefetched on a side stream while bf16 matmuls run"),
    # Probes: the same causes reached through other code paths (capture/probes.py).
    _P("probe-launch-embedding-loop", "probes:LaunchEmbeddingLoop", {}, "launch_overhead", "overhead",
       "token-by-token embedding lookups in a Python loop"),
    _P("probe-launch-row-softmax", "probes:LaunchRowSoftmax", {}, "launch_overhead", "overhead",
       "softmax one row at a time in Python"),
    _P("probe-host-dataloader", "probes:HostDataLoader", {}, "host_work", "overhead",
       "DataLoader(num_workers=0) building numpy crops in the main process"),
    _P("probe-host-json", "probes:HostJson", {}, "host_work", "overhead",
       "JSON round trip of a metrics dict between steps"),
    _P("probe-sync-print", "probes:SyncPrint", {}, None, "overhead",
       "print() of a tensor every iteration: formatting launches ~30 tiny kernels and syncs ~10 times; "
       "launch gaps (33%) edge out sync drains (22%): a mixed case"),
    _P("probe-sync-any", "probes:SyncAny", {}, "synchronization", "compute",
       "if (y < -1e6).any(): data-dependent control flow"),
    _P("probe-sync-event", "probes:SyncEvent", {}, "synchronization", "compute",
       "torch.cuda.Event.synchronize() every iteration"),
    _P("probe-sync-tolist", "probes:SyncTolist", {}, "synchronization", "compute",
       ".tolist() of four values for logging every iteration"),
    _P("probe-transfer-to-numpy", "probes:TransferToNumpy", {}, "data_transfer", "overhead",
       ".cpu().numpy() of four 32 MB activations every step"),
    _P("probe-transfer-unpinned-batches", "probes:TransferUnpinnedLoader", {}, "data_transfer", "overhead",
       "64 MB pageable batches copied to the device each step"),
    _P("probe-launch-lstm-cell", "probes:LaunchLSTMCell", {}, "launch_overhead", "overhead",
       "an LSTMCell stepped 64 times in Python at batch 4"),
    _P("probe-host-regex-tokenize", "probes:HostRegexTokenize", {}, "host_work", "overhead",
       "regex tokenisation of 2,000 sentences before each GPU phase"),
    _P("probe-sync-stream", "probes:SyncStream", {}, "synchronization", "compute",
       "torch.cuda.current_stream().synchronize() after each iteration"),
    _P("probe-sync-equal", "probes:SyncEqual", {}, "synchronization", "compute",
       "torch.equal(y, previous) as a convergence check each iteration"),
    _P("probe-transfer-from-numpy", "probes:TransferFromNumpy", {}, "data_transfer", "overhead",
       "torch.from_numpy(64 MB).cuda() each step"),
    _P("probe-transfer-many-small", "probes:TransferManySmall", {}, "data_transfer", "overhead",
       "200 torch.tensor(list, device=cuda) calls per step: 2,000 pageable 1 KB copies, each staged "
       "and synced"),
    # Prefill + decode (last: they compile, and take longest) of a 1.5B-parameter GPT with a static KV cache.
    _P("gpt-eager", "gpt:PrefillDecode", {"mode": "eager"}, "launch_overhead", "overhead",
       "prefill 2048 tokens then 32 eager decode steps: decode is launch-bound"),
    _P("gpt-compile", "gpt:PrefillDecode", {"mode": "compile"}, "launch_overhead", "overhead",
       "prefill eager, decode torch.compile'd without CUDA graphs: fewer kernels, still launch-bound "
       "on the H200 host (measured 3.4 ms/token against a ~0.6 ms weight-streaming floor)"),
    _P("gpt-graphs", "gpt:PrefillDecode", {"mode": "graphs"}, None, "memory",
       "decode compiled with CUDA graphs (reduce-overhead): one graph launch per token"),
]}


def get(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; choose one of: {', '.join(sorted(PRESETS))}") from None
