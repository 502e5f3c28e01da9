"""The drill bank: the TOML files in drills/bank/, one per rung of the course's ladder.

A file has a [defaults] table (kind, lesson, questions, rubric, decisive part, cap) and one
[[drill]] per variant: id, title, and the trace it shows, either a sample trace (`trace`, a path
from the repo root; `after` too for a before/after pair) or a toy timeline (`generate`: smell,
level, seed, mix), rebuilt from its seed whenever the drill is shown or graded (the generator is
deterministic, so the stored key stays right and no binary file is committed).

Each kind has fixed parts; their answer types are documented here and printed by `drill show`.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tracetriage.analyzers.loading.formats import SIDECAR_SUFFIX, trace_stem
from tracetriage.drills.ladder.parts import PARTS as LADDER_PARTS
from tracetriage.drills.ladder.parts import TRACE_ANSWERS as LADDER_TRACE_ANSWERS
from tracetriage.drills.tomlread import tomllib

BANK_DIR = Path(__file__).with_name("bank")
REPO_ROOT = Path(__file__).resolve().parent.parent
KEYS_PATH = BANK_DIR / "keys.toml"

TEXT, NAMES, NUMBER = "text", "names", "number"
# kind -> part -> (answer type, what the answer file holds)
PARTS = {
    "idle_cause": {
        "pattern": (TEXT, "free text: the idle pattern on the GPU lane"),
        "cause": (TEXT, "launch_overhead | host_work | synchronization | data_transfer, or free text"),
        "experiment": (TEXT, "free text: the first experiment"),
    },
    "triage": {
        "suspects": (NAMES, "an op name or a list of op names, e.g. [\"aten::mm\"]"),
        "bound": (TEXT, "an idle cause or a regime (compute | memory), or free text"),
        "evidence": (TEXT, "free text with a number from the trace"),
        "experiment": (TEXT, "free text: the next experiment"),
    },
    "ranges": {
        "ranges": (NAMES, "a list of range names, or a sentence"),
        "ttft_ms": (NUMBER, "a number of ms, or with its unit (\"17.6 ms\", \"17,600 µs\")"),
        "prefill_regime": (TEXT, "compute | memory | overhead, or free text"),
    },
    "incident": {
        "ttft_ms": (NUMBER, "ms: time to first token (median request); a number, or with its unit"),
        "per_token_ms": (NUMBER, "ms: per-token latency (median inter-token time); a number, or with its unit"),
        "phase": (TEXT, "prefill | decode: the phase that misses its target, or free text"),
        "refuse": (TEXT, "free text: the fix you refuse (it targets the other phase)"),
    },
    "roofline": {
        "regime": (TEXT, "compute | memory | overhead, or free text"),
        "achieved": (NUMBER, "TFLOP/s when compute-bound, GB/s otherwise; a number, or with its unit "
                             "(\"0.79 PFLOP/s\", \"4.2 TB/s\")"),
        "lever": (TEXT, "free text: the lever that helps"),
    },
    "waste": {
        "regime": (TEXT, "compute | memory | overhead, or free text: what bounds the trace"),
        "fix": (TEXT, "free text: the fix that buys most"),
        "waste": (TEXT, "free text: the tempting lever that would waste the week"),
    },
    "ledger": {
        "eager_bytes": (NUMBER, "bytes one call of the chain moves eagerly, with its unit (\"2.4 GB\", \"2,300 MiB\")"),
        "fused_bytes": (NUMBER, "bytes the same call moves fused into one kernel, with its unit"),
        "speedup": (NUMBER, "what fusing buys: the span before over the span after (1.7, \"1.7x\")"),
    },
    "shapes": {
        "tflops_small": (NUMBER, "TFLOP/s of the small shape; a number, or with its unit"),
        "tflops_large": (NUMBER, "TFLOP/s of the large shape; a number, or with its unit"),
        "small_regime": (TEXT, "compute | memory | overhead, or free text: what bounds the small shape"),
    },
    "floor": {
        "floor_ms": (NUMBER, "ms per token at the floor: the bytes each token reads over the HBM bandwidth"),
        "per_token_ms": (NUMBER, "ms per token measured (decode)"),
        "lever": (TEXT, "free text: the lever that closes the gap to the floor"),
    },
    "timer": {
        "median_ms": (NUMBER, "ms: the median of the repeats of the first variant"),
        "spread_pct": (NUMBER, "%: its spread, (max − min) / median"),
        "verdict": (TEXT, "real | noise: is the difference between the two variants outside their spreads?"),
    },
    "collapse": {
        "speedup": (NUMBER, "a number: before span / after span"),
        "explained_by": (TEXT, "launches | bytes, or free text"),
        "lever": (TEXT, "free text: what to reach for at this size"),
    },
    **LADDER_PARTS,   # the execution-model and byte rungs (tracetriage.drills.ladder)
}


# Drills whose questions are not about the trace's named ranges: their shown copy renames the capture's ranges
# (`host_phase` says host work, `tiny_ops` launch overhead); the ranges, shapes, floor and ledger drills keep them.
NEUTRAL_RANGE_KINDS = ("idle_cause", "triage", "waste", "roofline", "collapse")


class DrillError(Exception):
    """An unknown drill, or a broken bank file (one line for the user)."""


@dataclass(frozen=True)
class Drill:
    id: str
    title: str
    lesson: str
    kind: str
    questions: tuple[str, ...]
    rubric: dict                 # part -> weight (they sum to 1)
    decisive: str                # the part whose wrong answer caps the score
    cap_if_wrong: float
    trace: str | None = None     # a sample trace, from the repo root
    after: str | None = None     # the second trace of a before/after pair
    generate: dict | None = None # a toy timeline: smell, level, seed, mix
    strip_ranges: bool = False   # show the sample trace with its named ranges removed
                                 # (tracetriage.analyzers.output.strip_ranges)
    ticket: str | None = None    # an incident's ticket, as product wrote it
    slo: dict | None = None      # an incident's targets: {"ttft_ms", "per_token_ms"}
    shapes: tuple[str, ...] = ()  # a shapes drill's two named ranges: the small shape's, the large shape's
    scenario: str | None = None  # a timer drill's scenario in traces/realworld/measured.json
    variants: tuple[str, ...] = ()  # ... and its two variants
    params: dict | None = None   # a ladder drill's own settings (tracetriage.drills.ladder): the cards it places on

    @property
    def parts(self) -> dict:
        return PARTS[self.kind]

    def trace_path(self) -> Path:
        """A path a user can open: the sample trace, or the toy timeline written from its seed."""
        if self.generate is None and self.strip_ranges:
            from tracetriage.analyzers.output.strip_ranges import strip

            out = generated_dir() / f"{self.id}.json.gz"
            if not out.exists():
                from tracetriage.drills.ranges import unnamed

                out.parent.mkdir(parents=True, exist_ok=True)
                strip(REPO_ROOT / self.trace, out)
                unnamed(out, out)
            return out
        if self.generate is None:
            return shown_copy(REPO_ROOT / self.trace, f"{self.id}.json.gz", self.kind == "ledger",
                              self.kind in NEUTRAL_RANGE_KINDS)
        g = self.generate
        mix = tuple(sorted((g.get("mix") or {}).items()))
        out = generated_dir() / f"{self.id}.json.gz"
        return _toy(g["smell"], g.get("level", "easy"), int(g.get("seed", 0)), mix, str(out))

    def after_path(self) -> Path | None:
        return shown_copy(REPO_ROOT / self.after, f"{self.id}-after.json.gz", self.kind == "ledger",
                          self.kind in NEUTRAL_RANGE_KINDS) if self.after else None

    def source(self, reveal: bool = False) -> str:
        """Where the trace comes from, without the answer (a toy's smell, a sample's file name) until `reveal`:
        after grading. A sample that other drills show too keeps its name even then: its name (and the drills
        it serves) would answer them."""
        from tracetriage.drills.words import sample_source, shared_source, toy_source

        if self.generate is None:
            others = shared_with(self)
            if reveal and others:
                return shared_source(others)
            return sample_source(self.trace, self.after, self.strip_ranges, reveal)
        g = self.generate
        return toy_source(g["smell"], g.get("level", "easy"), g.get("seed", 0), g.get("mix") or {}, reveal)


def _toy(smell: str, level: str, seed: int, mix: tuple, out: str) -> Path:
    """A toy timeline written from its seed, once per process while the file stays (the same spec, the same bytes)."""
    path = Path(out)
    if path.exists() and (smell, level, seed, mix, out) in _WRITTEN:
        return path
    from tracetriage.drills.generator import Spec, write

    write(Spec(smell, level, seed, mix), path, neutral=True)   # no trace name or label block naming the smell
    _WRITTEN.add((smell, level, seed, mix, out))
    return path


_WRITTEN: set = set()


SHOWN = "shown-v3"   # a new folder when what a shown copy strips changes: no older copy is ever shown again


def shown_copy(src: Path, name: str, asks_bytes: bool = False, neutral_ranges: bool = False) -> Path:
    """The sample trace under a name that does not give the answer away (`smell-sync-item.json.gz` would), in a
    folder of its own with what lies beside it (its capture sidecar, the measured ceilings), so that it reads as
    the same trace: copies, made again when the sample or what lies beside it changes. `neutral_ranges`: the
    capture's own range names (`host_phase`, `tiny_ops`) renamed `range_1`, `range_2` ... (a drill that does not
    ask about ranges: the name would say the answer)."""
    if not src.exists():
        return src            # the analyzers say "no such trace", naming the bank's path
    folder = generated_dir() / SHOWN / (trace_stem(name) or name)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / name
    # the copy is of this source: a drill re-pointed to another sample (older than the copy) is copied again
    made_from = folder / ".source"
    source = f"{src.resolve()} {src.stat().st_size} {src.stat().st_mtime_ns}"
    if not made_from.exists() or made_from.read_text() != source:
        out.unlink(missing_ok=True)
    if _stale(src, out, same_size=False):
        from tracetriage.drills.ranges import rename_ranges, unnamed

        # never the file as captured: its traceName is the path it was exported to, which may name the answer;
        # rewritten once a sample and mode, copied for each drill that shows it (gpt-eager's rewrite takes ~4 s)
        renamed = generated_dir() / SHOWN / ".renamed" / f"{_digest(source, neutral_ranges)}-{src.name}"
        if not renamed.exists():
            renamed.parent.mkdir(parents=True, exist_ok=True)
            _place(lambda tmp: (rename_ranges if neutral_ranges else unnamed)(src, tmp), renamed)
        _place(lambda tmp: _copy(renamed, tmp), out)
        _place(lambda tmp: tmp.write_text(source), made_from)
    ceilings = src.parent / "ceilings.json"
    if ceilings.exists() and _stale(ceilings, folder / "ceilings.json"):
        _place(lambda tmp: _copy(ceilings, tmp), folder / "ceilings.json")
    meta = src.parent / ((trace_stem(src.name) or src.name) + SIDECAR_SUFFIX)
    shown_meta = folder / ((trace_stem(name) or name) + SIDECAR_SUFFIX)
    if meta.exists():
        # written whenever its text would differ (a copy made by an older version may hold the label)
        text = json.dumps(neutral_sidecar(json.loads(meta.read_text()), name, asks_bytes))
        if not shown_meta.exists() or shown_meta.read_text() != text:
            _place(lambda tmp: tmp.write_text(text), shown_meta)
    return out


# What a shown sidecar keeps: the device and versions the analyzers read, the capture's honest timer, and of the
# measurements what `drill show` prints anyway (a floor drill's weights and the model's shape: not the bytes each
# token reads, which would make the floor one division) and what `diff` reads (a call's
# declared bytes and kernels: the explanation of a speedup rests on them). The rest names the answer: the label
# (idle cause, regime, "DataLoader(num_workers=0)..."), the workload and its params, the matmul sweep's rates per
# shape. A byte-ledger drill, which asks for a call's bytes, is shown no declared bytes at all.
SIDECAR_KEEPS = ("device", "versions", "timing_per_step")
MEASUREMENTS_SHOWN = ("weight_bytes", "model")
MEASUREMENTS_READ = ("bytes_per_call", "kernels_per_call")     # tracetriage.analyzers.triage.diff


def neutral_sidecar(doc, name: str, asks_bytes: bool = False) -> dict:
    """The capture sidecar as a student may see it beside the shown trace: nothing in it names the answer."""
    if not isinstance(doc, dict):
        return {"trace": name}
    out = {"trace": name, **{k: doc[k] for k in SIDECAR_KEEPS if k in doc}}
    m = doc.get("measurements")
    if isinstance(m, dict):
        keep = MEASUREMENTS_SHOWN + (() if asks_bytes else MEASUREMENTS_READ)
        out["measurements"] = {k: m[k] for k in keep if k in m}
    return out


def _digest(source: str, neutral_ranges: bool) -> str:
    """A sample's rewrite's name: its path, size and mtime (`source`) and the mode, hashed."""
    return hashlib.sha256(f"{source} {neutral_ranges}".encode()).hexdigest()[:16]


def _stale(src: Path, out: Path, same_size: bool = True) -> bool:
    """The copy is missing, older than its source, or (a plain copy) not the source's size."""
    try:
        o, st = out.stat(), src.stat()
    except FileNotFoundError:
        return True
    return o.st_mtime < st.st_mtime or (same_size and o.st_size != st.st_size)


