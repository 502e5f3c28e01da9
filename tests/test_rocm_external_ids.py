"""A runtime call whose External id names no op around it is said with the cause the trace shows: on a ROCm trace
(roctracer under Kineto: no correlation key at all) each HIP call's External id is its own id, the one its kernel
carries, not an op's; torch 2.0/2.1's correlation id written there is a CUDA trace's story. TraceLens's gemm01 (an
MI300X) read "30 of 32 runtime calls carry an External id that names no op around them (torch 2.0/2.1 wrote the
correlation id there ...)"."""
from kineto_factory import PID, TID, _dur, _us, document, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.voice.common import caveat

US = 1_000


def _x(cat: str, name: str, start: int, end: int, args: dict, pid=PID, tid=TID) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": _us(start, "torch2"),
            "dur": _dur(end - start, "torch2"), "args": args}


def rocm_products(n: int = 4) -> dict:
    """n aten::mm ops, each making a hipExtModuleLaunchKernel whose External id is its own (shared with its kernel,
    no correlation key anywhere), as roctracer writes them."""
    ev = []
    for i in range(n):
        t, own = 100 * US + 50 * US * i, 25 + i
        ev.append(_x("cpu_op", "aten::mm", t, t + 20 * US,
                     {"External id": 513 + i, "Input Dims": [[1024, 1024], [1024, 1024]],
                      "Input type": ["c10::BFloat16", "c10::BFloat16"]}))
        ev.append(_x("cuda_runtime", "hipExtModuleLaunchKernel", t + 5 * US, t + 10 * US, {"External id": own}))
        ev.append(_x("kernel", "Cijk_Ailk_Bljk_BBS_BH_MT256x128x64_MI16x16x16x1", t + 15 * US, t + 45 * US,
                     {"External id": own, "device": 0, "stream": 0}, pid=0, tid=0))
    doc = document(ev)
    doc["deviceProperties"][0]["name"] = "AMD Instinct MI300X"
    return doc


def test_a_rocm_traces_own_ids_are_not_said_to_be_torch_2_0s_bug(tmp_path):
    tr = load(write(tmp_path / "rocm.json", rocm_products()), use_cache=False)
    kinds = {c.kind: c for c in tr.caveats}
    assert "external_id_by_time" not in kinds
    c = kinds["external_id_own_id"]
    assert (c.count, c.total) == (4, 4)
    said = caveat(c)
    assert "torch 2.0/2.1" not in said
    assert said == ("4 of 4 runtime calls carry an External id that names no op around them (a ROCm trace: each HIP "
                    "runtime call's External id is its own, shared with the activity it launches, not its op's): "
                    "each is charged to the op that encloses it on its thread")
    assert (tr.launch_of[tr.ev.cat == 6] >= 0).all()     # each kernel still linked to its call by that id
