"""autograd's sequence numbers: an op recorded while grad mode is on carries one ("Sequence number"), kept per op row
through the strict and the lenient decoder and the cache; the evidence that a forward ran with autograd recording."""
import pytest

from kineto_factory import document, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.trace import NONE


def _ops(odd: bool) -> list[dict]:
    ev = [op("aten::linear", 0, 10_000, 1, **{"Sequence number": 41}),
          op("aten::addmm", 1_000, 9_000, 2, **{"Sequence number": 41}),
          op("aten::relu", 11_000, 12_000, 3)]                       # under no_grad / inference_mode: none
    if odd:                 # a string ts: the strict decoder refuses the file, the lenient one reads it
        ev.append({"ph": "X", "cat": "cpu_op", "name": "odd", "pid": 1, "tid": 1, "ts": "soon", "dur": 1})
    return ev


@pytest.mark.parametrize("odd", [False, True], ids=["strict", "lenient"])
def test_each_op_keeps_its_autograd_sequence_number(tmp_path, odd, monkeypatch):
    monkeypatch.setenv("TRACETRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path / "t.json.gz", document(_ops(odd)))
    for _ in range(2):                                   # the JSON, then the cache
        tr = load(path)
        seq = {tr.name_of(i): int(tr.ev.seq[i]) for i in range(len(tr.ev)) if tr.name_of(i).startswith("aten::")}
        assert seq == {"aten::linear": 41, "aten::addmm": 41, "aten::relu": NONE}

