"""The report's and diff's exact output on every sample trace is pinned by tests/golden/.

A failure here means a sentence or a verdict changed. If the change is deliberate, run
`python tests/golden.py`, read `git diff tests/golden`, and name the change in the commit.
"""
import pytest

from golden import GOLDEN, cases, run_cli
from memo import analysed_once
from sweep import sweep

# The biggest samples' files are the slow step's (each takes seconds); every other trace's stands for them here.
SLOW = ("gpt-eager", "smell-launch-per-param", "probe-transfer-many-small", "ddp", "ddp-skewed")


@pytest.fixture(scope="module", autouse=True)
def _text_and_json_of_one_analysis():
    with analysed_once():
        yield


FAST = [(rel, argv) for rel, argv in cases() if rel.split("/")[1].split(".")[0].split("--")[0] not in SLOW]


@pytest.mark.parametrize("rel,argv", sweep(cases(), FAST, ids=[rel for rel, _ in cases()]))
def test_output_matches_its_golden_file(rel, argv):
    expected = (GOLDEN / rel).read_text(encoding="utf-8")
    assert run_cli(argv) == expected, f"{rel} changed; if deliberate: python tests/golden.py && git diff tests/golden"


def test_every_sample_trace_has_golden_files():
    names = {rel for rel, _ in cases()}
    on_disk = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*") if p.is_file()}
    assert on_disk == names, f"stale or missing golden files: {sorted(on_disk ^ names)}"
