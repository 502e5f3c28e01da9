"""The package's import graph: loading flows one way, no cycles, no private names across modules.

Walks the source (ast), not the running interpreter, so imports inside functions count too.
"""
import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The repository's folders and the names they are installed under (pyproject's package-dir); tools/ is
# the developers' and is not installed.
INSTALLED_AS = {"tracetriage": "tracetriage", "analyzers": "tracetriage.analyzers", "capture": "tracetriage.capture",
                "kernels": "tracetriage.kernels", "dashboard": "tracetriage.dashboard", "drills": "tracetriage.drills",
                "tools": "tools"}
PACKAGES = tuple(INSTALLED_AS)
GENERIC = ("analyzers", "capture", "kernels", "dashboard", "drills")   # names other projects own on the index
LOADING = ["read", "decode", "assemble", "link", "cache", "load"]   # the pipeline, in data-flow order
A = "tracetriage.analyzers"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    return ".".join([INSTALLED_AS[parts[0]], *parts[1:]])


@functools.cache
def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    """(module imported, names taken from it) for every import in the file (parsed once per session)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names]))
    return out


@functools.cache
def graph() -> dict[str, set[str]]:
    mods = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    g: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for target, names in imports_of(p):
            for cand in [f"{target}.{n}" for n in names] + [target]:
                if cand in mods and cand != m:
                    g[m].add(cand)
                    break
    return g


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(g[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if state.get(n) is None and (c := visit(n)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(g):
        if state.get(m) is None and (c := visit(m)):
            return c
    return None


def test_no_import_cycle_anywhere():
    assert find_cycle(graph()) is None, " -> ".join(find_cycle(graph()))


def test_the_walk_would_see_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_private_name_is_imported_from_another_module():
    bad = []
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*.py"):
            for target, names in imports_of(p):
                if target.split(".")[0] in ("tracetriage", "tools"):
                    bad += [f"{p.relative_to(ROOT)}: from {target} import {n}" for n in names
                            if n.startswith("_") and not n.startswith("__")]
    assert bad == []


def test_nothing_imports_a_generic_top_level_name():
    """analyzers, capture, kernels, dashboard and drills exist only as tracetriage.*: a bare import would
    find another project's package, or none (and two names for one module would split its enums)."""
    ours = [d for d in ROOT.iterdir() if d.is_dir() and not d.name.startswith(".")]     # not .venv/, .git/
    bad = [f"{p.relative_to(ROOT)}: {target}" for p in [p for d in ours for p in d.rglob("*.py")]
           for target, _ in imports_of(p) if target.split(".")[0] in GENERIC]
    assert bad == []


def test_the_trace_model_imports_no_step_of_loading():
    assert graph()[f"{A}.model.trace"] & {f"{A}.loading.{m}" for m in LOADING} == set()


def test_loading_flows_one_way():
    """Each step imports only steps before it (and the model), never one after it."""
    g = graph()
    for i, step in enumerate(LOADING):
        later = {f"{A}.loading.{m}" for m in LOADING[i + 1:]}
        assert not (g[f"{A}.loading.{step}"] & later), \
            f"{step} imports a later step: {g[f'{A}.loading.{step}'] & later}"


def test_analyzers_never_import_capture_dashboard_or_drills():
    bad = [(m, d) for m, deps in graph().items() if m.startswith(A) for d in deps if not d.startswith(A)]
    assert bad == []


# --- the floors of the house, bottom up ---------------------------------------------------------------
# The engine at the bottom; the kernels beside it; capture (which runs kernels and checks its traces with
# the engine); the drills over the engine; the dashboard over both (its Practice page shows the drills);
# the CLI and the Python API on top; the developers' tools/ outside the installed package, free to use any
# of it. An arrow may only point down (or along a floor).

FLOORS = [(A,), ("tracetriage.kernels",), ("tracetriage.capture",), ("tracetriage.drills",), ("tracetriage.dashboard",),
          ("tracetriage",), ("tools",)]


def floor_of(module: str) -> int:
    """The floor of the longest name the module starts with (tracetriage.drills.bank is the apps', not the CLI's)."""
    _, floor = max((len(n), i) for i, names in enumerate(FLOORS) for n in names
                   if module == n or module.startswith(n + "."))
    return floor


