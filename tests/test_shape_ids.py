"""decode's shape ids: one joined key per op row gives the ids and the table that three-bytes keys give."""
from operator import attrgetter
from pathlib import Path

import msgspec

from tracetriage.analyzers.loading import decode
from tracetriage.analyzers.loading.read import read_bytes

ROOT = Path(__file__).resolve().parents[1]


def _by_tuples(op_args):
    get = attrgetter
    keys = zip(map(bytes, map(get("dims"), op_args)), map(bytes, map(get("types"), op_args)),
               map(bytes, map(get("concrete"), op_args)))
    return decode._ids(keys, len(op_args))


def _op_args(path: Path) -> list:
    doc = msgspec.json.decode(read_bytes(path), type=decode._STRICT)
    return [e.args for e in doc.traceEvents if e.ph == "X" and e.cat == "cpu_op" and e.args is not None]


def test_joined_keys_number_every_op_row_as_three_bytes_keys_do_on_a_real_trace():
    op_args = _op_args(ROOT / "traces" / "gpt-compile.json.gz")
    ids, table = decode._shape_ids(op_args)
    want_ids, want_table = _by_tuples(op_args)
    assert len(want_table) > 50 and ids.tolist() == want_ids.tolist() and table == want_table


def test_a_text_holding_a_nul_falls_back_to_three_bytes_keys():
    raw = msgspec.Raw
    op_args = [decode._Args(dims=raw(b'[[1]]'), types=raw(b'["a\x00b"]'), concrete=raw(b'[""]')),
               decode._Args(dims=raw(b'[[1]]'), types=raw(b'["a"]'), concrete=raw(b'["b"]')),
               decode._Args(dims=raw(b'[[1]]'), types=raw(b'["a"]'), concrete=raw(b'["b"]'))]
    ids, table = decode._shape_ids(op_args)
    want_ids, want_table = _by_tuples(op_args)
    assert ids.tolist() == want_ids.tolist() == [0, 1, 1] and table == want_table
