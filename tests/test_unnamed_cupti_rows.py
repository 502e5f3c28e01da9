"""CUPTI rows of an unnamed kind ("Unrecognized", an older CUPTI beside a newer driver) are CUDA's lazy module loading
where the call around them needs a kernel's module and records no activity a buffer would hold
(cudaFuncGetAttributes, an occupancy query, a symbol's address) or is its kernel's first launch: CS521-mp2's cold conv
traces on an A10G (56 rows, 42 ms, 30 inside cudaFuncGetAttributes) read "the profiler's own activity-buffer requests
... not your code", and their set-up was counted without them (77% of the span where it was 98%). Hand-built trace."""
from __future__ import annotations

from kineto_factory import call, document, gpu, op, write
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.model.cupti_rows import lazy_loading_rows, profiler_own_rows

US = 1_000


def _unnamed(start: int, end: int) -> dict:
    row = call("x", start, end)
    return {**row, "cat": "overhead", "name": "Unrecognized", "pid": -1, "tid": 0, "args": {}}


def _cold(tmp_path):
    """A query of the kernel's attributes holding an unnamed row (module loading), the kernel's first launch holding
    one, and its second launch holding one (no module to load: the profiler's)."""
    ev = [op("aten::mm", 0, 3_000 * US, ext=1),
          call("cudaFuncGetAttributes", 10 * US, 1_000 * US), _unnamed(20 * US, 990 * US),
          call("cudaLaunchKernel", 1_100 * US, 2_900 * US, 1, 1), _unnamed(1_200 * US, 2_800 * US),
          gpu("ampere_sgemm_32x32_sliced1x4_tn", 2_950 * US, 2_960 * US, 1),
          op("aten::mm", 3_100 * US, 3_500 * US, ext=2),
          call("cudaLaunchKernel", 3_110 * US, 3_400 * US, 2, 2), _unnamed(3_120 * US, 3_390 * US),
          gpu("ampere_sgemm_32x32_sliced1x4_tn", 3_450 * US, 3_460 * US, 2)]
    return load(write(tmp_path / "cold.json.gz", document(ev)))


def test_unnamed_rows_inside_a_module_query_or_a_first_launch_are_lazy_loading(tmp_path):
    t = _cold(tmp_path)
    lazy = lazy_loading_rows(t)
    assert len(lazy) == 2
    assert sorted(int(t.ev.start[r] - t.ev.start[lazy].min()) for r in lazy) == [0, 1_180 * US]


def test_an_unnamed_row_inside_a_later_launch_stays_the_profilers(tmp_path):
    t = _cold(tmp_path)
    own = profiler_own_rows(t)
    assert len(own) == 1
    assert int(t.ev.end[own[0]] - t.ev.start[own[0]]) == 270 * US
