"""How close the drill grader comes to a teacher, on answers it was not fitted on.

    python -m tools.grader_agreement DIR [--misses]

Input: a held-out set as DIR holds it: answers/ID--N.toml (an answer file to drill ID, as a student wrote it),
teacher_overall.tsv (file, overall: the teacher's score of each file) and teacher.tsv (file, part, score: the
teacher's score of each part), answers/INTENT.tsv (file, kind: careful, partial, misconception, hedge, terse), and
optionally CORRECTIONS.tsv (file, part, teacher, corrected, why: a teacher's score checked wrong against the trace
by hand; part "overall" corrects the file's overall score). Corrected scores replace the teacher's, and the output says
how many, so a figure with corrections is never mistaken for the raw agreement (--raw ignores them).
--slice held|tuning splits a set by the first hex digit of the sha256 of each answer file's name (0-3 held back, the
rest to tune on), so a slice nobody looked at while fitting can be reported apart.
Output: per file and per part, how many the grader scores within WITHIN of the teacher, the mean absolute error,
how many it scores too harshly and too leniently, and the files by kind. Nothing here tunes anything: it grades
each answer file once with the grader as it is (an unreadable file scores 0, as the CLI would refuse it).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import sys
from pathlib import Path

WITHIN = 0.25   # the measure: a grade within a quarter of the teacher's agrees
HELD_DIGITS = "0123"   # a quarter of the files, by name: held back from tuning


def held_back(name: str) -> bool:
    """Whether an answer file belongs to the held-back slice (by its name alone, so the split never moves)."""
    return hashlib.sha256(name.encode()).hexdigest()[0] in HELD_DIGITS


def _tsv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def agreement(pairs: list[tuple[float, float]]) -> dict:
    """(teacher, grader) pairs: the share within WITHIN, the mean error, too harsh, too lenient."""
    n = len(pairs)
    within = sum(abs(g - t) <= WITHIN for t, g in pairs)
    return {"n": n, "within": within, "share": round(within / n, 4) if n else None,
            "mean_error": round(sum(abs(g - t) for t, g in pairs) / n, 4) if n else None,
            "too_harsh": sum(g - t < -WITHIN for t, g in pairs), "too_lenient": sum(g - t > WITHIN for t, g in pairs)}


def corrections(root: Path) -> dict[tuple[str, str], float]:
    """(file, part) -> the corrected score, from CORRECTIONS.tsv where the set has one (part "overall": the file)."""
    path = root / "CORRECTIONS.tsv"
    return {(r["file"], r["part"]): float(r["corrected"]) for r in _tsv(path)} if path.exists() else {}


def grade_set(root: Path, keep=lambda drill_id: True, corrected: dict | None = None,
              keep_file=lambda name: True) -> tuple[list, list]:
    from tracetriage.drills import answers, bank, grader

    fixes = corrected or {}
    overall = {r["file"]: fixes.get((r["file"], "overall"), float(r["overall"]))
               for r in _tsv(root / "teacher_overall.tsv")}
    by_part = {(r["file"], r["part"]): fixes.get((r["file"], r["part"]), float(r["score"]))
               for r in _tsv(root / "teacher.tsv")}
    files, parts = [], []
    for name in sorted(overall):
        if not keep(name.split("--")[0]) or not keep_file(name):
            continue
        drill = bank.get(name.split("--")[0])
        try:
            ans = answers.read(root / "answers" / name, drill)
        except answers.AnswerError:
            files.append((name, overall[name], 0.0))
            continue
        r = grader.grade(drill, ans)
        files.append((name, overall[name], r.score))
        parts += [(name, p.part, by_part[(name, p.part)], p.score, p.feedback) for p in r.parts
                  if (name, p.part) in by_part]
    return files, parts


def _line(what: str, a: dict) -> str:
    return (f"{what}: {a['within']} of {a['n']} within {WITHIN} of the teacher ({100 * (a['share'] or 0):.1f}%), "
            f"mean error {a['mean_error']}; {a['too_harsh']} too harsh, {a['too_lenient']} too lenient")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.grader_agreement", description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="the held-out set: answers/, teacher_overall.tsv, teacher.tsv")
    ap.add_argument("--misses", action="store_true", help="list every file and part off by more than 0.25")
    ap.add_argument("--drills", help="grade only these drill ids (comma-separated): a held-back slice")
    ap.add_argument("--except-drills", help="grade all but these drill ids (comma-separated): the tuning slice")
    ap.add_argument("--slice", choices=("held", "tuning"),
                    help="only the held-back files (sha256 of the name starts 0-3) or only the rest")
    ap.add_argument("--raw", action="store_true", help="the teacher's scores as written, CORRECTIONS.tsv ignored")
    a = ap.parse_args(argv)
    root = Path(a.dir)
    only = set(a.drills.split(",")) if a.drills else None
    skip = set(a.except_drills.split(",")) if a.except_drills else set()
    in_slice = (lambda n: True) if a.slice is None else (lambda n: held_back(n) == (a.slice == "held"))
    try:
        fixes = {} if a.raw else corrections(root)
        files, parts = grade_set(root, lambda d: (only is None or d in only) and d not in skip, fixes, in_slice)
        kinds = {r["file"]: r["kind"] for r in _tsv(root / "answers" / "INTENT.tsv")} \
            if (root / "answers" / "INTENT.tsv").exists() else {}
    except (OSError, KeyError, ValueError) as e:
        print(f"error: {root}: {e}", file=sys.stderr)
        return 2
    if fixes:
        print(f"{len(fixes)} teacher scores corrected (CORRECTIONS.tsv; --raw for the teacher's own)")
    print(_line("files", agreement([(t, g) for _, t, g in files])))
    print(_line("parts", agreement([(t, g) for _, _, t, g, _ in parts])))
    by_kind: dict[str, list] = {}
    for name, t, g in files:
        by_kind.setdefault(kinds.get(name, "?"), []).append((t, g))
    for k, v in sorted(by_kind.items()):
        print("  " + _line(k, agreement(v)))
    if a.misses:
        for name, t, g in files:
            if abs(g - t) > WITHIN:
                print(f"file {name}: teacher {t:.2f}, grader {g:.2f}")
        for name, part, t, g, fb in parts:
            if abs(g - t) > WITHIN:
                print(f"part {name} {part}: teacher {t}, grader {g:.2f}: {fb[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
