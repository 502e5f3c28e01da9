"""An optimizer step's state made per parameter (zeros_like's fills inside Optimizer.step) is not the per-parameter
work a fused step removes: fused=True initialises state per parameter too. Was: fresh12
distilbert_optimizer_rebuilt_each_step (AdamW rebuilt each step: 208 zeros_like fills per step beside its foreach
passes) was told 'a one-line knob is in hand first: torch.optim.AdamW(..., fused=True (or foreach=True)) in place of
its per-parameter kernels, predicted −17%', though the trace shows the foreach passes already."""
from __future__ import annotations

from kineto_factory import annotation, call, document, gpu, op, write
from tracetriage.analyzers.triage.report import analyze_file
from tracetriage.analyzers.voice.report import five_lines

US = 1000


def _steps(tmp_path, fills_made_by: str):
    """3 iterations: 30 forward kernels, then an AdamW step whose 40 per-parameter fills run inside `fills_made_by`
    (aten::zeros_like: state made; aten::add_: none) and 4 foreach passes."""
    ev, t, g, i = [], 0, 0, 1

    def launch(name, kernel_us, parent=None):
        nonlocal t, g, i
        if parent:
            ev.append(op(parent, t, t + 9 * US))
        ev.extend([op(name, t + US, t + 8 * US, i), call("cudaLaunchKernel", t + 2 * US, t + 6 * US, corr=i, ext=i),
                   gpu("void k_" + name.split("::")[-1] + "(float*)", g + 5 * US, g + 5 * US + kernel_us * US, i)])
        t, g, i = t + 10 * US, max(g + 5 * US + kernel_us * US, t + 10 * US), i + 1

    for step in range(3):
        begin = t
        for _ in range(30):
            launch("aten::mm", 8)
        opt = t
        for _ in range(40):
            launch("aten::fill_", 2, parent=fills_made_by)
        for _ in range(4):
            launch("aten::_foreach_addcdiv_", 20)
        ev.append(annotation("Optimizer.step#AdamW.step", opt, t))
        ev.append(annotation(f"ProfilerStep#{step}", begin, t + US))
    return analyze_file(write(tmp_path / f"adamw_{fills_made_by[6:]}.json", document(ev)))


def test_state_made_inside_the_step_is_not_priced_as_per_parameter_kernels(tmp_path):
    a = _steps(tmp_path, "aten::zeros_like")
    lever = a.levers.all.lever("fused_optimizer").assumption
    assert lever.foreach_already, lever     # the step is foreach already: its passes are what fused=True changes
    assert "in place of its per-parameter kernels" not in five_lines(a)[4]


def test_per_parameter_updates_stay_priced(tmp_path):
    a = _steps(tmp_path, "aten::mul_")
    lever = a.levers.all.lever("fused_optimizer").assumption
    assert not lever.foreach_already and lever.kernels_per_step >= 40
