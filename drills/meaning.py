"""What a free-text answer says, read on meaning: the classes it asserts, the ones it denies, whether it hedges.

    r = read("compute-bound matmuls, not synchronization", tables)
    r.asserted == ("compute",); r.denied == {"synchronization"}; r.hedged is False

`tables` maps each answer class to its phrases (drills/vocab.toml, read by tracetriage.drills.textmatch). The reading:
- clauses: the text splits at sentence punctuation, commas and the words that turn a sentence ("but", "so",
  "because" ...): a negation never reaches across them;
- negation: a negator ("not", "no", "never", "n't", "rather than", "instead of", "neither/nor" ...) denies the first
  class phrase after it in its clause, and the ones joined to that by "or"/"nor"; "X is not ..." / "X is ruled out"
  deny X from behind;
- removal: in a lever answer, a removal verb ("remove", "avoid", "fewer", "without" ...) before an idle cause's
  name is that cause's fix ("avoid the syncs" is removing syncs), not a denial;
- hedges: two asserted classes with a disjunction ("or", "either", "maybe", "A/B") between them;
- minor mentions: a class only named after "some", "a bit of", "partly" ... is secondary to the one that is not;
- code: `DataLoader(num_workers=4, pin_memory=True)` reads as its words (num workers, pin memory); a standalone
  number reads as `n` ("every 50 steps" is "every n steps").
Nothing here knows a drill: it reads text against the classes it is given.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# A clause ends at these; a negation, a hedge's scope and a minor mention stay inside one clause.
CLAUSE_END = re.compile(r"[;:!?,()\[\]]|\.(?=\s|$)|\s[-–—]+\s|\b(?:but|however|whereas|although|though|yet|so|hence|"
                        r"because|since|therefore|thus|which means|instead it|rather it|it is|it s|its)\b")
NEGATORS = ("not", "no", "never", "nothing", "none", "neither", "nor", "rather than", "instead of",
            "other than", "except", "isn t", "aren t", "wasn t", "weren t", "don t", "doesn t", "didn t", "won t",
            "wouldn t", "can t", "cannot", "shouldn t", "hardly", "nobody",
            "already")   # "already compiled, so ...": done, not the answer
# after a class phrase: "X is not (it)", "X is ruled out", "X isn't"
POST_NEGATION = re.compile(r"^\s*(?:(?:is|are|was|were|seems|looks|s)\s+(?:not|never|no|unlikely|irrelevant|ruled out|"
                           r"excluded)|isn t|aren t|wasn t|weren t|can be ruled out|(?:is|are) ruled out|"
                           r"doesn t matter|don t matter|"
                           # "the bytes don't change", "the kernels stay the same": not what moved
                           r"(?:don t|doesn t|didn t|do not|does not|did not) change|"
                           r"(?:stay|stays|stayed|are|is|were|was|remain|remains|remained) (?:the same|unchanged)|"
                           # "launch cost is basically gone": removed already, not the answer
                           r"(?:(?:cost|costs|time|overhead|share) )?(?:is|are|was|were|s) "
                           r"(?:basically |mostly |already |largely )?(?:gone|eliminated|hidden)|"
                           # "faster kernels would buy nothing": the waste named as such, not offered
                           r"(?:would |will |could )?(?:buy|buys|save|saves|gain|gains) (?:nothing|little)|"
                           r"(?:won t|wouldn t|would not|will not|doesn t|does not|don t|do not|can t|cannot) "
                           r"(?:help|buy anything|matter|change anything)|(?:is|are|would be) (?:pointless|wasted))\b")
# after a class phrase, context that says it is not the answer: "TTFT of n ms is fine", "prefill meets its target",
# "launch overhead is small": a quantity judged, not an option offered
# ("the DtoH copy itself is tiny", "the first token in n ms is inside the n ms allowance")
POST_CONTEXT = re.compile(r"^(?:\s+(?:of|at|in|time|latency|n|ms|us|s|is|are|was|were|stays|stay|itself|alone|share|"
                          r"the|a|its|it|per|token|tokens|step|steps|count|here|copy|copies|transfer|kernel|kernels|"
                          r"comes|arrives|which|that|well|comfortably|safely)"
                          r"){0,7}\s+"
                          r"(?:(?:is|are|was|were|stays|stay|looks|seems|s)\s+)?(?:fine|ok|okay|well under|well within|"
                          r"comfortably|hardly matters|barely matters|matters little|is secondary|irrelevant|"
                          r"acceptable|healthy|on target|within (?:its |the )?(?:target|budget|slo)|meets|met|small|"
                          r"tiny|minor|negligible|a small part|not the problem|not the issue|"
                          r"(?:inside|within|under|below|meets|beats|hits|makes)\s+(?:(?:its|the|a|n|ms|us|per|token)\s+){0,4}"
                          r"(?:target|budget|slo|goal|allowance|limit|deadline|requirement)|(?:within|inside)(?=\s*$))\b")
# after a class phrase, a share that makes it secondary: "launch overhead is only 4%", "copies just n"
POST_MINOR = re.compile(r"^\s+(?:is|are|was|were|s|takes|holds|at)\s+(?:only|just|merely|a mere|barely)\b|"
                        r"^\s+(?:only|just|barely)\s+n\b")   # not "synchronization only": that is all of it
# before a class phrase, context that places the kernel under that roof, not on it: "far below both roofs",
# "well under the memory roof"
ROOF_CONTEXT = re.compile(r"^\s*(?:bound\s+)?(?:roof|roofs|ceiling|peak)\b")
ROOF_BEFORE = re.compile(r"(?:below|under|far from|short of|nowhere near|away from)\s+(?:the\s+|both\s+|either\s+)?"
                         r"(?:\w+\s+(?:and|or)\s+)?$")
# before a class phrase naming a roof, a share of it: "1% of the tensor-core peak" measures against the roof, it does
# not say the kernel is bound by it (nor that it is not)
ROOF_SHARE_BEFORE = re.compile(r"(?:\bn|\ba (?:small |tiny )?fraction)\s+(?:percent\s+|pct\s+)?of\s+"
                               r"(?:the\s+|its\s+)?$")
REMOVAL = ("don t call", "do not call", "never call", "not call", "stop calling", "remove", "removing", "drop",
           "dropping", "avoid", "avoiding", "eliminate", "eliminating", "get rid of",
           "fewer", "less", "no more", "stop", "skip", "skipping", "cut", "cutting", "without", "hide", "hiding",
           "reduce", "reducing", "defer", "deferring", "batch", "amortize", "amortise", "overlap", "overlapping")
DISJUNCTION = re.compile(r"\b(?:or|either|and or|maybe|perhaps|possibly|might be|could be|not sure|unsure|"
                         r"one of)\b|\?")
# "somewhere between overhead and memory": a place between two classes asserts neither, a hedge as "or" is ("gaps
# between kernels and copies" places nothing: no hedge)
PLACED_BETWEEN = re.compile(r"\b(?:somewhere|anywhere|halfway|in) between\s[^,.;]*\band\s")
SLASH_HEDGE = re.compile(r"[a-z]{3,}\s*/\s*(?!s\b)[a-z]{3,}")   # "compute/memory"; not "GB/s"
MINOR = ("some", "a bit of", "a little", "a few", "minor", "slight", "slightly", "partly", "partially", "a touch of",
         "secondary", "also some", "plus some", "with some", "less so", "somewhat", "a small amount of")
PRIMARY = ("mostly", "mainly", "primarily", "chiefly", "largely", "dominated by", "dominantly", "predominantly",
           "above all", "first and foremost", "overwhelmingly")
NEGATION_REACH = 6   # tokens between a negator and the class phrase it denies
REMOVAL_REACH = 5    # tokens between a removal verb and the cause it removes ("drop the per-step .item()")
NEGATOR = re.compile(r"(?<![a-z])(?:" + "|".join(re.escape(n) for n in NEGATORS) + r")(?![a-z])")
JOIN = re.compile(r"\s*(?:,\s*)?(?:or|nor)\s+(?:a |an |the |any )?\s*|\s*")   # "X or Y", "X nor Y", "X Y"


@dataclass(frozen=True)
class Reading:
    asserted: tuple[str, ...]       # classes said positively, in order of first mention
    denied: frozenset               # classes said negatively (and never positively)
    hedged: bool                    # a disjunction between two asserted classes
    minor: frozenset                # asserted only as secondary ("with some launch overhead")

    @property
    def main(self) -> tuple[str, ...]:
        """The asserted classes that are not only secondary (all of them, when every one is)."""
        main = tuple(c for c in self.asserted if c not in self.minor)
        return main or self.asserted


def words_of(text: str) -> str:
    """Lower case, code read as words (`num_workers=4` -> 'num workers n'), standalone numbers as n."""
    t = text.lower().replace("’", "'").replace("µ", "u").replace("μ", "u")   # µs, as typed, is "us"
    t = re.sub(r"(?<=[a-z])'(?=[a-z])", " ", t)                       # isn't -> isn t
    t = re.sub(r"[^a-z0-9.]+", " ", t)
    t = re.sub(r"(?<![a-z0-9.])\d[\d.]*(?![a-z0-9])", " n ", t)       # 50, 0.5 -> n; fp8, bf16 stay
    t = re.sub(r"\.(?![a-z0-9])|(?<![a-z0-9])\.(?=\s|$)", " ", t)      # a sentence's dot
    return " " + re.sub(r"\s+", " ", t).strip() + " "


def clauses(text: str) -> list[str]:
    """The text's clauses, each read as words. The split is on the raw text: punctuation first."""
    return [c for _, c in opened_clauses(text)]


