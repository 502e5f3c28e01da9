"""The lever registry: every what-if lever, one spec each (tracetriage.analyzers.whatif.levers.spec), in one place.

    from tracetriage.analyzers.whatif.levers import LEVERS, NAMES, spec_of
    LEVERS["remove_syncs"].cause        # Cause.SYNCHRONIZATION

The replay (tracetriage.analyzers.whatif.predict), the report's Next line, the words, diff's "the change
applied ...", the capture's fix workloads, the drills' prediction log and the CLI's choices all
read this; adding a lever is one new module here, its line below (and its name's constant, where code
outside the folder must single it out), and its test.
"""
from __future__ import annotations

from tracetriage.analyzers.whatif.levers import (
    activations_on_gpu,
    allow_tf32,
    async_copies,
    autocast_bf16,
    autocast_fp16,
    batch_items,
    batch_passes,
    broadcast_matmul,
    channels_last,
    compute_once,
    convert_on_gpu,
    cross_entropy,
    cuda_graphs,
    cudnn_benchmark,
    cudnn_enabled,
    dataloader_workers,
    dequantize_once,
    drop_float64,
    embedding_max_norm,
    freeze_unoptimized,
    fuse,
    fused_optimizer,
    grads_to_none,
    inductor_backend,
    inference_mode,
    keep_allocator_cache,
    kernels_2x,
    kv_cache,
    kv_on_device,
    layer_norm,
    logits_to_keep,
    module_round_trip,
    no_checkpointing,
    no_host_work,
    no_recompiles,
    one_backward,
    op_on_gpu,
    overlap_comm,
    pinned_batches,
    reduce_on_gpu,
    remove_syncs,
    sdpa,
    sdpa_math,
    sparse_embedding,
    tensors_on_device,
    topk,
    validate_args,
    value_checks,
    warm_up,
    weight_only_int8,
)
from tracetriage.analyzers.whatif.levers.spec import LeverSpec, WhatIfError

# In this order: the order of the JSON and the tie-break between equal predictions.
LEVERS: dict[str, LeverSpec] = {s.name: s for s in (
    remove_syncs.SPEC, no_host_work.SPEC, cuda_graphs.SPEC, async_copies.SPEC, kernels_2x.SPEC,
    fused_optimizer.SPEC, fuse.SPEC, no_recompiles.SPEC, warm_up.SPEC, overlap_comm.SPEC,
    allow_tf32.SPEC, autocast_bf16.SPEC, channels_last.SPEC, grads_to_none.SPEC, tensors_on_device.SPEC,
    sdpa.SPEC, cudnn_benchmark.SPEC, inference_mode.SPEC, dataloader_workers.SPEC,
    keep_allocator_cache.SPEC,
    kv_cache.SPEC,
    batch_items.SPEC,
    pinned_batches.SPEC,
    value_checks.SPEC,
    reduce_on_gpu.SPEC,
    batch_passes.SPEC,
    drop_float64.SPEC,
    convert_on_gpu.SPEC,
    no_checkpointing.SPEC,
    autocast_fp16.SPEC,
    sdpa_math.SPEC,
    broadcast_matmul.SPEC,
    layer_norm.SPEC,
    validate_args.SPEC,
    cross_entropy.SPEC,
    embedding_max_norm.SPEC,
    module_round_trip.SPEC,
    freeze_unoptimized.SPEC,
    activations_on_gpu.SPEC,
    logits_to_keep.SPEC,
    compute_once.SPEC,
    sparse_embedding.SPEC,
    weight_only_int8.SPEC,
    op_on_gpu.SPEC,
    inductor_backend.SPEC,
    topk.SPEC,
    cudnn_enabled.SPEC,
    kv_on_device.SPEC,
    one_backward.SPEC,
    dequantize_once.SPEC,
)}
NAMES: tuple[str, ...] = tuple(LEVERS)

