"""Install weight (issue 31): analysing a trace needs no Triton (a 1 GB wheel). The `kernels` extra brings it, for
tracetriage.kernels and the capture presets that run them; `dev` brings it for the tests, which run the kernels on
the CPU (TRITON_INTERPRET=1)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# `import triton` then raises ImportError, as on a machine where it is not installed
NO_TRITON = "import sys; sys.modules['triton'] = None\n"


def _requirement_names(reqs: list[str]) -> set[str]:
    return {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip() for r in reqs}


def test_triton_is_the_kernels_extra_and_dev_brings_it_with_the_tests():
    extras = PROJECT["optional-dependencies"]
    assert "triton" not in _requirement_names(PROJECT["dependencies"])
    assert "torch>=2.4" in PROJECT["dependencies"]
    assert _requirement_names(extras["kernels"]) == {"triton"}
    assert "tracetriage[test,kernels]" in extras["dev"]


def test_only_the_kernels_import_triton():
    """Everywhere else (the analysis, the dashboard, the drills, the CLI, capture) reaches Triton only through
    tracetriage.kernels, and only capture imports those; capture.harness asks for triton's version, if any."""
    importers = set()
    for folder in ("analyzers", "dashboard", "drills", "tracetriage", "capture"):
        for p in (ROOT / folder).rglob("*.py"):
            text = p.read_text(encoding="utf-8")
            if "triton" not in text and "kernels" not in text:        # (no need to parse it)
                continue
            for node in ast.walk(ast.parse(text)):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(n.split(".")[0] == "triton" or n.startswith("tracetriage.kernels") for n in names):
                    importers.add(str(p.relative_to(ROOT)))
    assert importers == {"capture/chain.py", "capture/softmax.py", "capture/sweeps.py", "capture/harness.py"}


def test_report_whatif_diff_and_annotate_run_without_triton(tmp_path):
    """(That the drills and the dashboard cannot reach Triton either, test_only_the_kernels_import_triton pins for
    every module.)"""
    t = "traces/chain-triton-small.json.gz"
    code = NO_TRITON + (
        "from tracetriage.cli import main\n"
        f"for argv in (['report', {t!r}], ['whatif', {t!r}], ['diff', 'traces/chain-eager-small.json.gz', {t!r}],\n"
        f"             ['annotate', {t!r}, '--out', {str(tmp_path / 'a.json.gz')!r}]):\n"
        "    assert main(argv) == 0, argv\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]


def test_a_triton_preset_without_triton_is_one_error_line_naming_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "triton", None)         # (this process imported it: the import now fails)
    for name in [m for m in sys.modules if m.startswith(("tracetriage.kernels", "tracetriage.capture.chain"))]:
        monkeypatch.delitem(sys.modules, name)               # imported again, without Triton
    from tracetriage.cli import main

    out = tmp_path / "c.json.gz"
    assert main(["capture", "chain-triton-small", "--device", "cpu", "--out", str(out)]) == 2
    assert capsys.readouterr().err == ("error: chain-triton-small needs Triton, which is not installed: "
                                       "pip install 'tracetriage[kernels]'\n")
    assert not out.exists()


def test_every_preset_names_its_workload_by_its_installed_module():
    """`capture PRESET` run from any directory: a bare `capture.chain` is found only from the repository's root."""
    from tracetriage.capture.presets import PRESETS

    mods = {p.workload_class().__module__ for p in PRESETS.values()}
    assert mods and all(m.startswith("tracetriage.capture.") for m in mods), mods