def _copy(src: Path, dst: Path) -> None:
    """A copy, not a link: a viewer that writes to the file it opened must not change the bank's trace
    (the largest sample is a few MB, copied once per change)."""
    shutil.copyfile(src, dst)


def _place(write, out: Path) -> None:
    """Write beside `out` and rename: another process showing the same drill sees the old file or the new, whole."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    write(tmp)
    os.replace(tmp, out)


def generated_dir() -> Path:
    base = os.environ.get("TRACETRIAGE_CACHE_DIR")
    if base:
        return Path(base) / "drills"
    import platformdirs

    return Path(platformdirs.user_cache_dir("tracetriage")) / "drills"


@lru_cache(maxsize=1)
def all_drills() -> tuple[Drill, ...]:
    out = []
    for f in sorted(BANK_DIR.glob("M*.toml")):
        with open(f, "rb") as fh:
            doc = tomllib.load(fh)
        d = doc.get("defaults", {})
        for item in doc.get("drill", []):
            merged = {**d, **item}
            kind = merged["kind"]
            if kind not in PARTS:
                raise DrillError(f"{f.name}: drill {merged.get('id')} has an unknown kind {kind!r}")
            rubric = dict(merged["rubric"])
            if set(rubric) != set(PARTS[kind]) or abs(sum(rubric.values()) - 1.0) > 1e-9:
                raise DrillError(f"{f.name}: drill {merged['id']}: the rubric must weigh {', '.join(PARTS[kind])} "
                                 "and sum to 1")
            out.append(Drill(id=merged["id"], title=merged["title"], lesson=merged["lesson"], kind=kind,
                             questions=tuple(merged["questions"]), rubric=rubric, decisive=merged["decisive"],
                             cap_if_wrong=float(merged["cap_if_wrong"]), trace=merged.get("trace"),
                             after=merged.get("after"), generate=merged.get("generate"),
                             strip_ranges=bool(merged.get("strip_ranges", False)), ticket=merged.get("ticket"),
                             slo=merged.get("slo"), shapes=tuple(merged.get("shapes", ())),
                             scenario=merged.get("scenario"), variants=tuple(merged.get("variants", ())),
                             params=merged.get("params")))
    ids = [d.id for d in out]
    if len(set(ids)) != len(ids):
        raise DrillError("drill ids repeat in drills/bank")
    return tuple(sorted(out, key=lambda d: d.id))


def shared_with(drill: Drill) -> tuple[str, ...]:
    """The other drills that show one of this drill's sample traces (their answers may lie in it)."""
    mine = {t for t in (drill.trace, drill.after) if t and drill.generate is None}
    return tuple(d.id for d in all_drills() if d.id != drill.id and d.generate is None
                 and mine & {t for t in (d.trace, d.after) if t})


