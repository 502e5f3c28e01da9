"""autocast's lever on an op whose input is a TensorList: torch.einsum records its operands as one argument of
several tensors' dims ([[], [[16384, 256], [16384, 9, 256]], []]); each is cast on its own.

An H100 skip-gram step (knobs5 maxnorm_skipgram, its scores by torch.einsum) made the report end in an internal
failure: the lever multiplied the nested dims as one array.
"""
from __future__ import annotations

from kineto_factory import Launch, document, events_for, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif

OPERANDS = [[16384, 256], [16384, 9, 256]]


def _einsums(tmp_path, n: int = 6):
    """n fp32 einsums of 300 us each, queued back to back, their operands recorded as one TensorList."""
    launches = [Launch(op_start=10_000 + 30_000 * i, op_end=10_000 + 30_000 * i + 20_000,
                       call_start=10_000 + 30_000 * i + 5_000, call_end=10_000 + 30_000 * i + 15_000,
                       gpu_start=50_000 + 300_000 * i, gpu_end=50_000 + 300_000 * i + 295_000,
                       kernel="ampere_sgemm_128x64_nn", op="aten::einsum") for i in range(n)]
    events = events_for(launches)
    for e in events:
        if e.get("name") == "aten::einsum":
            e["args"]["Input Dims"] = [[], OPERANDS, []]
            e["args"]["Input type"] = ["", "TensorList", ""]
    return write(tmp_path / "einsums.json", document(events))


def test_an_einsums_tensor_list_counts_as_its_tensors_cast_to_bf16(tmp_path):
    r = whatif.predict(load(_einsums(tmp_path)), ["autocast_bf16"])
    a = r.levers[0].assumption
    # six einsums priced; the first casts both operands (its input was fp32), each later one its second operand
    # (an fp32 "parameter" to this lever): 2 + 5 casts
    assert a.count == 6 and a.casts == 7
    assert r.levers[0].predicted_ratio < 0.5          # 1.77 ms of fp32 SGEMM at bf16's rate
