"""Toy timelines: seeded Kineto traces that show one idle smell, or a mix of smells at chosen shares.

    doc = generate(Spec("synchronization", level="medium", seed=7))
    write(Spec("launch_overhead", seed=3), "toy.json.gz")

The trace is what torch.profiler exports (torch 2.x, Kineto Chrome-trace JSON): cpu_ops with an
External id, launch calls (cuda_runtime) inside them with a correlation id, kernels and copies on
streams with the same correlation, ac2g flow pairs, cuda_sync events, deviceProperties,
user_annotation ranges and their gpu_user_annotation projections. A small simulator keeps one clock
for the issuing host thread and one per stream, so every GPU activity starts no earlier than its
launch call plus the device's launch latency and no earlier than its stream is free; syncs and
blocking copies hold the host until the device has drained.

Smells (each an iteration pattern, repeated):
  launch_overhead  tiny elementwise ops whose kernels run shorter than their launch calls
  host_work        a few queued matmuls, then milliseconds of untraced Python per iteration
  synchronization  ~0.5 ms of queued matmuls, then `.item()`: the host waits for the drain
  data_transfer    a 16-64 MB pageable host->device copy (`.to("cuda")`), then a little compute
  compute          the healthy control: long matmuls queued back to back, the host far ahead

A mix gives each smell a share of the intended idle time; the label is the smell with the largest
share. Levels add noise: jittered durations, unrelated host threads (a data loader, a logger), and
profiler edges (a kernel already in flight when the profiler started, the closing synchronize).
The same Spec always gives the same bytes.
"""
from __future__ import annotations

import gzip
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

SMELLS = ("launch_overhead", "host_work", "synchronization", "data_transfer")
CONTROL = "compute"
LABELS = SMELLS + (CONTROL,)
LEVELS = ("easy", "medium", "hard")

ORIGIN_NS = 5_120_206_968_000_000      # torch 2.11 on an H200 wrote µs near 5e12
PID, TID = 608, 608
STREAM = 7
DEVICE_LATENCY_NS = 4_000              # launch call start -> earliest kernel start


@dataclass(frozen=True)
class Level:
    jitter: float            # relative spread of every duration (lognormal sigma)
    noise_threads: int       # unrelated host threads that issue no GPU work
    edges: bool              # profiler start/stop edges
    iterations: int


LEVEL = {
    "easy": Level(jitter=0.03, noise_threads=0, edges=False, iterations=24),
    "medium": Level(jitter=0.15, noise_threads=1, edges=True, iterations=32),
    "hard": Level(jitter=0.35, noise_threads=2, edges=True, iterations=40),
}

@dataclass(frozen=True)
class Spec:
    """What to generate. `mix` maps smells to shares of the idle time (they need not sum to 1);
    without it, `smell` alone. The label is the smell with the largest share."""
    smell: str = "launch_overhead"
    level: str = "easy"
    seed: int = 0
    mix: tuple[tuple[str, float], ...] = ()
    flows: bool = True           # ac2g flow events (torch.profiler writes them; some exporters drop them)
    sync_events: bool = True     # cuda_sync events (only with _ExperimentalConfig(enable_cuda_sync_events=True))

    def __post_init__(self):
        if self.smell not in LABELS:
            raise ValueError(f"unknown smell {self.smell!r}; one of {', '.join(LABELS)}")
        if self.level not in LEVELS:
            raise ValueError(f"unknown level {self.level!r}; one of {', '.join(LEVELS)}")
        for s, share in self.mix:
            if s not in SMELLS or share < 0:
                raise ValueError(f"bad mix entry {s}={share}")

    @property
    def shares(self) -> dict[str, float]:
        return dict(self.mix) if self.mix else {self.smell: 1.0}

    @property
    def label(self) -> str:
        sh = self.shares
        return max(sh, key=sh.get)