def opened_clauses(text: str) -> list[tuple[str, str]]:
    """(what opens it, the clause as words) for each clause: the punctuation or conjunction before it ('' first)."""
    raw = text.lower().replace("’", "'")
    raw = re.sub(r"(?<=[a-z])'(?=[a-z])", " ", raw)
    # a call's arguments are its words, not an aside: torch.compile(mode='max-autotune') is one clause
    raw = re.sub(r"(?<=[a-z0-9_.])\(([^();]*)\)|\(([^();]*)\)(?=\.[a-z_])", r" \1\2 ", raw)   # (x < 0).any()
    parts = re.split("(" + CLAUSE_END.pattern + ")", raw)
    out: list[tuple[str, str]] = []
    openers: list[str] = []
    for i, p in enumerate(parts):
        if i % 2:
            openers += [p.strip()] if p.strip() else []
            continue
        words = words_of(p)
        if words.strip():
            # of several ("), so it is"), the first word: it says what the clause does
            out.append((next((o for o in openers if o[0].isalpha()), openers[0] if openers else ""), words))
            openers = []
    return out


@lru_cache(maxsize=4096)
def _pattern(phrase: str) -> re.Pattern:
    prefix = phrase.endswith("*")
    body = re.escape(words_of(phrase.rstrip("*")).strip())
    return re.compile(r"(?<![a-z0-9])" + body + (r"[a-z0-9]*" if prefix else r"(?![a-z0-9])"))


