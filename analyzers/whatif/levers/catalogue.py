"""Every knob of PyTorch's tuning guides, as data: which lever of this registry recognises and predicts it, or
why a trace cannot show it.

The guides: the Performance Tuning Guide (tutorials/recipes/recipes/tuning_guide), the torch.compile
troubleshooting and performance pages (docs/stable/torch.compiler_troubleshooting), the CUDA semantics page
(docs/stable/notes/cuda: TF32, reduced-precision reductions, streams, pinned memory, the caching
allocator, CUDA graphs, lazy loading) and the DataLoader's (docs/stable/data). docs/knobs.md is this table
(tools/knobs_table.py writes it; tests/test_knobs.py checks the two agree and that each lever named exists).

    lever    the registry's lever that recognises the knob in a trace and predicts its saving ("" for none)
    seen     what in a trace shows the knob applies, when no lever predicts it ("" where the lever says it)
    unseen   why a trace cannot show it (or cannot price it), when neither
    outside  how `tracetriage try` applies it without editing the user's code (levers/outside.py); None: it
             needs an edit (the model converted, a sync taken out of the loop, a tensor made elsewhere).
             CUDA_MODULE_LOADING=EAGER has none: a script is profiled from its first line, so eager loading
             moves no set-up out of the window, and on the H200 it made whole scripts 1.5-4x slower (it loads
             every kernel module torch ships at start)
"""
from __future__ import annotations

from dataclasses import dataclass

from tracetriage.analyzers.whatif.levers.outside import Outside

TUNING = "Performance Tuning Guide"
COMPILE = "torch.compile troubleshooting / performance"
CUDA = "CUDA semantics"
DATA = "torch.utils.data (DataLoader)"


@dataclass(frozen=True)
class Entry:
    guide: str
    knob: str            # as the guide names it
    change: str          # the line in the user's code
    lever: str = ""
    seen: str = ""
    unseen: str = ""
    outside: Outside | None = None


