"""The package's import graph: loading flows one way, no cycles, no private names across modules.

Walks the source (ast), not the running interpreter, so imports inside functions count too.
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("analyzers", "tracetriage", "drills", "dashboard", "capture", "kernels")
LOADING = ["read", "decode", "assemble", "link", "cache", "load"]   # the pipeline, in data-flow order


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[str, list[str]]]:
    """(module imported, names taken from it) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names]))
    return out


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
                if target.split(".")[0] in PACKAGES:
                    bad += [f"{p.relative_to(ROOT)}: from {target} import {n}" for n in names
                            if n.startswith("_") and not n.startswith("__")]
    assert bad == []


def test_the_trace_model_imports_no_step_of_loading():
    assert graph()["analyzers.model.trace"] & {f"analyzers.loading.{m}" for m in LOADING} == set()


def test_loading_flows_one_way():
    """Each step imports only steps before it (and the model), never one after it."""
    g = graph()
    for i, step in enumerate(LOADING):
        later = {f"analyzers.loading.{m}" for m in LOADING[i + 1:]}
        assert not (g[f"analyzers.loading.{step}"] & later), f"{step} imports a later step: {g[f'analyzers.loading.{step}'] & later}"


def test_analyzers_never_import_capture_dashboard_or_drills():
    g = graph()
    for m, deps in g.items():
        if m.startswith("analyzers"):
            assert not {d for d in deps if d.split(".")[0] in ("capture", "dashboard", "drills")}, m


# --- the layers of analyzers/, in data-flow order -------------------------------------------------

LAYERS = ["model", "loading", "analyses", "whatif", "triage", "voice", "output"]


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if parts[0] == "analyzers" and len(parts) > 1 and parts[1] in LAYERS else None


def test_analyzers_is_its_layer_folders_and_the_tools_beside_them():
    top = ROOT / "analyzers"
    assert sorted(p.name for p in top.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(LAYERS + ["tools"])
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
    assert layer_of("analyzers.model.trace") < layer_of("analyzers.triage.report")
    assert layer_of("analyzers.tools.grow") is None and layer_of("dashboard.data") is None


def test_voice_reads_decisions_and_makes_none():
    """The words import the model (formats, enums, evidence types), the lever specs' words and each
    other; never an analysis, the triage or the replay, whose thresholds would decide for them."""
    for m, deps in graph().items():
        if m.startswith("analyzers.voice"):
            allowed = ("analyzers.model.", "analyzers.voice.", "analyzers.whatif.levers")
            assert all(d.startswith(allowed) for d in deps if d.startswith("analyzers")), (m, deps)


def test_dashboard_pages_read_the_analysis_through_data_and_speak_through_their_voice():
    for m, deps in graph().items():
        if m.startswith("dashboard.views"):
            outside = {d for d in deps if not d.startswith("dashboard.")}
            assert outside <= {"analyzers.voice.dashboard"}, (m, outside)