def _hits(clause: str, tables: dict) -> list[tuple[str, int, int]]:
    """(class, start, end) of each phrase in the clause; a match inside a longer one does not count ("cpu" inside
    "cpu bound", "launch" inside "launch overhead"), and one phrase listed under two classes is a hit of both."""
    found = [(cls, m.start(), m.end()) for cls, phrases in tables.items() for p in phrases
             for m in _pattern(p).finditer(clause)]
    out = []
    for cls, s, e in found:
        inside = any(s2 <= s and e <= e2 and (e2 - s2) > (e - s) for c2, s2, e2 in found)
        if not inside and (cls, s, e) not in out:
            out.append((cls, s, e))
    return sorted(out, key=lambda h: (h[1], h[2]))


def phrase_hits(clause: str, tables: dict) -> list[tuple[str, int, int]]:
    """(class, start, end) of each phrase of `tables` in one clause (read as words), longest matches only."""
    return _hits(clause, tables)


def _tokens_before(clause: str, start: int, n: int) -> str:
    return " " + " ".join(clause[:start].split()[-n:]) + " "


def _negated_from_before(clause: str, start: int, hits_before: list[tuple[str, int, int]]) -> bool:
    """A negator within reach before the phrase denies it, unless another class phrase stands between them
    that is not joined to this one by or / nor ("not sync or copies" denies both; "no sync, launches" one)."""
    before = clause[:start]
    ends = [m.end() for m in NEGATOR.finditer(before)]
    if not ends:
        return False
    neg = ends[-1]
    inner = [h for h in hits_before if h[1] >= neg]
    if not inner:
        return len(before[neg:].split()) <= NEGATION_REACH
    if len(clause[neg:inner[0][1]].split()) > NEGATION_REACH:
        return False
    joins = [clause[a[2]:b[1]] for a, b in zip(inner, inner[1:] + [("", start, start)])]
    return all(JOIN.fullmatch(j) for j in joins)