def test_no_import_runs_back_up_a_floor():
    bad = [f"{m} imports {d}" for m, deps in graph().items() for d in deps if floor_of(d) > floor_of(m)]
    assert bad == []


def test_the_floor_check_would_see_an_arrow_up():
    assert floor_of("tracetriage.dashboard.data") > floor_of(f"{A}.runs.pool")
    assert floor_of("tracetriage.cli") > floor_of("tracetriage.drills.bank") > floor_of(f"{A}.model.trace")
    assert floor_of("tools.benchmark") == len(FLOORS) - 1


# --- the layers of analyzers/, in data-flow order -------------------------------------------------

LAYERS = ["model", "loading", "analyses", "whatif", "triage", "voice", "output", "runs"]


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] != ["tracetriage", "analyzers"] or len(parts) < 3 or parts[2] not in LAYERS:
        return None
    return LAYERS.index(parts[2])


def test_analyzers_is_its_layer_folders():
    top = ROOT / "analyzers"
    assert sorted(p.name for p in top.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS)
    assert [p.name for p in top.glob("*.py")] == ["__init__.py"]


def test_each_layer_says_in_its_docstring_what_it_owns():
    for layer in LAYERS:
        doc = ast.get_docstring(ast.parse((ROOT / "analyzers" / layer / "__init__.py").read_text()))
        assert doc and len(doc) > 120, layer


def test_no_layer_imports_a_later_one():
    bad = [f"{m} ({LAYERS[layer_of(m)]}) imports {d} ({LAYERS[layer_of(d)]})"
           for m, deps in graph().items() for d in deps
           if layer_of(m) is not None and layer_of(d) is not None and layer_of(d) > layer_of(m)]
    assert bad == []


def test_the_layer_check_would_see_an_upward_import():
    assert layer_of(f"{A}.model.trace") < layer_of(f"{A}.triage.report") < layer_of(f"{A}.runs.pool")
    assert layer_of("tools.grow") is None and layer_of("tracetriage.dashboard.data") is None


def test_voice_reads_decisions_and_makes_none():
    """The words import the model (formats, enums, evidence types), the lever specs' words and each
    other; never an analysis, the triage or the replay, whose thresholds would decide for them."""
    allowed = (f"{A}.model.", f"{A}.voice.", f"{A}.whatif.levers")
    bad = [(m, d) for m, deps in graph().items() if m.startswith(f"{A}.voice")
           for d in deps if not d.startswith(allowed)]
    assert bad == []


def test_dashboard_pages_read_the_analysis_through_data_and_speak_through_their_voice():
    for m, deps in graph().items():
        if m.startswith("tracetriage.dashboard.views"):
            outside = {d for d in deps if not d.startswith("tracetriage.dashboard.")}
            assert outside == set(), (m, outside)


def test_the_pages_frames_are_behind_one_door():
    """tracetriage.dashboard.data is the door: the frames of each page (tracetriage.dashboard.frames) are
    imported by it and by each other only, so a page, a chart or a tool reads one module."""
    door, frames = "tracetriage.dashboard.data", "tracetriage.dashboard.frames"
    bad = [f"{m} imports {d}" for m, deps in graph().items() for d in deps
           if d.startswith(frames) and m != door and not m.startswith(frames)]
    assert bad == []
    assert {d for d in graph()[door] if d.startswith("tracetriage.dashboard.")} >= \
        {f"{frames}.{p}" for p in ("report", "roofline", "timeline", "diff", "whatif", "ranks", "practice")}


MAX_LINES = 900   # a source file past this is split (dashboard/data.py by page, behind one door)


def test_no_source_file_is_over_900_lines():
    long = {str(p.relative_to(ROOT)): n for p in source_files()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these (one concept per module): {long}"


# --- one record per concept -------------------------------------------------------------------------

def source_files() -> list[Path]:
    """Every source file of ours (the installed folders, tools/ and tests/)."""
    return sorted(p for pkg in (*PACKAGES, "tests") for p in (ROOT / pkg).rglob("*.py"))


def test_a_host_threads_key_is_made_in_one_place():
    """(pid << 32) ^ tid keys set-up windows, construct windows and a lever's calls alike: one helper
    (tracetriage.analyzers.model.trace.thread_key), or two analyses' keys could stop comparing."""
    home = ROOT / "analyzers" / "model" / "trace.py"
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in source_files() if p != home and p.name != "test_imports.py"
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if "<< 32" in line and "0xFFFFFFFF" in line.upper()]
    assert bad == []


