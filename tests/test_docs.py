"""The README and docs/ say what the code does today, and stand alone in a clone.

Quoted output. A quote is a ```console block whose lines starting with `$ ` are commands, each followed by
what it prints. Each command runs with bash in a scratch directory that links the repository's top-level
entries (so `traces/...` resolves and a file a block writes, such as an answer file, stays out of the
checkout), this interpreter's bin first on PATH, a prediction log of the block's own, and unbuffered
output; its stdout and stderr together, in the order the program wrote them (as a terminal shows them),
are compared with the lines after it, up to the next `$ ` line or the end of the block.

The rule for a quote that leaves things out on purpose:
- a quote line that is just `...` stands for any number of output lines (none included);
- every other quote line matches exactly one output line, in order, consecutive lines consecutive lines;
  the quote's first line is the output's first and its last the output's last, unless the quote begins
  or ends with `...`;
- inside a line, `...` leaves out any text: the pieces between them appear in the output line in order,
  the first at its start and the last at its end (a line that ends in `...` may end anywhere);
- trailing whitespace is ignored. Nothing else is loose: a changed number, word or line fails.
A fenced block that holds report lines (`Measured:`, `Diff:`, `Ranks:`, `gate failed`, `error:` ...) must
be such a quote, so that no quoted output escapes the check.

Besides the quotes: every relative link resolves, its anchor included (GitHub's heading slugs); every path
and `tracetriage.*` name the pages write out exists; the figures the pages copy from the code (the schema
version, json.md's keys and enums, the fix tables, the H200 tables) are the code's; the README is a front
door (at most 250 lines, no history of how the project was made).
"""
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from sweep import sweep

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
OUTSIDE = re.compile(r"`(\.\./[^`\s]+)`")       # a path written out, above the repository's root
FENCE = re.compile(r"^```(\S*)\s*$")
ELIDED = "..."
PROMPT = "$ "
# The first words of a line tracetriage prints: a fenced block holding one is quoted output.
OUTPUT_LINE = re.compile(r"^\s*(\*\*)?(Measured|Time|Idle|Regime|Next|Caveat|Health|Diff|Ranks|Straggler|Predicted|"
                         r"Launches and bytes|Explained by [a-z ]+)(\*\*)?: |^(gate failed|gate passed|error): ")


def rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


# --- the pages' blocks ------------------------------------------------------------------------------

def fenced_blocks(page: Path) -> list[tuple[str, int, list[str]]]:
    """(language, line number of the opening fence, the lines inside) for every fenced block."""
    blocks, lang, start, body = [], None, 0, []
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if lang is None and m:
            lang, start, body = m.group(1), n, []
        elif lang is not None and line.strip() == "```":
            blocks.append((lang, start, body))
            lang = None
        elif lang is not None:
            body.append(line)
    return blocks


def quotes() -> list[tuple[str, int, list[str]]]:
    return [(rel(p), n, body) for p in PAGES for lang, n, body in fenced_blocks(p) if lang == "console"]


def commands(body: list[str]) -> list[tuple[str, list[str]]]:
    """Each `$ ` line's command and the quoted output that follows it."""
    out: list[tuple[str, list[str]]] = []
    for line in body:
        if line.startswith(PROMPT):
            out.append((line[len(PROMPT):], []))
        else:
            out[-1][1].append(line.rstrip())
    return out


# --- the rule for elided quotes -------------------------------------------------------------------

def line_matches(quote: str, line: str) -> bool:
    if ELIDED not in quote:
        return quote == line
    first, *middle, last = quote.split(ELIDED)
    if not line.startswith(first):
        return False
    at = len(first)
    for piece in middle:
        found = line.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return last == "" or (line.endswith(last) and len(line) - len(last) >= at)


def quote_matches(quote: list[str], output: list[str]) -> bool:
    @lru_cache(maxsize=None)
    def match(i: int, j: int) -> bool:        # quote[i:] against output[j:]
        if i == len(quote):
            return j == len(output)
        if quote[i] == ELIDED:
            return any(match(i + 1, k) for k in range(j, len(output) + 1))
        return j < len(output) and line_matches(quote[i], output[j]) and match(i + 1, j + 1)

    return match(0, 0)


def test_the_rule_takes_what_is_left_out_and_nothing_else():
    out = ["Measured: 4,312 events, a 52.2 ms GPU span", "Time: aten::mm 97%", "Idle: 19%", "Caveat: x"]
    assert quote_matches(out, out)
    assert quote_matches([ELIDED, "Idle: 19%", ELIDED], out)
    assert quote_matches(["Measured: 4,312 events, ...", "...", "Caveat: x"], out)
    assert quote_matches(["Measured: ... a 52.2 ms GPU span", ELIDED], out)
    assert not quote_matches(["Measured: 4,312 events, a 52.1 ms GPU span", ELIDED], out)   # a stale number
    assert not quote_matches(out[:3], out)                       # a line left out without saying so
    assert not quote_matches([ELIDED, "Time: aten::mm 97%", "Caveat: x"], out)     # lines must be consecutive
    assert not quote_matches(["Measured: ... 52.2 ms ... 4,312", ELIDED], out)      # pieces in order
    assert line_matches("a `Sequential(...)` in ...", "a `Sequential(...)` in `train_step`")


