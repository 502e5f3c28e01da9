"""The knob a trace's construct names when the fix deletes ops: torch.distributions' argument validation read on the
host (validate_args=False, and no CUDA graphs advised before it), a loss written over a one-hot target
(F.cross_entropy), nn.Embedding's max_norm renormalising each table on every lookup (max_norm=None, and no "one
call" for lookups that go to different tables), each found on a small synthetic trace that shows it, and not where a
look-alike shows something else (a flag tensor's .all() in an if, a NaN guard, a one-hot used as a mask, one renorm,
a loop over one table)."""
from test_loop_knobs import FLOAT, Timeline, _context
from tracetriage.analyzers.output import claims, serialize
from tracetriage.analyzers.triage.report import analyze_trace
from tracetriage.analyzers.whatif import predict as whatif
from tracetriage.analyzers.whatif.levers import (
    BATCH_ITEMS,
    CROSS_ENTROPY,
    CUDA_GRAPHS,
    EMBEDDING_MAX_NORM,
    VALIDATE_ARGS,
    VALUE_CHECKS,
    cross_entropy,
    embedding_max_norm,
    slice_loops,
    validate_args,
)

BF16 = "c10::BFloat16"
LOGITS = [8, 512, 50257]


class Typed(Timeline):
    """Timeline whose ops may carry their own input types, and ops that hold others (an autograd node)."""

    def typed(self, name: str, dims: list, types: list, launches: bool = True, sync: bool = False) -> None:
        at = len(self.ev)
        self.op(name, dims, launches=launches, sync=sync)
        self.ev[at]["args"]["Input type"] = types

    def around(self, name: str, body) -> None:
        from kineto_factory import op
        start = self.t
        body()
        self.ev.append(op(name, start - 500, self.t - 500, self.ext))
        self.ext += 1


# --- validate_args ----------------------------------------------------------------------------------------------

def _categorical_step(tl: Typed, check: str = "aten::eq", reduce: str = "aten::_is_all_true") -> None:
    """One env step of a rollout: the policy's GEMM, Categorical(logits=...)'s check of its logits, a sample."""
    tl.op("aten::addmm", [[18], [2048, 256], [256, 18]])
    tl.op("aten::sub", [[2048, 18], [2048, 1]])
    tl.typed(check, [[2048, 18], [2048, 18]], [FLOAT, FLOAT])
    tl.typed("aten::all", [[2048, 18], [], []], ["bool", "Scalar", "Scalar"])
    tl.typed(reduce, [[2048]], ["bool"])
    tl.typed("aten::is_nonzero", [[]], ["bool"], launches=False, sync=True)
    tl.op("aten::softmax", [[2048, 18]])
    tl.op("aten::multinomial", [[2048, 18]])
    tl.op("aten::tanh", [[2048, 64]])


def test_distribution_argument_checks_are_found_priced_and_named_validate_args(tmp_path):
    tl = Typed()
    tl.step(lambda: [_categorical_step(tl) for _ in range(16)])
    tr = tl.trace(tmp_path)
    assert len(validate_args.find(_context(tr))) == 16
    lv = whatif.predict(tr, [VALIDATE_ARGS, VALUE_CHECKS])
    a = lv.lever(VALIDATE_ARGS).assumption
    assert (a.count, a.per_step, a.launches) == (16, 16, 48)       # eq, all, _is_all_true: three kernels a check
    assert "16 checks of torch.distributions' argument validation" in validate_args.says(a)
    assert lv.lever(VALIDATE_ARGS).saving_ns > 0
    assert lv.lever(VALUE_CHECKS).assumption.count == 0             # no NaN predicate: not value_checks' construct
    assert "set_default_validate_args(False)" in validate_args.CHANGE
    assert validate_args.blocks_graphs(a)


def test_the_report_names_validate_args_never_cuda_graphs_beside_the_reads_and_its_claims_hold(tmp_path):
    tl = Typed()
    tl.step(lambda: [_categorical_step(tl) for _ in range(40)])
    out = serialize.report(analyze_trace(tl.trace(tmp_path)))
    assert out["next_experiment"]["whatif_lever"] == VALIDATE_ARGS
    nxt = out["lines"][4]
    assert "validate_args=False" in nxt and "reduce-overhead" not in nxt
    assert out["next_experiment"]["whatif_lever"] != CUDA_GRAPHS
    assert claims.check(out) == []


