"""tools.native_scan_probe: the native scan it measures reads the same columns as today's decoder.

The probe's figure (what a decoder with no Python object per event costs) is only worth quoting if that decoder
decodes: every column and table it covers is compared with tracetriage.analyzers.loading.decode's on real traces.
"""
import shutil
from pathlib import Path

import pytest

from tools import native_scan_probe

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="the probe compiles tools/native_scan/scan.c with the system's C compiler")


@pytest.mark.parametrize("name", ["chain-eager-small.json.gz", "smell-sync-item.json.gz"])
def test_the_native_scan_reads_every_column_it_covers_as_todays_decoder_does(name):
    r = native_scan_probe.measure(ROOT / "traces" / name, repeats=1)
    assert r["rows"] > 1000
    assert [k for k, same in r["same"].items() if not same] == []