@dataclass
class _Sim:
    rng: random.Random
    jitter: float
    host: int = 0                                   # the issuing thread's clock, ns
    stream_free: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    ext: int = 1
    corr: int = 10_000
    # Idle accounting, so that a mix gets the shares it asks for: every stretch with no kernel is
    # credited to the smell that caused it (the taxonomy of docs/design.md, applied as the timeline is made).
    smell: str = CONTROL                            # the iteration being generated
    pending: str | None = None                      # a stall at an iteration's tail, paid by the next gap
    recovery_ns: int = 0                            # launch gaps after a sync are the sync's, up to the lost lead
    idle_by_smell: dict = field(default_factory=dict)

    def credit(self, start: int, end: int, owner: str | None = None, call_start: int | None = None) -> None:
        """Charge the stretch [start, end) with no kernel to the smell that caused it."""
        gap = end - start
        if gap <= 0:
            return
        owner = owner or self.pending or self.smell
        self.pending = None
        if owner == "launch_overhead" and self.recovery_ns > 0:
            # After a drain the host catches up: its launch gaps are the sync's cost, up to the lead it
            # lost. Like the analyzers, only the stretch before the launch call counts as catching up;
            # the call itself in flight is launch overhead.
            before_call = max(0, min(end, call_start if call_start is not None else end) - start)
            if before_call <= self.recovery_ns:
                self.recovery_ns -= before_call
                self._add("synchronization", before_call)
                gap -= before_call
            else:
                self.recovery_ns = 0
        elif owner != "synchronization":
            self.recovery_ns = 0
        self._add(owner, gap)

    def _add(self, smell: str, ns: int) -> None:
        if ns > 0:
            self.idle_by_smell[smell] = self.idle_by_smell.get(smell, 0) + ns

    # --- durations -------------------------------------------------------------------------
    def d(self, ns: float) -> int:
        """A duration with the level's jitter (lognormal, median ns)."""
        if self.jitter:
            ns *= self.rng.lognormvariate(0.0, self.jitter)
        return max(200, int(ns))

    # --- raw events --------------------------------------------------------------------------
    def x(self, cat: str, name: str, start: int, dur: int, args: dict, pid=PID, tid=TID) -> dict:
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": _us(start), "dur": round(dur / 1e3, 3),
             "args": args}
        self.events.append(e)
        return e

    def _ids(self) -> tuple[int, int]:
        self.ext += 1
        self.corr += 1
        return self.ext, self.corr

    # --- host side -----------------------------------------------------------------------------
    def op(self, name: str, dims=None, types=None, pre_ns: float = 2_000):
        """Open a cpu_op at the host clock; returns a closer that ends it at the clock."""
        ext, _ = self._ids()
        self.host += self.d(1_200)       # the Python between two ops
        start = self.host
        args = {"External id": ext, "Record function id": 0}
        if dims is not None:
            args.update({"Input Dims": dims, "Input type": types})
        self.host += self.d(pre_ns)
        ev = self.x("cpu_op", name, start, 0, args)

        def close(post_ns: float = 1_000):
            self.host += self.d(post_ns)
            ev["dur"] = round((self.host - start) / 1e3, 3)
        return ext, close

    def gpu(self, cat: str, name: str, ext: int, call: str, call_ns: float, dur_ns: float, *,
            extra: dict | None = None, block_until_done: bool = False, stream: int = STREAM) -> tuple[int, int]:
        """A launch call at the host clock and the GPU activity it issues. Returns (gpu start, gpu end)."""
        _, corr = self._ids()
        call_s = self.host
        g_s = max(call_s + DEVICE_LATENCY_NS, self.stream_free.get(stream, 0))
        g_e = g_s + self.d(dur_ns)
        prev = self.stream_free.get(stream)
        self.stream_free[stream] = g_e
        if prev is not None:                 # one stream: the device was empty from prev to g_s
            self.credit(prev, g_s, call_start=call_s)
        if cat != "kernel":                  # compute idles while a copy runs
            self.credit(g_s, g_e, "data_transfer")
        call_e = call_s + self.d(call_ns)
        if block_until_done:
            call_e = max(call_e, g_e + self.d(3_000))
        self.x("cuda_runtime", call, call_s, call_e - call_s, {"External id": ext, "cbid": 211, "correlation": corr})
        args = {"External id": ext, "device": 0, "context": 1, "stream": stream, "correlation": corr}
        if cat == "kernel":
            args.update({"queued": 0, "registers per thread": 32, "shared memory": 0, "grid": [128, 1, 1],
                         "block": [256, 1, 1]})
        args.update(extra or {})
        self.x(cat, name, g_s, g_e - g_s, args, pid=0, tid=stream)
        self.events.append({"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": _us(call_s), "cat": "ac2g",
                            "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": _us(g_s), "cat": "ac2g",
                            "name": "ac2g", "bp": "e"})
        self.host = call_e
        return g_s, g_e

    def stream_sync(self, ext: int, call: str = "cudaStreamSynchronize", stream: int = STREAM) -> None:
        """The host waits in the call until the stream drains; Kineto adds a cuda_sync event."""
        _, corr = self._ids()
        s = self.host
        drained = self.stream_free.get(stream, 0)
        e = max(s + self.d(3_000), drained + self.d(25_000))   # the wake-up after the drain
        self.x("cuda_runtime", call, s, e - s, {"External id": ext, "cbid": 131, "correlation": corr})
        if self.smell == "synchronization":
            self.pending = "synchronization"
            self.recovery_ns = max(0, drained - s)   # the host's lead, lost while it waited
        self.x("cuda_sync", "Stream Sync", max(s, drained - 1_000), e - max(s, drained - 1_000),
               {"External id": ext, "cuda_sync_kind": "Stream Sync", "stream": stream, "correlation": corr,
                "device": 0, "context": 1}, pid=0, tid=stream)
        self.host = e

    def annotate(self, name: str, start: int, end: int, gpu: tuple[int, int] | None) -> None:
        ext, _ = self._ids()
        self.x("user_annotation", name, start, end - start, {"External id": ext, "Record function id": 0})
        if gpu:
            self.x("gpu_user_annotation", name, gpu[0], gpu[1] - gpu[0], {"External id": ext}, pid=0, tid=STREAM)