CATALOGUE: tuple[Entry, ...] = (
    # --- Performance Tuning Guide: general -----------------------------------------------------------------
    Entry(TUNING, "asynchronous data loading and augmentation", "DataLoader(num_workers=N, pin_memory=True)",
          lever="dataloader_workers"),
    Entry(TUNING, "disable gradient calculation for validation or inference",
          "with torch.no_grad(): / torch.inference_mode()", lever="inference_mode"),
    Entry(TUNING, "disable bias for convolutions directly followed by a batch norm", "nn.Conv2d(..., bias=False)",
          seen="a bias add (aten::add_ / cudnn's bias epilogue) between a convolution and a batch norm",
          unseen="no lever: the bias add is one small memory-bound kernel per layer, under the replay's error"),
    Entry(TUNING, "use parameter.grad = None instead of zero_grad()", "optimizer.zero_grad(set_to_none=True)",
          lever="grads_to_none",
          outside=Outside("zero_grad_to_none", "zero_grad(set_to_none=True) forced on every optimizer and module",
                          overrides={"torch.optim.Optimizer.zero_grad": {"set_to_none": True},
                                     "torch.nn.Module.zero_grad": {"set_to_none": True}},
                          probe=("aten::zero_", "aten::_foreach_zero_"))),
    Entry(TUNING, "fuse operations (pointwise)", "torch.compile(fn)", lever="fuse"),
    Entry(TUNING, "channels_last memory format for computer vision models",
          "model.to(memory_format=torch.channels_last)", lever="channels_last"),
    # (the guide's knob trades memory for recomputation; where a trace shows it on, turning it off is the knob that
    # buys time: the trace records no memory pressure, so the advice says "where memory allows")
    Entry(TUNING, "checkpoint intermediate buffers (turned off where memory allows)",
          "drop torch.utils.checkpoint.checkpoint(fn, x) / model.gradient_checkpointing_enable(), or checkpoint "
          "fewer layers", lever="no_checkpointing"),
    Entry(TUNING, "disable debugging APIs", "torch.autograd.set_detect_anomaly(False)",
          seen="anomaly mode's per-op checks show as host time; emit_nvtx ranges are not in a Kineto trace",
          unseen="no lever: anomaly mode's cost is host time inside each op with no event of its own"),
    # --- Performance Tuning Guide: GPU ---------------------------------------------------------------------
    Entry(TUNING, "enable Tensor Cores: TF32 for fp32 matmuls",
          "torch.backends.cuda.matmul.allow_tf32 = True", lever="allow_tf32",
          outside=Outside("allow_tf32", "torch.backends.cuda.matmul.allow_tf32 = True and torch.backends.cudnn."
                          "allow_tf32 = True before the script runs",
                          attrs={"torch.backends.cuda.matmul.allow_tf32": True,
                                 "torch.backends.cudnn.allow_tf32": True},
                          numerics=True, gpu_only=True)),
    Entry(TUNING, "use mixed precision and AMP", "with torch.autocast('cuda', dtype=torch.bfloat16):",
          lever="autocast_bf16",
          outside=Outside("autocast_bf16", "the whole script run under torch.autocast(device, dtype=torch.bfloat16)",
                          autocast="bfloat16", numerics=True, gpu_only=True)),
    # fp16 on Volta/Turing: no outside form, a GradScaler is an edit of the training loop (fp16 without loss
    # scaling underflows gradients), so `try` does not run it for the user
    Entry(TUNING, "use mixed precision and AMP (fp16 with a GradScaler, where bf16 is not fast)",
          "with torch.autocast('cuda', dtype=torch.float16): and torch.amp.GradScaler()", lever="autocast_fp16"),
    Entry(TUNING, "use CUDA Graphs", "torch.cuda.graph(g) / torch.compile(mode='reduce-overhead')",
          lever="cuda_graphs"),
    Entry(TUNING, "enable the cuDNN auto-tuner", "torch.backends.cudnn.benchmark = True", lever="cudnn_benchmark",
          outside=Outside("cudnn_benchmark", "torch.backends.cudnn.benchmark = True before the script runs",
                          attrs={"torch.backends.cudnn.benchmark": True}, gpu_only=True,
                          probe=("aten::cudnn_convolution", "aten::convolution"), priced=False)),
    Entry(TUNING, "avoid unnecessary CPU-GPU synchronization", "drop .item()/.cpu()/print(t) from the loop",
          lever="remove_syncs"),
    Entry(TUNING, "create tensors directly on the target device", "torch.rand(size, device='cuda')",
          lever="tensors_on_device"),
    Entry(TUNING, "preallocate memory for variable input lengths", "run the largest shape first",
          lever="remove_syncs",
          seen="cudaMalloc/cudaFree inside steps (the allocator construct); recompiles per shape: no_recompiles"),
    Entry(TUNING, "matmul sizes in multiples of 8 for Tensor Cores", "pad dims to multiples of 8",
          seen="GEMM shapes in Input Dims not divisible by 8 (cuBLAS then picks slower kernels)",
          unseen="no lever: the faster kernel's time for the padded shape is not in the trace"),
    # --- Performance Tuning Guide: distributed -------------------------------------------------------------
    Entry(TUNING, "efficient data-parallel backend (DDP, not DataParallel)", "DistributedDataParallel(model)",
          seen="DataParallel's replicate/scatter/gather ops and one process driving every GPU",
          unseen="no lever: a DataParallel trace has no per-rank timeline to replay the DDP run from"),
    Entry(TUNING, "skip the all-reduce under gradient accumulation", "with ddp.no_sync(): for the early micro-batches",
          seen="one all-reduce per backward where the optimizer steps once per several backwards",
          unseen="no lever yet: its prediction needs a capture on two GPUs or more to verify it, and no such "
                 "machine has been lent to make one"),
    Entry(TUNING, "match layer order under find_unused_parameters=True", "construct layers in execution order",
          unseen="bucket order is not recorded in the trace"),
    Entry(TUNING, "load-balance workload in a distributed setting", "even work per rank", lever="overlap_comm",
          seen="the straggler: ranks that wait at collectives (report DIR names it)"),
    # --- torch.compile troubleshooting / performance -------------------------------------------------------
    Entry(COMPILE, "avoid recompilations", "torch.compile(dynamic=True) / torch._dynamo.mark_dynamic(x, 0)",
          lever="no_recompiles"),
    Entry(COMPILE, "reduce-overhead mode (CUDA graphs)", "torch.compile(fn, mode='reduce-overhead')",
          lever="cuda_graphs"),
    Entry(COMPILE, "graph breaks", "remove the break (TORCH_LOGS=graph_breaks), fullgraph=True",
          seen="several Torch-Compiled Region ranges per step with eager ops between them",
          unseen="no lever: what the code between the regions would compile to is not in the trace"),
    Entry(COMPILE, "max-autotune", "torch.compile(fn, mode='max-autotune')",
          unseen="the autotuned kernels' times are not in a trace made without them"),
    Entry(COMPILE, "compile time / warm-up", "warm up before profiling; the FX graph cache", lever="warm_up"),
    # --- CUDA semantics -------------------------------------------------------------------------------------
    Entry(CUDA, "TF32 on Ampere and later (convolutions)", "torch.backends.cudnn.allow_tf32 = True",
          lever="allow_tf32"),
    Entry(CUDA, "reduced-precision reductions in fp16/bf16 GEMMs",
          "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True",
          unseen="the kernels' names do not say how they accumulate, and the speedup is shape-dependent"),
    Entry(CUDA, "pinned memory and non_blocking copies", "tensor.pin_memory(); .to(device, non_blocking=True)",
          lever="async_copies"),
    Entry(CUDA, "avoid host-device transfers: keep a module resident",
          "drop model.to('cpu') between requests (the next .to('cuda') is then a no-op)", lever="module_round_trip"),
    Entry(CUDA, "asynchronous execution: streams", "torch.cuda.Stream() for independent work",
          lever="async_copies", seen="copies and compute serialised on one stream; overlap_comm for collectives"),
    Entry(CUDA, "the caching allocator: no empty_cache in the loop", "drop torch.cuda.empty_cache()",
          lever="keep_allocator_cache",
          outside=Outside("empty_cache_noop", "torch.cuda.empty_cache made a no-op", noops=("torch.cuda.empty_cache",),
                          gpu_only=True, probe=("): empty_cache",))),
    Entry(CUDA, "the caching allocator: expandable segments",
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", lever="keep_allocator_cache",
          seen="cudaFree/cudaMalloc inside the ops in every step after the first: the allocator freeing its cache to "
               "retry an allocation (memory short); growth in the first step alone is set-up (warm_up)",
          unseen="fragmentation itself is not in the trace, only the calls it causes: priced as those calls gone"),
    Entry(CUDA, "lazy loading of CUDA modules", "CUDA_MODULE_LOADING=EAGER for profiling", lever="warm_up"),
    Entry(CUDA, "cuFFT plan cache", "torch.backends.cuda.cufft_plan_cache.max_size",
          unseen="plan creation is host time inside the FFT op with no event of its own"),
    # --- DataLoader ------------------------------------------------------------------------------------------
    Entry(DATA, "num_workers", "DataLoader(num_workers=4)", lever="dataloader_workers",
          outside=Outside("dataloader_workers", "DataLoader(..., num_workers=4) forced",
                          overrides={"torch.utils.data.DataLoader": {"num_workers": 4}},
                          probe=("enumerate(DataLoader)",))),
    Entry(DATA, "pin_memory", "DataLoader(pin_memory=True) and .to(device, non_blocking=True)",
          lever="pinned_batches",
          outside=Outside("pin_memory", "DataLoader(..., pin_memory=True) forced (the .to(non_blocking=True) stays "
                          "yours to add)", overrides={"torch.utils.data.DataLoader": {"pin_memory": True}},
                          gpu_only=True, probe=("enumerate(DataLoader)",))),
    Entry(DATA, "persistent_workers", "DataLoader(persistent_workers=True)", lever="warm_up",
          seen="worker start-up at each epoch's first next() (enumerate(DataLoader) host stretches)"),
    Entry(DATA, "prefetch_factor", "DataLoader(prefetch_factor=4)", lever="no_host_work",
          seen="next() waits in enumerate(DataLoader) that recur although workers exist"),
    # --- past the guides: faster paths PyTorch ships for what users write by hand ----------------------------
    Entry("past the guides", "multi-tensor / fused optimizer", "torch.optim.AdamW(params, fused=True)",
          lever="fused_optimizer",
          outside=Outside("fused_adamw", "torch.optim.AdamW/Adam(..., fused=True, foreach=None) forced",
                          overrides={"torch.optim.AdamW": {"fused": True, "foreach": None},
                                     "torch.optim.Adam": {"fused": True, "foreach": None}},
                          probe=("Optimizer.step#Adam",))),
    Entry("past the guides", "float32 where float64 was left on", "drop torch.set_default_dtype(torch.float64) "
          "(and .double(), dtype=torch.float64)", lever="drop_float64"),
    Entry("past the guides", "copy the narrow tensor and convert it on the GPU",
          "x = batch.to(device).float().div_(255) in place of batch.float().div_(255).to(device)",
          lever="convert_on_gpu"),
    Entry("past the guides", "scaled_dot_product_attention for hand-written attention",
          "F.scaled_dot_product_attention(q, k, v, is_causal=True)", lever="sdpa"),
    Entry("past the guides", "SDPA's flash or memory-efficient backend, not its math backend",
          "drop with sdpa_kernel(SDPBackend.MATH): around F.scaled_dot_product_attention", lever="sdpa_math"),
    Entry("past the guides", "a matmul for a broadcast product reduced by a sum",
          "q @ k.T (torch.einsum) in place of (q.unsqueeze(1) * k.unsqueeze(0)).sum(-1)", lever="broadcast_matmul"),
    Entry("past the guides", "nn.LayerNorm for a LayerNorm written by hand",
          "nn.LayerNorm(d) in place of x.mean(-1), (x - u).pow(2).mean(-1), / torch.sqrt(s + eps)",
          lever="layer_norm"),
    Entry("past the guides", "a KV cache for generation (use_cache)",
          "model.generate(..., use_cache=True), or past_key_values fed back with only the new token", lever="kv_cache"),
    Entry("past the guides", "one call on the batch for a model called item by item",
          "model(frames) (or model(torch.stack(items))) in place of [model([x])[0] for x in frames]",
          lever="batch_items"),
    Entry("past the guides", "one forward on the passes stacked for the same model run twice a step",
          "model(torch.cat([x, x]), torch.cat([t, t]), torch.cat([y, y_null])).chunk(2) in place of model(x, t, y); "
          "model(x, t, y_null) (classifier-free guidance)", lever="batch_passes"),
    Entry("past the guides", "a NaN/Inf check per layer taken off the hot path",
          "drop if torch.isnan(h).any(): raise inside the step (check once on the output, or torch._assert_async)",
          lever="value_checks"),
    Entry("past the guides", "autograd's anomaly mode off outside debugging",
          "torch.autograd.set_detect_anomaly(False) (or the `with torch.autograd.detect_anomaly():` around the step "
          "dropped)", lever="value_checks"),
    Entry("past the guides", "torch.distributions' argument validation off in a hot loop",
          "torch.distributions.Distribution.set_default_validate_args(False) (or Categorical(logits=..., "
          "validate_args=False))", lever="validate_args"),
    Entry("past the guides", "F.cross_entropy for a loss written over a one-hot target",
          "F.cross_entropy(logits.view(-1, C), y.view(-1)) in place of -(F.one_hot(y, C).float() * "
          "F.log_softmax(logits.float(), -1)).sum(-1).mean()", lever="cross_entropy"),
    Entry("past the guides", "nn.Embedding without max_norm (the norm constraint off the lookups)",
          "nn.Embedding(n, d) (renormalise the weights once every N steps, or clip after optimizer.step()) in place "
          "of nn.Embedding(n, d, max_norm=1.0)", lever="embedding_max_norm"),
    # --- work the step need not run at all: removed, not sped up ---------------------------------------------------
    Entry("past the guides", "freeze the parameters the optimizer does not update (a linear probe, a head or an "
          "adapter trained on a model that still requires grad)",
          "model.backbone.requires_grad_(False) (or torch.no_grad() around it)", lever="freeze_unoptimized"),
    Entry("past the guides", "keep autograd's saved tensors on the GPU where memory allows",
          "drop torch.autograd.graph.save_on_cpu(pin_memory=True) around the forward", lever="activations_on_gpu"),
    Entry("past the guides", "project only the rows that are read (the last position's logits)",
          "head(h[:, -1:]) in place of head(h)[:, -1]; Hugging Face: model(..., logits_to_keep=1)",
          lever="logits_to_keep"),
    Entry("past the guides", "compute loop-invariant work once (an encoder before a decode loop)",
          "model(encoder_outputs=enc, decoder_input_ids=tok, ...) in place of model(input_features=feats, ...) each "
          "token", lever="compute_once"),
    Entry("past the guides", "weight-only quantization of a decode step's weights (int8; fp8 where the device runs it)",
          "torchao: quantize_(model, int8_weight_only())", lever="weight_only_int8"),
    Entry("past the guides", "quantized weights dequantized once (or inside a fused quantized matmul), not before "
          "every product", "w = dequantize(w_q).to(torch.bfloat16) once at load, in place of dequantizing inside each "
          "forward (bitsandbytes' Linear4bit); or torchao's int4 weight-only matmul", lever="dequantize_once"),
    Entry("past the guides", "sparse gradients for embedding tables a batch barely touches",
          "nn.Embedding(n, dim, sparse=True) with SGD, Adagrad or SparseAdam", lever="sparse_embedding"),
    Entry("past the guides", "argmax/top-k on the GPU for a reduction made on the host each step",
          "nxt = logits[:, -1].argmax(-1) in place of logits[:, -1].cpu().argmax(-1).to(device)",
          lever="reduce_on_gpu"),
    Entry("past the guides", "an op run on the GPU for one run on the host on tensors copied off it (nms, a CTC loss)",
          "torchvision.ops.nms(boxes, scores, 0.5) on the device tensors, in place of nms(boxes.cpu(), scores.cpu(), "
          "0.5)", lever="op_on_gpu"),
    Entry("past the guides", "torch.compile's default backend (Inductor) for a debugging backend that fuses nothing",
          "torch.compile(model) in place of torch.compile(model, backend=\"aot_eager\")", lever="inductor_backend"),
    Entry("past the guides", "torch.topk for a full sort of which a slice keeps the first k",
          "torch.topk(x, k, dim=-1) in place of torch.argsort(x, dim=-1, descending=True)[..., :k]", lever="topk"),
    Entry("past the guides", "cuDNN left on (its default) where a script turned it off",
          "torch.backends.cudnn.enabled = True (drop the line that sets it False)", lever="cudnn_enabled"),
    Entry("past the guides", "a decoder's KV cache kept on the device, not offloaded to the host each layer",
          "model.generate(...) without cache_implementation=\"offloaded\" (the default DynamicCache)",
          lever="kv_on_device"),
    Entry("past the guides", "one backward of the summed losses in place of a backward per loss over a shared trunk",
          "sum(losses).backward() in place of for l in losses: l.backward(retain_graph=True)", lever="one_backward"),
    Entry("past the guides", "F.gelu(approximate='tanh') for a tanh GELU written out",
          "torch.nn.functional.gelu(x, approximate=\"tanh\") (Hugging Face: hidden_act=\"gelu_pytorch_tanh\")",
          seen="aten::pow(x, 3), mul, add, mul, tanh, add, mul over one shape, per layer (Hugging Face's "
               "NewGELUActivation: traces/fixes/knobs/*gpt2*, realworld/warm_up_cold_gpt2)",
          unseen="no lever: the fuse replay prices the one kernel such a chain becomes (docs/whatif.md), but no "
                 "pair of F.gelu against the chain has been captured to check it"),
    Entry("past the guides", "F.rms_norm / nn.RMSNorm for an RMSNorm written out",
          "torch.nn.functional.rms_norm(x, (dim,), weight, eps) or nn.RMSNorm(dim)",
          seen="aten::pow(x, 2), mean(-1, keepdim), add(eps), rsqrt, mul, mul(weight) over one shape, per layer "
               "(Hugging Face's LlamaRMSNorm: realworld/hf_llama_generate; gpt-eager; realworld/rmsnorm_swiglu_*)",
          unseen="no lever: no pair of F.rms_norm against the written-out chain has been captured (the "
                 "rmsnorm_swiglu pairs check torch.compile of it: the fuse lever)"),
    Entry("past the guides", "F.softmax for exp / sum / div written out", "torch.softmax(x, dim=-1)",
          seen="aten::exp, sum(dim, keepdim), div (after an amax/sub) over one shape (probe-launch-row-softmax, "
               "softmax-naive)",
          unseen="no lever: no pair of F.softmax against the written-out chain has been captured (softmax-naive "
                 "against softmax-triton checks a Triton kernel, the fuse lever's kind of change)"),
    Entry("past the guides", "torch._foreach_* for a per-parameter loop",
          "torch._foreach_add_(params, grads, alpha=-lr) (an optimizer: foreach=True or fused=True)",
          lever="fused_optimizer",
          seen="the same in-place op (aten::add_/mul_/addcmul_) once per parameter each step, over as many shapes "
               "as parameters, inside Optimizer.step (the optimizer's foreach=False); a loop of the user's own "
               "outside an optimizer: smell-launch-per-param, fixes/per_param_sgd, priced by cuda_graphs"),
    Entry("past the guides", "one torch.cat (or a preallocated buffer) for torch.cat in a loop",
          "collect in a list and torch.cat once; a static KV cache: generate(..., cache_implementation=\"static\")",
          seen="aten::cat once per iteration on a tensor that grows by the same rows each call (Hugging Face's "
               "DynamicCache in eager generate: realworld/hf_llama_generate, 640 cats)",
          unseen="no lever: each cat's bytes are in the trace (it copies everything so far), but no pair of the "
                 "loop against one cat or a preallocated buffer has been captured (the static-cache pair, "
                 "realworld/hf_llama_generate, checks CUDA graphs)"),
)


def entries_for(lever: str) -> list[Entry]:
    return [e for e in CATALOGUE if e.lever == lever]


def from_outside() -> list[Entry]:
    """The knobs `tracetriage try` can turn without editing code, in the catalogue's order."""
    return [e for e in CATALOGUE if e.outside is not None]