def _removal_verb(clause: str, start: int) -> int | None:
    """Where the removal verb before the phrase starts ("avoid the syncs"), within REMOVAL_REACH tokens; None if there
    is none."""
    lo = start
    for _ in range(REMOVAL_REACH):
        m = re.search(r"\S+\s*$", clause[:lo])
        if not m:
            break
        lo = m.start()
    found = [lo + m.start() for v in REMOVAL
             for m in re.finditer(rf"(?<![a-z]){re.escape(v)}(?![a-z])", clause[lo:start])]
    return max(found) if found else None


def _primary_before(clause: str, start: int) -> bool:
    near = _tokens_before(clause, start, 4)
    return any(re.search(rf"(?<![a-z]){re.escape(v)}(?![a-z])", near) for v in PRIMARY)


def _minor_before(clause: str, start: int) -> bool:
    near = _tokens_before(clause, start, 4)
    return any(re.search(rf"(?<![a-z]){re.escape(v)}(?![a-z])", near) for v in MINOR)


def _resolve_shared(hits: list[tuple[str, int, int]], prefer: frozenset,
                    first: frozenset = frozenset(), then: frozenset = frozenset()) -> list[tuple[str, int, int]]:
    """One phrase of two classes ("torch.compile": fusion and fewer launches) is a hit of the `first` class when it
    is one of them (the lever that would waste the week: its own word), else of the preferred, else of the `then`
    classes (the rest of the waste band: "prefetching batches", workers' prefetch or a copy's, is the band's host
    work where copies are no waste at all), else of both."""
    spans: dict[tuple[int, int], list[str]] = {}
    for cls, s, e in hits:
        spans.setdefault((s, e), []).append(cls)
    out = []
    for (s, e), classes in spans.items():
        keep = [c for c in classes if c in first] or [c for c in classes if c in prefer] or \
            [c for c in classes if c in then] or classes
        out += [(c, s, e) for c in keep]
    return sorted(out, key=lambda h: (h[1], h[2]))


# The answer is its lead clause: "decode, though prefill is also close to its limit" answers decode; the later clause
# judges the other phase, it does not offer it. A later clause still offers its class when it hedges ("or memory",
# "bytes may play a part"), adds ("but also launches", "plus copies"), ranks it first ("mostly memory") or concludes
# ("..., so it is a sync").
LEAD_HEDGE = re.compile(r"\b(?:probably|likely|i think|i guess|perhaps|maybe|possibly|might|may|could|either|or|"
                        r"not sure|unsure)\b")
LATER_OFFERS = re.compile(r"\b(?:or|either|maybe|perhaps|possibly|probably|likely|might|may|could|also|too|as well|"
                          r"plus|mostly|mainly|primarily|largely|dominant|dominated|more|bigger|larger)\b")
CONCESSIVE = ("though", "although", "whereas", "however")    # an aside: "also" inside it does not add an option
CONCLUSIVE = ("so", "hence", "therefore", "thus", "which means")   # "X blocks the host, so it is a sync": the answer


STATED_LEAD_WORDS = 2     # "compute", "compute bound", "host work": the answer stated, before its reasons


def _lead_answer(said: list[tuple[str, str, set, set]]) -> str | None:
    """The one class the opening clause asserts, when no later clause offers another; None otherwise. A generic
    word in the lead ("millisecond holes") gives way to a later clause's own words ("the host inside cudaMemcpy")."""
    if not said or len(said[0][2]) != 1 or LEAD_HEDGE.search(said[0][1]):
        return None
    (lead,) = said[0][2]
    # a lead that is the class's word and little else ("compute: the matmuls run at 770 TFLOP/s ...", "compute,
    # mostly; ...") states the answer, however generic the word; a generic word inside a description gives way
    generic_lead = lead not in said[0][3] and len(said[0][1].split()) > STATED_LEAD_WORDS
    for opener, clause, classes, own in said[1:]:
        if not classes - {lead}:
            continue
        if generic_lead and own - {lead}:
            return None
        offers = LATER_OFFERS.search(clause)
        aside = opener in CONCESSIVE and offers is not None and offers.group(0) in ("also", "too", "as well")
        if opener in ("or", *CONCLUSIVE) or clause.startswith(" and ") or (offers and not aside):
            return None
    return lead


def _is_weak(matched: str, phrases) -> bool:
    """A generic word of its class ("python", "launches", "compute"): it names the class only when no other class
    is named by a word of its own ("the queue drains because Python reads back a scalar" is a sync)."""
    return any(_pattern(p).fullmatch(matched.strip()) for p in phrases)