LOOKUPS = ("lever", "get", "spec_of")   # w.lever(NAME), by_name.get(NAME), spec_of(NAME)


def lever_literals(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """Where a lever's name is written as a string to compare or look up: `x.lever == "cuda_graphs"`,
    `x in ("fuse", ...)`, `w.lever("remove_syncs")`, `measured["ratio"]["fuse"]`."""
    def lit(x) -> list[str]:
        items = x.elts if isinstance(x, (ast.Tuple, ast.List, ast.Set)) else [x]
        return [e.value for e in items if isinstance(e, ast.Constant) and e.value in names]
    out = []
    for n in ast.walk(tree):
        found = []
        if isinstance(n, ast.Compare):
            found = [v for x in (n.left, *n.comparators) for v in lit(x)]
        elif isinstance(n, ast.Subscript):
            found = lit(n.slice)
        elif isinstance(n, ast.Call):
            f = n.func
            if (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)) in LOOKUPS:
                found = [v for a in n.args for v in lit(a)]
        out += [(n.lineno, v) for v in found]
    return out


def test_no_lever_is_singled_out_by_a_literal_outside_its_spec():
    """Code names a lever by its spec's fields (takes_only, experiment, idle_floor, headroom) or the registry's
    constants (REMOVE_SYNCS ...): a renamed lever then moves everywhere at once (tests may name them)."""
    from tracetriage.analyzers.whatif.levers import NAMES

    levers = ROOT / "analyzers" / "whatif" / "levers"
    bad = [f"{p.relative_to(ROOT)}:{line}: {name!r}" for p in source_files()
           if levers not in p.parents and p.parts[len(ROOT.parts)] != "tests"
           for line, name in lever_literals(ast.parse(p.read_text(encoding="utf-8")), set(NAMES))]
    assert bad == []


def test_the_literal_check_would_see_a_lever_compared_or_looked_up():
    code = 'a = x.lever == "cuda_graphs"\nb = w.lever("fuse")\nc = m["ratio"]["warm_up"]\nd = v in ("kernels_2x",)'
    assert [n for _, n in lever_literals(ast.parse(code), {"cuda_graphs", "fuse", "warm_up", "kernels_2x"})] == \
        ["cuda_graphs", "fuse", "warm_up", "kernels_2x"]


SUFFIX_CALLS = ("endswith", "removesuffix", "split", "rsplit", "partition")


def suffix_rules(tree: ast.AST, suffixes: set[str]) -> list[int]:
    """Lines that test or strip a trace suffix by hand: name.endswith(".json"), .split(".json"),
    for s in (".json.gz", ".json")."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in SUFFIX_CALLS:
            args = [e for a in n.args for e in (a.elts if isinstance(a, ast.Tuple) else [a])]
            out += [n.lineno for a in args if isinstance(a, ast.Constant) and a.value in suffixes]
        elif isinstance(n, (ast.Tuple, ast.List)) and len(n.elts) > 1 and \
                {getattr(e, "value", None) for e in n.elts} <= suffixes:
            out.append(n.lineno)
    return out


def test_which_names_a_trace_goes_by_is_one_rule():
    """A trace's suffixes, its stem and its sidecar's name are tracetriage.analyzers.loading.formats': listing,
    side inputs, rank sources, the library, the drills and the downloads ask it (capture, which writes traces
    under a name of its choosing, aside)."""
    from tracetriage.analyzers.loading.formats import FORMATS

    home = ROOT / "analyzers" / "loading" / "formats.py"
    suffixes = {s for f in FORMATS for s in f.suffixes}
    bad = [f"{p.relative_to(ROOT)}:{line}" for pkg in ("analyzers", "dashboard", "drills", "tracetriage")
           for p in sorted((ROOT / pkg).rglob("*.py")) if p != home
           for line in suffix_rules(ast.parse(p.read_text(encoding="utf-8")), suffixes)]
    assert bad == []


def test_the_suffix_check_would_see_a_name_tested_by_hand():
    code = 'a = n.endswith(".json")\nb = n.split(".json")[0]\nfor s in (".json.gz", ".json"):\n    pass'
    assert sorted(suffix_rules(ast.parse(code), {".json", ".json.gz"})) == [1, 2, 3]