# Each lever's name as code outside this folder singles it out (a fix workload's variant, the report's
# sync focus): from its spec, never a literal that could drift from it.
REMOVE_SYNCS = remove_syncs.SPEC.name
NO_HOST_WORK = no_host_work.SPEC.name
DATALOADER_WORKERS = dataloader_workers.SPEC.name
CUDA_GRAPHS = cuda_graphs.SPEC.name
ASYNC_COPIES = async_copies.SPEC.name
KERNELS_2X = kernels_2x.SPEC.name
FUSED_OPTIMIZER = fused_optimizer.SPEC.name
FUSE = fuse.SPEC.name
NO_RECOMPILES = no_recompiles.SPEC.name
WARM_UP = warm_up.SPEC.name
OVERLAP_COMM = overlap_comm.SPEC.name
TF32 = allow_tf32.SPEC.name
AUTOCAST_BF16 = autocast_bf16.SPEC.name
AUTOCAST_FP16 = autocast_fp16.SPEC.name
CHANNELS_LAST = channels_last.SPEC.name
GRADS_TO_NONE = grads_to_none.SPEC.name
TENSORS_ON_DEVICE = tensors_on_device.SPEC.name
SDPA = sdpa.SPEC.name                          # hand-written softmax(q @ k^T) @ v -> F.scaled_dot_product_attention
CUDNN_BENCHMARK = cudnn_benchmark.SPEC.name    # torch.backends.cudnn.benchmark = True
INFERENCE_MODE = inference_mode.SPEC.name      # an eval forward with autograd on -> with torch.inference_mode():
KEEP_ALLOCATOR_CACHE = keep_allocator_cache.SPEC.name   # torch.cuda.empty_cache() every step -> the cache kept
KV_CACHE = kv_cache.SPEC.name                  # generate re-running its prefix each token -> use_cache=True
BATCH_ITEMS = batch_items.SPEC.name            # the model called item by item -> model(frames)
PINNED_BATCHES = pinned_batches.SPEC.name      # a DataLoader's pageable batch copies -> pin_memory=True, non_blocking
BATCH_PASSES = batch_passes.SPEC.name          # model(x); model(x_null) each step -> one forward on torch.cat
REDUCE_ON_GPU = reduce_on_gpu.SPEC.name        # logits.cpu().argmax().to(device) -> argmax on the GPU
INDUCTOR_BACKEND = inductor_backend.SPEC.name  # torch.compile(backend="aot_eager") -> the default, Inductor
CUDNN_ENABLED = cudnn_enabled.SPEC.name        # torch.backends.cudnn.enabled = False left in -> True
KV_ON_DEVICE = kv_on_device.SPEC.name          # generate(cache_implementation="offloaded") -> the default
TOPK = topk.SPEC.name                          # argsort(x)[:, :k] -> torch.topk(x, k)
ONE_BACKWARD = one_backward.SPEC.name          # a backward per loss (retain_graph) -> sum(losses).backward()
OP_ON_GPU = op_on_gpu.SPEC.name                # nms(boxes.cpu(), scores.cpu()) -> nms on the device tensors
VALUE_CHECKS = value_checks.SPEC.name          # if torch.isnan(h).any(): raise after each layer -> off the hot path
DROP_FLOAT64 = drop_float64.SPEC.name          # torch.set_default_dtype(torch.float64) left on -> float32
CONVERT_ON_GPU = convert_on_gpu.SPEC.name      # batch.float().to(device) -> batch.to(device).float()
NO_CHECKPOINTING = no_checkpointing.SPEC.name  # gradient_checkpointing_enable() -> activations kept
BROADCAST_MATMUL = broadcast_matmul.SPEC.name  # (q[:, None] * k[None]).sum(-1) -> q @ k.T
LAYER_NORM = layer_norm.SPEC.name              # a LayerNorm written by hand -> nn.LayerNorm
MODULE_ROUND_TRIP = module_round_trip.SPEC.name  # model.to("cpu") between requests -> the module stays on the GPU
SDPA_MATH = sdpa_math.SPEC.name                # sdpa_kernel(SDPBackend.MATH) -> the flash/efficient kernel
CROSS_ENTROPY = cross_entropy.SPEC.name        # -(one_hot(y).float() * log_softmax(z)).sum(-1) -> F.cross_entropy
EMBEDDING_MAX_NORM = embedding_max_norm.SPEC.name   # nn.Embedding(n, d, max_norm=1.0) renorming per lookup -> None
FREEZE_UNOPTIMIZED = freeze_unoptimized.SPEC.name   # a linear probe's backbone still requiring grad -> frozen
ACTIVATIONS_ON_GPU = activations_on_gpu.SPEC.name   # save_on_cpu around a forward that fits -> dropped
LOGITS_TO_KEEP = logits_to_keep.SPEC.name   # head(h)[:, -1] -> head(h[:, -1:]) (logits_to_keep=1)
COMPUTE_ONCE = compute_once.SPEC.name   # an encoder re-run each decode step -> encoder_outputs=enc
SPARSE_EMBEDDING = sparse_embedding.SPEC.name   # nn.Embedding(n, d) over a huge table -> sparse=True
WEIGHT_ONLY_INT8 = weight_only_int8.SPEC.name   # a decode step's bf16 weights -> int8 (weight-only quantization)
DEQUANTIZE_ONCE = dequantize_once.SPEC.name     # a 4-bit weight dequantized before every matmul -> once, or fused
VALIDATE_ARGS = validate_args.SPEC.name        # Categorical(logits=...) validating each step -> validate_args=False
# Knobs captured on the H200 before their lever is written: the before/after pair is what the lever is then
# fitted to and checked on, so a fix workload (capture/realworld_knobs*.py) may name them as variants. Nothing
# else reads them; a name leaves this tuple when its lever joins LEVERS (tests/test_knobs.py keeps them apart).
AWAITING_PAIR: tuple[str, ...] = ()
# Levers written before their pairs came back from the GPU (capture/realworld_knobs3.py, GROUP=knobs3): the tests
# that want three measured workloads a lever pass them by, and fail once their pairs are in (leave this tuple
# then). traces/fixes/knobs3 holds sdpa's, cudnn_benchmark's and inference_mode's pairs and traces/fixes/loader
# dataloader_workers' (capture/realworld_loader.py, GROUP=loader, on an H100).
CAPTURE_PENDING: tuple[str, ...] = (
    KEEP_ALLOCATOR_CACHE,   # its pairs so far: traces/fresh5 fcn_empty_cache (H100) and traces/realworld empty_cache
    # one before/after pair each in traces/fresh5 (H100, development material), no fix workload in capture/ yet: the
    # tests that want three measured workloads a lever pass them by
    KV_CACHE, BATCH_ITEMS,
    BATCH_PASSES,     # one pair in development material (an H100 diffusion sampler), no fix workload yet
    VALUE_CHECKS,     # one pair in development material (an H100 compiled encoder), no fix workload in capture/ yet
    # written from a public RTX 3080 trace; its six pairs (traces/pending, capture/pending_pairs.py, H100) hold five
    # unprofiled runs a variant, not the fixes folders' five profiled spans: tests/test_pending_pairs.py checks them
    PINNED_BATCHES,
    # no Volta/Turing card to measure on (the lever counts nothing where bf16 runs fast, so an H100/H200 pair
    # measures nothing): written from a public RTX 2080 Ti trace, its replay autocast_bf16's at the fp16 peak
    AUTOCAST_FP16,
    # one before/after pair in the fresh7 development set (an H100; not committed here), no fix workload yet
    SDPA_MATH, BROADCAST_MATMUL, LAYER_NORM,
    # one before/after pair in the fresh7 development set (an H100 GPT decode; not committed here); its second,
    # measured blind: traces/pending2 bart_greedy_host_argmax (capture/pending_pairs2.py, tests/test_pending_pairs2.py)
    REDUCE_ON_GPU,
    # two pairs each measured in traces/fixes/knobs5 (an H100; capture/realworld_knobs5.py, GROUP=knobs5), written from
    # one fresh8 development pair each: a third workload each in the fixes folders' format not written yet
    # (validate_args has its three). A third pair each is in traces/pending2 (unet_onehot_pixel_loss,
    # distilbert_ner_embedding_max_norm, resnet18_offloaded_between_requests; tests/test_pending_pairs2.py), five
    # unprofiled runs and one profiled a variant, not five profiled spans: tests/test_knobs.py does not count them
    CROSS_ENTROPY, EMBEDDING_MAX_NORM, MODULE_ROUND_TRIP,
    # one before/after pair each in the fresh9 development set (an H100; not committed here), written from it:
    # work the step need not run at all (a backward past the optimizer's parameters, activations offloaded, rows of a
    # head nobody reads, an encoder re-run each decode step). Their second pairs, measured blind on an H100:
    # traces/pending2 bert_linear_probe_unfrozen, convnext_activations_offloaded, gpt2_last_token_scorer_full_logits,
    # t5_summarize_reencodes_source, neumf_dense_table_grads (capture/pending_pairs2.py, tests/test_pending_pairs2.py)
    FREEZE_UNOPTIMIZED, ACTIVATIONS_ON_GPU, LOGITS_TO_KEEP, COMPUTE_ONCE, SPARSE_EMBEDDING,
    # written from the bundled fresh5 decode_mlp_compile_roof-before (an H100) alone; its first measured pair:
    # traces/pending2 mistral_decode_bf16_weights, where the int8 fix made the step slower
    # (tests/test_pending_pairs2.py)
    WEIGHT_ONLY_INT8,
    # written from two fresh10 development pairs (H100: yolo nms, conformer ctc_loss), no fix workload yet
    OP_ON_GPU,
    # written from one fresh10 development pair (H100: a GPT trained under backend="aot_eager"), no fix workload yet
    INDUCTOR_BACKEND,
    # written from one fresh11 development pair (H100: a retrieval step's argsort of 256 x 1M scores sliced to 100),
    # no fix workload yet
    TOPK,
    # written from one fresh11 development pair (H100: a CRNN trained with cuDNN off: im2col convolutions, an LSTM
    # stepped by ATen), no fix workload yet
    CUDNN_ENABLED,
    # written from one fresh11 development pair (H100: an OLMo-style generate() with cache_implementation="offloaded"),
    # no fix workload yet
    KV_ON_DEVICE,
    # written from one fresh12 development pair (H100: a multi-task ranker, a backward per task loss over a shared
    # trunk), no fix workload yet
    ONE_BACKWARD,
    # written from two public traces of transformer_nuggets' qlora bench (heldout-user20, an A100: bitsandbytes' NF4
    # MatMul4Bit), no fix workload yet
    DEQUANTIZE_ONCE,
)
HEADROOM = next(s.name for s in LEVERS.values() if s.headroom)   # kernels_2x: the Amdahl check, said beside a fix


def blocks_graphs(lever: str, assumption) -> bool:
    """This lever found a read, a check or a round trip through the host inside the loop, which splits the step: no
    CUDA graph replays it as one until it is off (value_checks, reduce_on_gpu, validate_args, op_on_gpu, kv_on_device:
    a KV cache offloaded to the host each layer)."""
    test = {VALUE_CHECKS: value_checks.blocks_graphs, REDUCE_ON_GPU: reduce_on_gpu.blocks_graphs,
            VALIDATE_ARGS: validate_args.blocks_graphs, OP_ON_GPU: op_on_gpu.blocks_graphs,
            KV_ON_DEVICE: kv_on_device.blocks_graphs}.get(lever)
    return test is not None and test(assumption)


def spec_of(name: str) -> LeverSpec:
    """The spec of a lever by name; WhatIfError (one line for the user) when there is none."""
    try:
        return LEVERS[name]
    except KeyError:
        raise WhatIfError(f"no lever named {name!r}; choose from: {', '.join(NAMES)}") from None


def by_recognition() -> list[LeverSpec]:
    """The levers in the order diff tries to recognise them in a change."""
    return sorted(LEVERS.values(), key=lambda s: s.recognise.order)
