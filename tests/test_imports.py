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
        assert not (g[f"{A}.loading.{step}"] & later), f"{step} imports a later step: {g[f'{A}.loading.{step}'] & later}"


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
    bad = [(m, d) for m, deps in graph().items() if m.startswith(f"{A}.voice") for d in deps if not d.startswith(allowed)]
    assert bad == []


def test_dashboard_pages_read_the_analysis_through_data_and_speak_through_their_voice():
    for m, deps in graph().items():
        if m.startswith("tracetriage.dashboard.views"):
            outside = {d for d in deps if not d.startswith("tracetriage.dashboard.")}
            assert outside == set(), (m, outside)