def read(text: str, tables: dict, removal_tables: dict | None = None, prefer: frozenset = frozenset(),
         weak: dict | None = None, first: frozenset = frozenset(), lead: bool = True,
         then: frozenset = frozenset()) -> Reading:
    """Read `text` against `tables` (class -> phrases). With `removal_tables` (class -> phrases naming what the
    class's fix removes, e.g. the idle causes' names), "avoid the syncs" asserts the class whose fix that is.
    `prefer`: the classes a phrase shared with another class is read as (the key's, for a lever). `weak`: each
    class's generic words, which name it only as a minor mention beside another class's own words. `lead`: the
    answer is its lead clause (_lead_answer); off for a description whose clauses all draw one picture (a pattern)."""
    asserted: list[str] = []
    denied: set[str] = set()
    positive_major: set[str] = set()
    primary: set[str] = set()     # named as the main one ("mostly sync, but also launches"): the rest are minor
    hedged_pairs = False
    seen_before: list[str] = []
    said: list[tuple[str, str, set, set]] = []   # (opener, clause, classes it asserts, those by their own words)
    for opener, clause in opened_clauses(text):
        hits = _hits(clause, tables)
        # a cause's name after a removal verb is the fix ("avoid the syncs"): the verb, not the name, is what a
        # negation reaches ("don't remove the syncs")
        removals: dict[tuple[int, int], int] = {}
        if removal_tables:
            covered = [(s, e) for _, s, e in hits]
            for cls, s, e in _hits(clause, removal_tables):
                verb = _removal_verb(clause, s)
                if verb is not None and not any(s2 <= s < e2 for s2, e2 in covered):
                    hits.append((cls, s, e))
                    removals[(s, e)] = verb
        hits = _resolve_shared(hits, prefer, first, then)
        clause_pos: list[tuple[str, int]] = []
        for i, (cls, s, e) in enumerate(hits):
            at = removals.get((s, e), s)
            if ROOF_CONTEXT.match(clause[e:]) and ROOF_SHARE_BEFORE.search(clause[:s]):
                continue
            neg = _negated_from_before(clause, at, [h for h in hits[:i] if h[1] < at]) or \
                bool(POST_NEGATION.match(clause[e:])) or bool(POST_CONTEXT.match(clause[e:])) or \
                (bool(ROOF_CONTEXT.match(clause[e:])) and bool(ROOF_BEFORE.search(clause[:s])))
            if neg:
                denied.add(cls)
                continue
            clause_pos.append((cls, s))
            if cls not in asserted:
                asserted.append(cls)
            if _primary_before(clause, s):
                primary.add(cls)
            if not _minor_before(clause, s) and not POST_MINOR.match(clause[e:]) and \
                    not (weak and _is_weak(clause[s:e], weak.get(cls, ()))):
                positive_major.add(cls)
        # a disjunction inside one clause between two classes
        if len({c for c, _ in clause_pos}) > 1:
            lo, hi = clause_pos[0][1], clause_pos[-1][1]
            if DISJUNCTION.search(clause[max(0, lo - 12):hi]) or SLASH_HEDGE.search(text.lower()) or \
                    PLACED_BETWEEN.search(clause[max(0, lo - 24):hi]):
                hedged_pairs = True
        # "sync, or launch overhead": a clause that opens with a disjunction, against the classes before it
        if clause_pos and re.match(r"\s(?:or|either|maybe|perhaps|possibly)\s", clause) and \
                {c for c, _ in clause_pos} - set(seen_before):
            hedged_pairs = hedged_pairs or bool(seen_before)
        seen_before = [*seen_before, *(c for c, _ in clause_pos)]
        said.append((opener, clause, {c for c, _ in clause_pos},
                     {c for c, s in clause_pos
                      if not (weak and any(h[1] == s and _is_weak(clause[h[1]:h[2]], weak.get(c, ())) for h in hits))}))
    if len(asserted) > 1 and not hedged_pairs:
        # across clauses: "maybe sync. or launches?"
        hedged_pairs = bool(re.search(r"\b(?:either|maybe|perhaps|possibly|not sure|unsure)\b|\?", text.lower())) \
            and len(set(asserted)) > 1
    minor = frozenset(c for c in asserted if c not in positive_major or (primary and c not in primary))
    answer = _lead_answer(said) if lead else None
    if answer is not None and answer in asserted and not hedged_pairs:
        minor = frozenset(set(asserted) - {answer})
    return Reading(tuple(asserted), frozenset(denied - set(asserted)), hedged_pairs and len(set(asserted)) > 1, minor)