def test_a_flag_tensors_all_in_an_if_and_a_nan_guard_are_not_argument_validation(tmp_path):
    tl = Typed()

    def body():
        for _ in range(16):
            tl.op("aten::addmm", [[18], [2048, 256], [256, 18]])
            tl.typed("aten::all", [[2048]], ["bool"])                 # `if done.all(): break`: no comparison checked
            tl.typed("aten::is_nonzero", [[]], ["bool"], launches=False, sync=True)
            tl.op("aten::isnan", [[2048, 18]])                        # a NaN guard: value_checks' construct
            tl.typed("aten::eq", [[2048, 18], [2048, 18]], [FLOAT, FLOAT])
            tl.typed("aten::any", [[2048, 18]], ["bool"])
            tl.typed("aten::is_nonzero", [[]], ["bool"], launches=False, sync=True)
    tl.step(body)
    assert validate_args.find(_context(tl.trace(tmp_path))) == []


def test_a_comparisons_all_read_in_an_if_is_a_decision_not_argument_validation(tmp_path):
    """Hugging Face's `if (attention_mask == 1).all()` (aten::eq, aten::all, aten::is_nonzero) picks a code path: a
    check of the same shape as older torch's Distribution, which is therefore not read as one."""
    tl = Typed()
    tl.step(lambda: [_categorical_step(tl, check="aten::eq", reduce="aten::all") for _ in range(8)])
    assert validate_args.find(_context(tl.trace(tmp_path))) == []


# --- cross_entropy ----------------------------------------------------------------------------------------------

def _one_hot_loss(tl: Typed, *, with_log_softmax: bool = True) -> None:
    """`-(F.one_hot(y, C).float() * F.log_softmax(logits.float(), -1)).sum(-1).mean()` on bf16 logits."""
    tl.kernel = 300_000
    tl.typed("aten::one_hot", [[8, 512], []], ["long int", "Scalar"])
    tl.typed("aten::to", [LOGITS, []], ["long int", "Scalar"])
    tl.typed("aten::to", [LOGITS, []], [BF16, "Scalar"])
    if with_log_softmax:
        tl.op("aten::log_softmax", [LOGITS, [], []])
    tl.op("aten::mul", [LOGITS, LOGITS])
    tl.op("aten::sum", [LOGITS, [], []])
    tl.kernel = 3_000
    tl.op("aten::mean", [[8, 512], []])
    tl.op("aten::neg", [[]])


def _backward(tl: Typed) -> None:
    tl.kernel = 300_000
    tl.around("autograd::engine::evaluate_function: MulBackward0", lambda: tl.op("aten::mul", [LOGITS, LOGITS]))
    tl.around("autograd::engine::evaluate_function: LogSoftmaxBackward0",
              lambda: tl.op("aten::_log_softmax_backward_data", [LOGITS, LOGITS]))
    tl.around("autograd::engine::evaluate_function: ToCopyBackward0", lambda: tl.op("aten::copy_", [LOGITS, LOGITS]))
    tl.kernel = 3_000


def test_a_one_hot_loss_is_found_priced_as_its_chain_gone_and_named_cross_entropy(tmp_path):
    tl = Typed()
    tl.step(lambda: (_one_hot_loss(tl), _backward(tl)))
    tr = tl.trace(tmp_path)
    (loss,) = cross_entropy.find(_context(tr))
    assert loss.shape == tuple(LOGITS) and loss.widened
    lv = whatif.predict(tr, [CROSS_ENTROPY])
    a = lv.lever(CROSS_ENTROPY).assumption
    # forward: one_hot, both conversions, mul, sum go (5 x 300 us; mean and neg at 3 us); the log_softmax kept at half
    assert a.launches == 7 and a.gpu_ns == 5 * 300_000 + 2 * 3_000
    assert a.softmax_ns == 2 * 300_000 and a.copy_ns == 300_000
    assert (a.backward_ns, a.backward_kept_ns) == (300_000, 100_000)
    assert lv.lever(CROSS_ENTROPY).saving_ns > 0
    assert "F.cross_entropy" in lv.lever(CROSS_ENTROPY).assumption.lever + cross_entropy.CHANGE


SEG_LOGITS = [8, 21, 512, 512]        # [N, C, H, W] logits; the target [N, H, W]