# --- the smells, one iteration each ------------------------------------------------------------

MATMUL_KERNEL = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
BF16 = ["c10::BFloat16", "c10::BFloat16"]


def _matmul(sim: _Sim, n: int = 4096) -> tuple[int, int]:
    """aten::mm of two n x n bf16 matrices: 2n^3 FLOPs at ~800 TFLOP/s on an H200."""
    ext, close = sim.op("aten::mm", [[n, n], [n, n]], BF16, pre_ns=6_000)
    span = sim.gpu("kernel", MATMUL_KERNEL, ext, "cudaLaunchKernel", 5_000, 2 * n ** 3 / 800e12 * 1e9)
    close(2_000)
    return span


def _elementwise(sim: _Sim, name: str, kernel: str) -> tuple[int, int]:
    ext, close = sim.op(name, [[1024], []], ["float", "double"], pre_ns=3_000)
    span = sim.gpu("kernel", kernel, ext, "cudaLaunchKernel", 4_500, 1_000)
    close(1_500)
    return span


TINY = [("aten::mul", "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
                      "float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >"),
        ("aten::add", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, "
                      "std::array<char*, 2ul> >"),
        ("aten::relu", "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
                       "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
                       "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() "
                       "const::{lambda(float)#1}, std::array<char*, 2ul> >")]


def iter_launch_overhead(sim: _Sim) -> list[tuple[int, int]]:
    return [_elementwise(sim, *TINY[i % 3]) for i in range(48)]


def iter_host_work(sim: _Sim) -> list[tuple[int, int]]:
    spans = [_matmul(sim) for _ in range(2)]
    sim.host += sim.d(1_800_000)      # untraced Python: tokenising, building a batch, logging
    sim.pending = "host_work"         # the next launch, whatever it is, ends this gap
    return spans


