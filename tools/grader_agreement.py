"""How close the drill grader comes to a teacher, on answers it was not fitted on.

    python -m tools.grader_agreement ANSWERS.jsonl [--json]

Input: one JSON object a line, each an answer file as a student wrote it and the score a teacher gave it:
{"drill": "M01.04-a", "answers": {"tflops_small": "10.7", ...}, "teacher": 0.4}. Output: the share of
answers the grader scores within WITHIN of the teacher, the mean absolute error, and the misses, largest first
(too harsh or too lenient). Nothing here tunes anything: it grades each answer once with the grader as it is.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

WITHIN = 0.25   # the measure: a grade within a quarter of the teacher's agrees


def agreement(rows: list[dict]) -> dict:
    from tracetriage.drills import bank, grader

    graded = []
    for r in rows:
        got = grader.grade(bank.get(r["drill"]), r["answers"]).score
        graded.append({**r, "grader": round(got, 3), "error": round(got - float(r["teacher"]), 3)})
    n = len(graded)
    within = sum(abs(g["error"]) <= WITHIN for g in graded)
    misses = sorted((g for g in graded if abs(g["error"]) > WITHIN), key=lambda g: -abs(g["error"]))
    return {"answers": n, "within": within, "share_within": round(within / n, 4) if n else None,
            "mean_abs_error": round(sum(abs(g["error"]) for g in graded) / n, 4) if n else None,
            "too_harsh": sum(g["error"] < -WITHIN for g in graded),
            "too_lenient": sum(g["error"] > WITHIN for g in graded), "misses": misses}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.grader_agreement", description=__doc__.split("\n")[0])
    ap.add_argument("answers", help="a JSON-lines file: drill, answers, teacher")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    a = ap.parse_args(argv)
    try:
        rows = [json.loads(line) for line in Path(a.answers).read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as e:
        print(f"error: {a.answers}: {e}", file=sys.stderr)
        return 2
    res = agreement(rows)
    if a.json:
        print(json.dumps(res, indent=2, ensure_ascii=False))
        return 0
    share = 100 * (res["share_within"] or 0)
    print(f"{res['within']} of {res['answers']} within {WITHIN} of the teacher ({share:.0f}%), "
          f"mean error {res['mean_abs_error']}; {res['too_harsh']} too harsh, {res['too_lenient']} too lenient")
    for m in res["misses"]:
        print(f"  {m['drill']}: teacher {m['teacher']}, grader {m['grader']}: {json.dumps(m['answers'])[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