def _pixelwise_one_hot_loss(tl: Typed, target: list) -> None:
    """`-(F.one_hot(y, C).permute(0, 3, 1, 2).float() * F.log_softmax(logits.float(), 1)).sum(1).mean()`: the class
    dimension second, where the one-hot puts it last (knobs5 onehot_segmentation)."""
    tl.kernel = 300_000
    tl.typed("aten::one_hot", [target, []], ["long int", "Scalar"])
    tl.typed("aten::to", [SEG_LOGITS, []], ["long int", "Scalar"])
    tl.typed("aten::to", [SEG_LOGITS, []], [BF16, "Scalar"])
    tl.op("aten::log_softmax", [SEG_LOGITS, [], []])
    tl.op("aten::mul", [SEG_LOGITS, SEG_LOGITS])
    tl.op("aten::sum", [SEG_LOGITS, [], []])
    tl.kernel = 3_000
    tl.op("aten::mean", [[8, 512, 512], []])


def test_a_pixelwise_one_hot_loss_with_the_classes_second_is_found(tmp_path):
    tl = Typed()
    tl.step(lambda: _pixelwise_one_hot_loss(tl, [8, 512, 512]))
    (loss,) = cross_entropy.find(_context(tl.trace(tmp_path)))
    assert loss.shape == tuple(SEG_LOGITS)
    # a target whose shape is not the logits' without one dimension is no one-hot of them
    tl = Typed()
    tl.step(lambda: _pixelwise_one_hot_loss(tl, [8, 512, 21]))
    assert cross_entropy.find(_context(tl.trace(tmp_path, "other.json.gz"))) == []


def test_a_one_hot_mask_without_a_log_softmax_is_not_a_loss(tmp_path):
    tl = Typed()
    tl.step(lambda: _one_hot_loss(tl, with_log_softmax=False))
    assert cross_entropy.find(_context(tl.trace(tmp_path))) == []


# --- embedding_max_norm and the loop over tables ---------------------------------------------------------------

TABLES = [200_000, 100_000, 50_000, 10_000]


def _lookups(tl: Typed, tables: list[int], *, max_norm: bool = True) -> None:
    """`[emb(sparse[:, i]) for i, emb in enumerate(self.embs)]`, each nn.Embedding(n, 64, max_norm=1.0)."""
    for n in tables:
        tl.op("aten::select", [[8192, 26], [], []], launches=False)
        tl.op("aten::contiguous", [[8192]])
        if max_norm:    # sort, unique, norms, scale: GPU time longer than its dispatch
            tl.kernel = 80_000
            tl.op("aten::embedding_renorm_", [[n, 64], [8192], [], []])
            tl.kernel = 3_000
        tl.op("aten::embedding", [[n, 64], [8192]])


def test_max_norm_renorms_are_priced_and_the_loop_over_tables_gets_no_one_call(tmp_path):
    tl = Typed()
    tl.step(lambda: _lookups(tl, TABLES * 6 + TABLES[:2]))
    tr = tl.trace(tmp_path)
    assert len(embedding_max_norm.find(_context(tr))) == 26
    assert slice_loops.find(_context(tr)) == []          # 26 lookups into 4 tables' shapes: no one emb(ids) call
    lv = whatif.predict(tr, [EMBEDDING_MAX_NORM, BATCH_ITEMS])
    a = lv.lever(EMBEDDING_MAX_NORM).assumption
    assert (a.count, a.tables, a.launches) == (26, 4, 26) and lv.lever(EMBEDDING_MAX_NORM).saving_ns > 0
    assert lv.lever(BATCH_ITEMS).assumption.count == 0
    out = serialize.report(analyze_trace(tr))
    assert out["next_experiment"]["whatif_lever"] == EMBEDDING_MAX_NORM
    assert "max_norm=None" in out["lines"][4] and "emb(ids)" not in out["lines"][4]
    assert claims.check(out) == []


def test_a_loop_over_one_table_is_still_one_call_and_one_renorm_is_no_knob(tmp_path):
    tl = Typed()
    tl.step(lambda: _lookups(tl, [50_000] * 16, max_norm=False))
    tl.op("aten::embedding_renorm_", [[50_000, 64], [8192], [], []])     # once: set-up, not per lookup
    tr = tl.trace(tmp_path)
    (loop,) = slice_loops.find(_context(tr))
    assert loop.family == "embedding"
    assert len(embedding_max_norm.find(_context(tr))) == 0