# --- quoted output is the output ---------------------------------------------------------------------

def scratch_dir(tmp_path: Path) -> Path:
    """A working directory that sees the repository's files but keeps what a block writes."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git",):
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def run(command: str, cwd: Path) -> list[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONUNBUFFERED": "1", "TRACETRIAGE_DB": str(cwd / "predictions.db"), "TRACETRIAGE_QUIET": "1"}
    env.pop("TRACETRIAGE_SCHEDULER", None)
    p = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    return [line.rstrip() for line in p.stdout.splitlines()]


# The fast suite runs each page's first quote (every page's commands stay honest, the README's front door among
# them); the slow step runs the other dozen, which cost half a minute of a 2-core machine's fast suite.
FIRST_OF_EACH_PAGE = list({p: (p, n, b) for p, n, b in reversed(quotes())}.values())


@pytest.mark.parametrize("page,line,body", sweep(quotes(), FIRST_OF_EACH_PAGE,
                                                  ids=[f"{p}:{n}" for p, n, _ in quotes()]))
def test_every_quoted_output_is_what_the_command_prints_today(page, line, body, tmp_path):
    assert body and body[0].startswith(PROMPT), f"{page}:{line}: a console block starts with its `$ ` command"
    cwd = scratch_dir(tmp_path)
    for command, quote in commands(body):
        output = run(command, cwd)
        assert quote_matches(quote, output), (
            f"{page}:{line}: the quote of `{command}` is not what it prints now (rule: this file's docstring); "
            "it prints:\n" + "\n".join(output))


def test_no_quoted_output_escapes_the_check():
    """Output quoted in any other kind of block would go stale unseen."""
    loose = [f"{rel(p)}:{n}" for p in PAGES for lang, n, body in fenced_blocks(p)
             if lang != "console" and any(OUTPUT_LINE.match(x) for x in body)]
    assert loose == []


def test_the_readme_quotes_a_report_of_a_bundled_trace():
    (cmd, quote), = [c for page, _, body in quotes() if page == "README.md" for c in commands(body)]
    assert re.fullmatch(r"tracetriage report traces/[\w-]+\.json\.gz", cmd)
    assert [x.split(":")[0] for x in quote[:5]] == ["Measured", "Time", "Idle", "Regime", "Next"]


# --- links, paths and names ----------------------------------------------------------------------------

def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"#{1,6} (.+)", line)):
            s = slug(m.group(1))
            seen[s] = seen.get(s, -1) + 1
    return {s if i == 0 else f"{s}-{i}" for s, n in seen.items() for i in range(n + 1)}


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(page.read_text(encoding="utf-8")) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file_in_the_repository(page):
    for target in relative_links(page):
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        assert path.is_relative_to(ROOT), f"{page.name} links outside the repository: {target}"
        assert path.exists(), f"{page.name} links a missing file: {target}"
        if anchor:
            assert anchor in anchors(path), f"{page.name} links a missing heading: {target}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_names_a_file_above_the_repository(page):
    assert OUTSIDE.findall(page.read_text(encoding="utf-8")) == []


TOP = {p.name for p in ROOT.iterdir()}


def prose(page: Path) -> str:
    """The page without its fenced blocks (their commands are run, or are examples for the reader's files)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    fences = [i for i, line in enumerate(lines) if line.startswith("```")]
    inside = {i for a, b in zip(fences[::2], fences[1::2]) for i in range(a, b + 1)}
    return "\n".join(line for i, line in enumerate(lines) if i not in inside)


def written_paths(page: Path) -> list[str]:
    """Repository paths the page writes out in code spans (`analyzers/analyses/idle.py:classify()`)."""
    out = []
    for span in re.findall(r"`([^`]+)`", prose(page)):
        for word in span.split():
            path = word.strip("(),.;").split(":")[0]
            if "/" in path and path.split("/")[0] in TOP and not re.search(r"[A-Z]{3,}|\.\.\.", path):
                out.append(path)
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_path_a_page_names_exists(page):
    missing = [p for p in written_paths(page) if not (list(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())]
    assert missing == []


def named_objects(page: Path) -> list[str]:
    """`tracetriage.x.y` names in backticks, and the modules of `python -m X`."""
    text = prose(page)
    dotted = [re.match(r"[\w.]+", t).group(0).rstrip(".") for t in re.findall(r"`(tracetriage\.[\w.]+)", text)]
    names = dotted + re.findall(r"python -m ((?:tracetriage|tools)[\w.]*)", text)
    return sorted({n for n in names if not re.search(r"\.(?:[A-Z]+|py)$", n)})   # not tools.X, not a file name


def resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except ModuleNotFoundError:
            continue
        obj = importlib.import_module(module)
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_module_and_name_a_page_names_exists(page):
    assert [n for n in named_objects(page) if not resolves(n)] == []


def test_the_readme_links_the_docs_a_user_finds_by_task():
    links = {t.split("#")[0] for t in relative_links(README)}
    assert {f"docs/{p.name}" for p in DOCS.glob("*.md")} <= links


def test_the_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert re.findall(r"(?i)\bissue \d+|\b(?:this|last|earlier) (?:session|batch)\b", text) == []
    assert "The tests take about " in text and " minutes on a 2-core machine." in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_tells_the_projects_own_history(page):
    assert re.findall(r"(?i)\bissue \d+|\b(?:this|last|earlier) (?:session|batch)\b", page.read_text("utf-8")) == []


def test_the_docs_cover_every_subcommand():
    from tracetriage.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = [name for name in sub.choices if f"tracetriage {name}" not in text]
    assert missing == []


# --- figures the pages copy from the code ------------------------------------------------------------

def test_every_schema_version_the_pages_give_is_the_schemas():
    from tracetriage.analyzers.output.schema import SCHEMA_VERSION

    said = {v for p in PAGES for v in re.findall(r"schema_version\W{1,12}(?:now `)?(\d+\.\d+)", p.read_text("utf-8"))}
    assert said == {SCHEMA_VERSION}


def test_json_md_names_every_key_report_json_prints_and_every_enum_value():
    from tracetriage.analyzers.model import health, verdicts

    text = (DOCS / "json.md").read_text(encoding="utf-8")
    report = text.split("## `tracetriage report TRACE --json`")[1].split("\n## ")[0]
    out = json.loads(subprocess.run([sys.executable, "-m", "tracetriage", "report", "traces/gpt-graphs.json.gz",
                                     "--json"], cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    assert [k for k in out if f"`{k}`" not in report] == []
    values = [e.value for enum in (verdicts.Cause, verdicts.Regime, verdicts.Bound, verdicts.Construct,
                                   verdicts.Experiment, health.Problem, health.Verdict) for e in enum]
    assert [v for v in values if f"`{v}`" not in text] == []


def table_rows(page: Path, header: str) -> list[str]:
    return page.read_text(encoding="utf-8").split(header)[1].split("\n\n")[0].strip().splitlines()[1:]


def test_the_fix_table_is_what_the_traces_and_the_model_say_now():
    from tracetriage.analyzers.loading.load import load
    from tracetriage.analyzers.whatif import predict as whatif

    fixes = ROOT / "traces" / "fixes"
    measured = json.loads((fixes / "measured.json").read_text())["scenarios"]
    rows = table_rows(DOCS / "validation.md", "| lever | workload | predicted | measured |")
    assert len(rows) == sum(len(sc["ratio"]) for sc in measured.values())
    replays = {}
    for row in rows:
        lever, workload, predicted, spread = (c.strip() for c in row.strip("|").split("|"))
        lever, kind = lever.strip("`"), re.match(r"\w+", workload).group(0)
        replays.setdefault(kind, whatif.predict(load(fixes / f"{kind}--before.json.gz")))
        r = measured[kind]["ratio"][lever]
        assert (predicted, spread) == (f"{replays[kind].lever(lever).predicted_ratio:.2f}",
                                       f"{r['median']:.2f} [{r['p10']:.2f}–{r['p90']:.2f}]"), row


@pytest.mark.slow   # every real-world workload analysed and replayed (~4 s of a core); the fix table's test stays fast
def test_the_real_library_table_is_what_the_traces_and_the_model_say_now():
    """A change of prediction, of the report's Next or of the measurements shows here: rerun the tool, paste."""
    from tools.realworld_table import rows

    header = ("| lever | workload | predicted, profiled | measured, profiled | predicted, unprofiled "
              "| measured, unprofiled | report's Next |")
    assert table_rows(DOCS / "validation.md", header) == rows(ROOT / "traces" / "realworld")


def test_the_h200_tables_are_what_the_sidecars_hold():
    from tracetriage.capture import tables

    m = json.loads((ROOT / "traces" / "measurements.json").read_text())
    sweep = json.loads((ROOT / "traces" / "matmul-sweep-bf16.meta.json").read_text())
    printed = [tables.fusion_table(m), tables.matmul_table(sweep), tables.ceilings_table(m["ceilings"])]
    text = (DOCS / "validation.md").read_text(encoding="utf-8")
    assert [t.splitlines()[0] for t in printed if t not in text] == []
