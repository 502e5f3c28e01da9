"""The report's and diff's exact output on every sample trace is pinned by tests/golden/.

A failure here means a sentence or a verdict changed. If the change is deliberate, run
`python tests/golden.py`, read `git diff tests/golden`, and name the change in the commit.
"""
import pytest

from golden import GOLDEN, cases, run_cli
from memo import analysed_once
from sweep import sweep
from test_invariants import FAST_SHARE, TRACES

# The biggest samples' files are the slow step's (each takes seconds); every other trace's stands for them here.
SLOW = ("gpt-eager", "smell-launch-per-param", "probe-transfer-many-small", "ddp", "ddp-skewed")


@pytest.fixture(scope="module", autouse=True)
def _text_and_json_of_one_analysis():
    with analysed_once():
        yield


def _fast(rel: str) -> bool:
    """A diff whose before-trace is not one of the SLOW; a report of a sample of the sweeps' fast share (the smallest of
    each family, tests/test_invariants.py): the other samples' reports are the slow step's."""
    kind, name = rel.split("/")
    stem = name.rsplit(".", 1)[0]
    if kind == "diff":
        return stem.split("--")[0] not in SLOW
    return stem in _FAST_SAMPLES and stem not in SLOW


_FAST_SAMPLES = {p.name.split(".")[0] for p in FAST_SHARE if p.parent == TRACES}
FAST = [(rel, argv) for rel, argv in cases() if _fast(rel)]


@pytest.mark.parametrize("rel,argv", sweep(cases(), FAST, ids=[rel for rel, _ in cases()]))
def test_output_matches_its_golden_file(rel, argv):
    expected = (GOLDEN / rel).read_text(encoding="utf-8")
    assert run_cli(argv) == expected, f"{rel} changed; if deliberate: python tests/golden.py && git diff tests/golden"


def test_every_sample_trace_has_golden_files():
    names = {rel for rel, _ in cases()}
    on_disk = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*") if p.is_file()}
    assert on_disk == names, f"stale or missing golden files: {sorted(on_disk ^ names)}"
