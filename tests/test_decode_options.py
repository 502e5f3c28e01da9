"""tools.decode_options, the decoder's options measured side by side: each option decodes what it says it does.

Its figures are only worth comparing if every option read the same events: today's decoder the complete ones,
pyarrow every event but those it cannot type (string pids or tids, which a real torch trace always has: the
profiler's own spans). Counted here independently, with a plain JSON decode of the same file.
"""
import gzip
import json
from pathlib import Path

from tools import decode_options

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "traces" / "chain-eager-small.json.gz"   # Kineto's own pretty-printed text


def _events() -> list[dict]:
    return json.loads(gzip.decompress(TRACE.read_bytes()))["traceEvents"]


def test_pyarrow_refuses_a_real_torch_trace_as_it_is_for_its_string_pids():
    r = decode_options.measure(TRACE, repeats=1)
    assert r["pretty"]
    assert "changed from number to string" in r["pyarrow_as_is"]


def test_every_option_is_measured_on_the_events_it_says_it_reads():
    r = decode_options.measure(TRACE, repeats=1)
    events = _events()
    typed = [e for e in events if not isinstance(e.get("pid"), str) and not isinstance(e.get("tid"), str)]
    complete = [e for e in typed if e.get("ph") == "X"]
    assert r["events"] == len(events)
    assert r["rows"] == {"msgspec": len(complete), "pyarrow": len(typed)}
    assert all(o["cpu_s"] >= 0 and o["wall_s"] >= 0 for o in r["options"].values())
    assert len(r["options"]) == 6


def test_a_compact_list_is_cut_at_every_separator_even_one_inside_a_string():
    body = b'{"ph":"X","name":"a},{b","pid":1},{"ph":"i","pid":"Traces"}'
    lines = decode_options.as_lines(body)
    assert lines.count(b"}\n{") == 2     # (the one inside a name is split too: pyarrow would then refuse the file)
    assert decode_options.without_string_ids(b'{"ph":"X","pid":1}\n{"ph":"i","pid":"Traces"}') == b'{"ph":"X","pid":1}'
