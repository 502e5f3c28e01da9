"""Grading an answer file against a drill's stored key, part by part, with feedback from the trace.

    result = grade(bank.get("M02.04-c"), {"cause": "synchronization", ...})
    result.score     # 0..1: the weighted parts, capped when the decisive part is wrong

Each part scores 0..1: an enum or a phrase of the key's class (drills/vocab.toml) scores 1, a hedge
between classes 0.5, a number within 15% of the key 1 and within 2x 0.5, a list of names the share
of the key's names it holds. A blank part scores 0. The feedback of every part quotes the evidence
the analyzers found in the trace (drills.evidence; its sentences are analyzers.voice).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from analyzers.model import verdicts
from analyzers.voice import drills as words
from drills import evidence
from drills.bank import Drill, key_of
from drills.textmatch import class_score, normalise

CLOSE, NEAR = 0.15, 2.0   # a number within 15% scores 1, within 2x scores 0.5
CAUSES = tuple(c.value for c in verdicts.CAUSES if c is not verdicts.Cause.OTHER)   # the four a student names
REGIMES = ("compute", "memory", "overhead")


@dataclass
class Part:
    part: str
    weight: float
    score: float
    answer: object
    expected: object
    feedback: str

    def to_dict(self) -> dict:
        return {"part": self.part, "weight": self.weight, "score": round(self.score, 3), "answer": self.answer,
                "expected": self.expected, "feedback": self.feedback}


@dataclass
class Result:
    drill: str
    score: float
    parts: list[Part]
    capped: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"drill": self.drill, "score": round(self.score, 3), "capped": self.capped,
                "parts": [p.to_dict() for p in self.parts], "notes": self.notes}


def grade(drill: Drill, answers: dict) -> Result:
    key = key_of(drill)
    ctx = _Context(drill, key)
    parts = []
    for name, weight in drill.rubric.items():
        ans = answers.get(name)
        if _blank(ans):
            parts.append(Part(name, weight, 0.0, None, ctx.expected(name), words.blank(name)))
            continue
        score, fb = getattr(ctx, f"{drill.kind}_{name}")(ans)
        parts.append(Part(name, weight, score, ans, ctx.expected(name), fb))
    total = sum(p.weight * p.score for p in parts)
    decisive = next(p for p in parts if p.part == drill.decisive)
    capped = decisive.score == 0 and total > drill.cap_if_wrong
    notes = [words.capped(drill.decisive, drill.cap_if_wrong)] if capped else []
    return Result(drill.id, min(total, drill.cap_if_wrong) if capped else total, parts, capped, notes)


def _blank(ans) -> bool:
    if ans is None:
        return True
    if isinstance(ans, str):
        return not ans.strip()
    if isinstance(ans, list):
        return not any(str(a).strip() for a in ans)
    return False


def _text(ans) -> str:
    return " ".join(ans) if isinstance(ans, list) else str(ans)


def score_number(said: float, key: float) -> float:
    if key in (None, 0) or said <= 0:
        return 0.0
    r = said / key
    if abs(r - 1) <= CLOSE:
        return 1.0
    return 0.5 if 1 / NEAR <= r <= NEAR else 0.0


def score_class(ans, key: str, group: str, field: str, enums: tuple[str, ...]) -> tuple[float, set]:
    """An enum value scores exactly; free text goes through the vocabulary."""
    text = _text(ans).strip()
    if text.lower() in enums:
        return (1.0 if text.lower() == key else 0.0), {text.lower()}
    return class_score(text, key, group, field)


class _Context:
    """The drill, its stored key, and the trace's facts (read once, when feedback needs them)."""

    def __init__(self, drill: Drill, key: dict):
        self.drill, self.key = drill, key
        self._facts = self._diff = None

    @property
    def facts(self) -> evidence.Facts:
        if self._facts is None:
            self._facts = evidence.facts(self.drill.trace_path())
        return self._facts

    @property
    def diff(self) -> evidence.DiffFacts:
        if self._diff is None:
            self._diff = evidence.diff_facts(self.drill.trace_path(), self.drill.after_path())
        return self._diff

    def expected(self, part: str):
        k = self.key
        return {"pattern": words.PATTERN.get(k.get("cause"), None), "cause": k.get("cause"),
                "experiment": words.EXPERIMENT.get(k.get("cause") or k.get("bound"), None),
                "suspects": k.get("suspects"), "bound": k.get("bound"), "evidence": k.get("numbers"),
                "ranges": [k.get("prefill_range"), k.get("decode_range")] if "prefill_range" in k else None,
                "ttft_ms": k.get("ttft_ms"), "per_token_ms": k.get("per_token_ms"),
                "decode_regime": k.get("decode_regime"), "regime": k.get("regime"), "achieved": k.get("achieved"),
                "lever": words.EXPERIMENT.get(self._lever_class()), "speedup": k.get("speedup"),
                "explained_by": k.get("explained_by"), "phase": k.get("phase"),
                "refuse": words.PHASE_FIXES.get(k.get("refuse"))}.get(part)

    def _cause_evidence(self, cause: str) -> str:
        f = self.facts
        return words.evidence(cause, f.cause_evidence[cause], f.cause_share[cause])

    # --- idle cause (M02.03, M02.04) -----------------------------------------------------------
    def idle_cause_cause(self, ans):
        cause = self.key["cause"]
        s, said = score_class(ans, cause, "cause", "name", CAUSES)
        ev = self._cause_evidence(cause)
        if s == 1.0:
            return s, words.cause_right(cause, ev)
        if s > 0:
            return s, words.hedge(words.CAUSE[cause], said - {cause})
        return 0.0, words.cause_wrong(said, cause, ev)

    def idle_cause_pattern(self, ans):
        cause = self.key["cause"]
        s, said = class_score(_text(ans), cause, "cause", "pattern")
        if s == 1.0:
            return s, words.pattern_right(cause)
        if s > 0:
            return s, words.hedge("the right pattern", said - {cause})
        return 0.0, words.pattern_wrong(cause, words.evidence_short(cause, self.facts.cause_evidence[cause]))

    def idle_cause_experiment(self, ans):
        cause = self.key["cause"]
        return self._experiment(ans, cause, "cause", "experiment")

    def _experiment(self, ans, cls, group, field):
        s, said = class_score(_text(ans), cls, group, field)
        if s == 1.0:
            return s, words.experiment_right(cls)
        if s > 0:
            return s, words.hedge("a right lever", said - {cls})
        return 0.0, words.experiment_wrong(cls)

    # --- triage (M02.01) --------------------------------------------------------------------------
    def triage_suspects(self, ans):
        names = [normalise(a) for a in (ans if isinstance(ans, list) else [ans])]
        text = " ".join(names)
        found, missed = [], []
        for s in self.key["suspects"]:
            short = s.split("::")[-1]
            hit = normalise(s).strip() in text or re.search(rf"(?<![a-z0-9_]){re.escape(short.lower())}(?![a-z0-9_])",
                                                            text)
            (found if hit else missed).append(s)
        score = len(found) / len(self.key["suspects"])
        return score, words.suspects_feedback(found, missed, words.hotspot_table(self.facts.hotspots))

    def _bound_group(self) -> tuple[str, tuple]:
        return ("cause", CAUSES) if self.key["bound"] in CAUSES else ("regime", REGIMES)

    def _bound_why(self) -> str:
        b = self.key["bound"]
        if b in CAUSES:
            return self._cause_evidence(b)
        f = self.facts
        return words.regime_why(b, f.compute_share, f.memory_share, f.idle_share, f.achieved_tflops,
                                f.achieved_gbps, f.intensity, f.ridge, f.dtype)

    def triage_bound(self, ans):
        b = self.key["bound"]
        group, enums = self._bound_group()
        s, said = score_class(ans, b, group, "name", CAUSES + REGIMES)
        if s == 1.0:
            return s, words.bound_right(b, self._bound_why())
        if s > 0:
            return s, words.hedge(b, said - {b})
        return 0.0, words.bound_wrong(said, b, self._bound_why())

    def triage_evidence(self, ans):
        text = _text(ans)
        said = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", text)]
        hit = sorted({k for k in self.key["numbers"] for x in said if k and abs(x / k - 1) <= CLOSE})
        group, _ = self._bound_group()
        named = class_score(text, self.key["bound"], group, "name")[0] > 0
        score = (0.6 if hit else 0.0) + (0.4 if named else 0.0)
        if not hit:
            return score, words.evidence_missing(self.key["numbers"])
        return score, words.evidence_score(hit, named)

    def triage_experiment(self, ans):
        b = self.key["bound"]
        group, _ = self._bound_group()
        return self._experiment(ans, b, group, "experiment" if group == "cause" else "lever")

    # --- named ranges (M02.02) ------------------------------------------------------------------
    def ranges_ranges(self, ans):
        text = _text(ans)
        names = (self.key["prefill_range"], self.key["decode_range"])
        found, missed = [], []
        for cls, name in zip(("prefill", "decode"), names):
            ok = class_score(text, cls, "ranges", "name")[0] > 0 or normalise(name).strip() in normalise(text)
            (found if ok else missed).append(name)
        return len(found) / 2, words.ranges_feedback(found, missed, names)

    def _number(self, part: str, ans, key: float, unit: str):
        s = score_number(float(ans), key)
        return s, words.number_feedback(part, float(ans), key, unit, s)

    def ranges_ttft_ms(self, ans):
        return self._number("ttft_ms", ans, self.key["ttft_ms"], "ms")

    def ranges_per_token_ms(self, ans):
        return self._number("per_token_ms", ans, self.key["per_token_ms"], "ms")

    def ranges_decode_regime(self, ans):
        r = self.key["decode_regime"]
        s, said = score_class(ans, r, "regime", "name", REGIMES)
        p = self.facts.phases
        why = words.decode_regime_why(r, p["per_token_ms"], p["decode_steps"], p["prefill_regime"])
        if s == 1.0:
            return s, words.bound_right(r, why)
        if s > 0:
            return s, words.hedge(r, said - {r})
        return 0.0, words.bound_wrong(said, r, why)

    # --- prefill or decode: the incident (M00.04) ---------------------------------------------------
    def incident_ttft_ms(self, ans):
        return self._number("ttft_ms", ans, self.key["ttft_ms"], "ms")

    def incident_per_token_ms(self, ans):
        return self._number("per_token_ms", ans, self.key["per_token_ms"], "ms")

    def _incident_why(self) -> str:
        k, slo = self.key, self.drill.slo
        return words.incident_why(k["phase"], k["ttft_ms"], k["per_token_ms"], slo["ttft_ms"], slo["per_token_ms"],
                                  k["over_target"], k["phase_regime"])

    def incident_phase(self, ans):
        ph = self.key["phase"]
        s, said = score_class(ans, ph, "phase", "name", ("prefill", "decode"))
        if s == 1.0:
            return s, words.bound_right(ph, self._incident_why())
        if s > 0:
            return s, words.hedge(ph, said - {ph})
        return 0.0, words.bound_wrong(said, ph, self._incident_why())

    def incident_refuse(self, ans):
        other = self.key["refuse"]
        s, said = class_score(_text(ans), other, "phase", "fix")
        if s == 1.0:
            return s, words.refuse_right(other, self.key["phase"])
        if s > 0:
            return s, words.hedge(f"a {other} fix", said - {other})
        return 0.0, words.refuse_wrong(said, other, self.key["phase"])

    # --- roofline (M01.05) ------------------------------------------------------------------------
    def _lever_class(self) -> str | None:
        k = self.key
        if "explained_by" in k:
            return "overhead" if k["explained_by"] == "launches" else "memory"
        return k.get("regime")

    def _roof_why(self) -> str:
        f = self.facts
        return words.regime_why(self.key["regime"], f.compute_share, f.memory_share, f.idle_share,
                                f.achieved_tflops, f.achieved_gbps, f.intensity, f.ridge, f.dtype)

    def roofline_regime(self, ans):
        r = self.key["regime"]
        s, said = score_class(ans, r, "regime", "name", REGIMES)
        if s == 1.0:
            return s, words.bound_right(r, self._roof_why())
        if s > 0:
            return s, words.hedge(r, said - {r})
        return 0.0, words.bound_wrong(said, r, self._roof_why())

    def roofline_achieved(self, ans):
        return self._number("achieved", ans, self.key["achieved"], self.key["achieved_unit"])

    def roofline_lever(self, ans):
        return self._experiment(ans, self.key["regime"], "regime", "lever")

    # --- overhead-bound collapse (M01.08) --------------------------------------------------------------
    def _collapse_why(self) -> str:
        d = self.diff
        return words.explained_why(d.explained_by, d.speedup, d.launch_ratio, d.byte_ratio, d.before_regime,
                                   d.after_regime)

    def collapse_speedup(self, ans):
        return self._number("speedup", ans, self.key["speedup"], "×")

    def collapse_explained_by(self, ans):
        how = self.key["explained_by"]
        s, said = score_class(ans, how, "explain", "name", ("launches", "bytes"))
        if s == 1.0:
            return s, words.explained_right(self._collapse_why())
        if s > 0:
            return s, words.hedge(how, said - {how})
        return 0.0, words.bound_wrong(said, how, self._collapse_why())

    def collapse_lever(self, ans):
        return self._experiment(ans, self._lever_class(), "regime", "lever")