def iter_synchronization(sim: _Sim) -> list[tuple[int, int]]:
    spans = [_matmul(sim) for _ in range(2)]
    ext, close = sim.op("aten::sum", [[4096, 4096]], ["c10::BFloat16"], pre_ns=4_000)
    spans.append(sim.gpu("kernel", "void at::native::reduce_kernel<512, 1>", ext, "cudaLaunchKernel", 5_000, 15_000))
    close()
    item_ext, close_item = sim.op("aten::item", pre_ns=2_000)
    inner_ext, close_inner = sim.op("aten::_local_scalar_dense", pre_ns=2_000)
    spans.append(sim.gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", inner_ext, "cudaMemcpyAsync", 8_000, 2_500,
                         extra={"bytes": 2, "memory bandwidth (GB/s)": 0.0007}))
    sim.stream_sync(inner_ext)
    close_inner(1_000)
    close_item(1_000)
    sim.host += sim.d(8_000)          # the Python that reads the value and decides
    return spans


def iter_data_transfer(sim: _Sim) -> list[tuple[int, int]]:
    nbytes = sim.rng.choice([4, 8, 16]) << 20
    gbps = sim.rng.uniform(5.0, 12.0)            # pageable staging: a fraction of the pinned 55 GB/s
    ext, close = sim.op("aten::to", pre_ns=3_000)
    ext2, close2 = sim.op("aten::_to_copy", pre_ns=2_000)
    ext3, close3 = sim.op("aten::copy_", [[nbytes // 4], [nbytes // 4]], ["float", "float"], pre_ns=4_000)
    span = sim.gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", ext3, "cudaMemcpyAsync", 20_000,
                   nbytes / gbps, extra={"bytes": nbytes, "memory bandwidth (GB/s)": round(gbps, 3)},
                   block_until_done=True)
    sim.stream_sync(ext3)
    close3()
    close2()
    close()
    spans = [span]
    for _ in range(2):
        ext, close = sim.op("aten::mm", [[2048, 2048], [2048, 2048]], ["float", "float"], pre_ns=6_000)
        spans.append(sim.gpu("kernel", "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8_stage3_warpsize2x2x1_"
                                       "ffma_aligna4_alignc4_execute_kernel__5x_cublas",
                             ext, "cudaLaunchKernel", 5_000, 330_000))
        close()
    return spans


def iter_compute(sim: _Sim) -> list[tuple[int, int]]:
    return [_matmul(sim, 8192) for _ in range(4)]


ITERATIONS = {"launch_overhead": iter_launch_overhead, "host_work": iter_host_work,
              "synchronization": iter_synchronization, "data_transfer": iter_data_transfer, CONTROL: iter_compute}
RANGE_NAMES = {"launch_overhead": "tiny_ops", "host_work": "host_phase", "synchronization": "iteration",
               "data_transfer": "batch", CONTROL: "matmuls"}


# Iterations of the labelled smell per level's unit: a sync iteration idles ~50 µs, a copy ~1 ms.
ITER_SCALE = {"launch_overhead": 1, "host_work": 1, "synchronization": 3, "data_transfer": 1, CONTROL: 1}
MAX_ITERATIONS = 400
LEAD = 1.25


def _run(sim: _Sim, spec: Spec, lv: Level) -> None:
    """Generate iterations: the label's smell n times, and the mix's other smells interleaved at random
    whenever they are behind their share of the idle time so far (by at least half an iteration's worth)."""
    main = spec.label
    n_main = (lv.iterations + sim.rng.randrange(0, 9)) * ITER_SCALE[main]
    others = {s: sh / spec.shares[main] for s, sh in spec.shares.items() if s != main and sh > 0}
    per_iter: dict[str, list[int]] = {}

    def behind() -> list[str]:
        idle_main = sim.idle_by_smell.get(main, 0)
        out = []
        for s, ratio in others.items():
            seen = per_iter.get(s)
            step = sum(seen) / len(seen) if seen else 0
            if idle_main * ratio - sim.idle_by_smell.get(s, 0) >= step / 2:
                out.append(s)
        return out

    done = 0
    for _ in range(MAX_ITERATIONS):
        cands = behind()
        if done >= n_main and not cands:
            break
        smell = sim.rng.choice(cands) if cands and (done >= n_main or sim.rng.random() < 0.5) else main
        if smell == main and done >= n_main:
            break
        before = dict(sim.idle_by_smell)
        _iteration(sim, smell)
        per_iter.setdefault(smell, []).append(sum(sim.idle_by_smell.values()) - sum(before.values()))
        done += smell == main
    # Coarse iterations (1.5 ms of host work against 50 µs drains) can overshoot a share: the label
    # must stay true, so the labelled smell keeps a clear lead (LEAD x any other smell's idle time).
    for _ in range(MAX_ITERATIONS):
        rest = max((v for k, v in sim.idle_by_smell.items() if k != main), default=0)
        if sim.idle_by_smell.get(main, 0) >= LEAD * rest:
            break
        _iteration(sim, main)


def _iteration(sim: _Sim, smell: str) -> None:
    sim.smell = smell
    start = sim.host
    spans = ITERATIONS[smell](sim)
    sim.annotate(RANGE_NAMES[smell], start, sim.host, (spans[0][0], spans[-1][1]))


def generate(spec: Spec, neutral: bool = False) -> dict:
    """The Kineto document for spec (a dict ready for json.dumps)."""
    lv = LEVEL[spec.level]
    rng = random.Random(f"{spec.smell}/{spec.level}/{spec.seed}/{spec.mix}")   # flows/sync events: same timeline
    sim = _Sim(rng=rng, jitter=lv.jitter, host=50_000)
    profiler_start = 0
    if lv.edges:
        # A kernel already in flight when the profiler started: its launch call is not in the trace.
        _, corr = sim._ids()
        sim.x("kernel", MATMUL_KERNEL, 30_000, 150_000, {"device": 0, "context": 1, "stream": STREAM,
                                                            "correlation": corr, "External id": 0}, pid=0, tid=STREAM)
        sim.stream_free[STREAM] = 180_000
    _run(sim, spec, lv)
    end_host = sim.host
    # The closing torch.cuda.synchronize() that every capture ends with.
    ext, corr = sim._ids()
    drained = max(sim.stream_free.values())
    e = max(sim.host + 3_000, drained + 5_000)
    sim.x("cuda_runtime", "cudaDeviceSynchronize", sim.host, e - sim.host, {"External id": ext, "cbid": 165,
                                                                            "correlation": corr})
    sim.x("cuda_sync", "Context Sync", drained - 1_000, e - drained + 1_000,
          {"External id": ext, "cuda_sync_kind": "Context Sync", "stream": -1, "correlation": corr, "device": 0,
           "context": 1}, pid=0, tid=1)
    sim.host = e
    if lv.edges:
        # The profiler stopped while a launch was in flight: the call is in the trace, its kernel is not.
        ext, corr = sim._ids()
        sim.x("cpu_op", "aten::add", sim.host + 2_000, 12_000, {"External id": ext, "Record function id": 0})
        sim.x("cuda_runtime", "cudaLaunchKernel", sim.host + 5_000, 6_000,
              {"External id": ext, "cbid": 211, "correlation": corr})
        sim.host += 14_000
    for k in range(lv.noise_threads):
        _noise_thread(sim, 700 + k, 60_000, end_host)
    sim.x("Trace", "PyTorch Profiler (0)", profiler_start, sim.host + 10_000, {"Op count": 0},
          pid="Spans", tid="PyTorch Profiler")
    events = [e for e in sim.events if (spec.flows or e.get("cat") != "ac2g")
              and (spec.sync_events or e.get("cat") != "cuda_sync")]
    return _document(events, spec, sim.idle_by_smell, neutral)


def _noise_thread(sim: _Sim, tid: int, t0: int, t1: int) -> None:
    """A thread that works on the host only (a data loader's pin thread, a logger): never issues GPU work."""
    t = t0 + sim.rng.randrange(0, 50_000)
    names = ["aten::empty", "aten::copy_", "aten::cat", "aten::stack"]
    while t < t1:
        dur = sim.d(sim.rng.choice([20_000, 80_000, 300_000]))
        ext, _ = sim._ids()
        sim.x("cpu_op", sim.rng.choice(names), t, dur, {"External id": ext, "Record function id": 0}, tid=tid)
        t += dur + sim.d(sim.rng.choice([200_000, 700_000]))


def _us(ns: int) -> float:
    return round((ORIGIN_NS + ns) / 1e3, 3)


def _document(events: list[dict], spec: Spec, idle_by_smell: dict, neutral: bool = False) -> dict:
    meta = [{"name": "process_name", "ph": "M", "ts": _us(0), "pid": PID, "tid": 0, "args": {"name": "python3"}},
            {"name": "process_name", "ph": "M", "ts": _us(0), "pid": 0, "tid": 0, "args": {"name": "python3"}},
            {"name": "process_labels", "ph": "M", "ts": _us(0), "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
            {"name": "thread_name", "ph": "M", "ts": _us(0), "pid": 0, "tid": STREAM,
             "args": {"name": f"stream {STREAM}"}}]
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320, "computeMajor": 9,
                                  "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
                                  "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132}],
            "record_shapes": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": 1790857026000000000,
            **({} if neutral else _label_block(spec, idle_by_smell)),
            "traceEvents": meta + sorted(events, key=lambda e: (e["ts"], -(e.get("dur") or 0)))}


def _label_block(spec: Spec, idle_by_smell: dict) -> dict:
    """The trace's name and the generator's label: for a toy written to test the analyzers, never for a drill's
    (a student opening it in Perfetto would read the answer)."""
    return {"traceName": f"toy-{spec.label}-{spec.level}-{spec.seed}",
            "tracetriage_generator": {"smell": spec.smell, "level": spec.level, "seed": spec.seed,
                                      "mix": dict(spec.mix), "label": spec.label,
                                      "intended_idle_us": {k: round(v / 1e3, 1)
                                                           for k, v in sorted(idle_by_smell.items())}}}


def write(spec: Spec, path: str | Path, neutral: bool = False) -> Path:
    """Write the trace as torch does, gzipped when the name ends with .gz; the same spec, the same bytes.
    `neutral`: without the trace name and label block (a drill's toy: nothing in the file names its smell)."""
    path = Path(path)
    data = json.dumps(generate(spec, neutral), separators=(",", ":")).encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.read_bytes() == data:
            return path          # the same bytes: leave its mtime alone, so what was analysed of it stays valid
    except OSError:
        pass
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    """python -m tracetriage.drills.generator SMELL [--level L] [--seed N] [--mix a=0.7,b=0.3] -o OUT.json.gz"""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m tracetriage.drills.generator", description="Write a toy Kineto trace.")
    ap.add_argument("smell", choices=LABELS)
    ap.add_argument("--level", choices=LEVELS, default="easy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mix", default="", help="shares of idle time, e.g. synchronization=0.7,launch_overhead=0.3")
    ap.add_argument("--no-flows", action="store_true")
    ap.add_argument("--no-sync-events", action="store_true")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args(argv)
    try:
        mix = tuple((k, float(v)) for k, v in (kv.split("=", 1) for kv in a.mix.split(",") if kv))
        spec = Spec(a.smell, a.level, a.seed, mix, flows=not a.no_flows, sync_events=not a.no_sync_events)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    path = write(spec, a.out)
    print(f"wrote {path}: {spec.label}, {spec.level}, seed {spec.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