# What a drill's key says about the traces it shows, by the kind of answer: once a drill is graded its key is
# known, so no other drill may show the same trace and ask an answer of the same kind (issue 34). A regime, an
# idle cause and a lever are about the whole trace; a fusion's bytes (the ledger's, or "bytes or launches") about
# the pair's before; a speedup about the pair; a shape's rate and regime about its range only.
TRACE_ANSWERS = {
    "idle_cause": ("cause", "lever"),
    "triage": ("hot_ops", "cause", "regime", "lever"),   # bound: an idle cause, else the regime
    "ranges": ("ttft", "prefill_regime"),
    "incident": ("ttft", "per_token", "phase"),
    "roofline": ("regime", "rate", "lever"),
    "waste": ("regime", "lever"),
    "floor": ("floor", "per_token", "decode_regime", "lever"),
    "ledger": ("fusion_bytes",),
    "collapse": ("fusion_bytes", "lever"),
    "shapes": (),
    "timer": (),
    **LADDER_TRACE_ANSWERS,   # the ladder's kinds (tracetriage.drills.ladder.parts)
}


def answers_about(drill: Drill) -> set[tuple]:
    """(what, the trace or traces it is about) for every answer the drill's key gives away once graded."""
    out = {(what, drill.trace) for what in TRACE_ANSWERS[drill.kind]} if drill.trace and not drill.generate else set()
    if drill.after:
        out.add(("speedup", frozenset((drill.trace, drill.after))))
    if drill.kind == "shapes":
        out |= {(f"{what} of {shape}", drill.trace) for shape in drill.shapes for what in ("rate", "regime")}
    if drill.kind == "timer":
        pair = [f"traces/realworld/{drill.scenario}--{v}.json.gz" for v in drill.variants]
        out |= {("speedup", frozenset(pair)), ("wall", pair[0])}
    return out


def answered_elsewhere(drill: Drill) -> dict[str, set]:
    """The other drills whose key answers a question of this one about a trace they share: {drill id: answers}."""
    mine = answers_about(drill)
    out = {}
    for other in all_drills():
        common = mine & answers_about(other) if other.id != drill.id else set()
        if common:
            out[other.id] = common
    return out


def get(drill_id: str) -> Drill:
    for d in all_drills():
        if d.id.lower() == drill_id.lower():
            return d
    known = ", ".join(d.id for d in all_drills())
    raise DrillError(f"no drill {drill_id!r}; the drills are: {known}")


@lru_cache(maxsize=1)
def stored_keys() -> dict:
    """The answer keys, derived from the analyzers by `python -m tracetriage.drills.keys` and stored in
    bank/keys.toml."""
    if not KEYS_PATH.exists():
        return {}
    with open(KEYS_PATH, "rb") as fh:
        return tomllib.load(fh)


def key_of(drill: Drill) -> dict:
    k = stored_keys().get(drill.id)
    if k is None:
        raise DrillError(f"drill {drill.id} has no stored key; run python -m tracetriage.drills.keys")
    return k
