"""How close the drill grader comes to a teacher, on answers it was not fitted on.

    python -m tools.grader_agreement DIR [--misses]

Input: a held-out set as DIR holds it: answers/ID--N.toml (an answer file to drill ID, as a student wrote it),
teacher_overall.tsv (file, overall: the teacher's score of each file) and teacher.tsv (file, part, score: the
teacher's score of each part), answers/INTENT.tsv (file, kind: careful, partial, misconception, hedge, terse).
Output: per file and per part, how many the grader scores within WITHIN of the teacher, the mean absolute error,
how many it scores too harshly and too leniently, and the files by kind. Nothing here tunes anything: it grades
each answer file once with the grader as it is (an unreadable file scores 0, as the CLI would refuse it).
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

WITHIN = 0.25   # the measure: a grade within a quarter of the teacher's agrees


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


def grade_set(root: Path, keep=lambda drill_id: True) -> tuple[list, list]:
    from tracetriage.drills import answers, bank, grader

    overall = {r["file"]: float(r["overall"]) for r in _tsv(root / "teacher_overall.tsv")}
    by_part = {(r["file"], r["part"]): float(r["score"]) for r in _tsv(root / "teacher.tsv")}
    files, parts = [], []
    for name in sorted(overall):
        if not keep(name.split("--")[0]):
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
    a = ap.parse_args(argv)
    root = Path(a.dir)
    only = set(a.drills.split(",")) if a.drills else None
    skip = set(a.except_drills.split(",")) if a.except_drills else set()
    try:
        files, parts = grade_set(root, lambda d: (only is None or d in only) and d not in skip)
        kinds = {r["file"]: r["kind"] for r in _tsv(root / "answers" / "INTENT.tsv")} \
            if (root / "answers" / "INTENT.tsv").exists() else {}
    except (OSError, KeyError, ValueError) as e:
        print(f"error: {root}: {e}", file=sys.stderr)
        return 2
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
