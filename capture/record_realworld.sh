#!/usr/bin/env bash
# Record the real-world ground truth (capture/realworld*.py) on a GPU machine, one group per device call:
#   OUT=$OUT GROUP=a bash capture/record_realworld.sh      optimizers, allocator, fusion, vision, recompiles, warm_up
#   OUT=$OUT GROUP=b bash capture/record_realworld.sh      HF generate (pairs + phase traces), graph-captured decode,
#                                                          training-outlier / no-repetition / health-check traces
#   OUT=$OUT GROUP=c bash capture/record_realworld.sh      warm_up's and no_recompiles' second and third workloads:
#                                                          cold MLP and GPT-2, recompiles by batch size, GPT-2
#   OUT=$OUT GROUP=knobs bash capture/record_realworld.sh  the knobs (capture/realworld_knobs.py): TF32, autocast,
#                                                          channels_last, set_to_none, tensors made on the device
#   OUT=$OUT GROUP=knobs3 bash capture/record_realworld.sh the knobs of capture/realworld_knobs3.py: SDPA for
#                                                          hand-written attention, cudnn.benchmark (a process a
#                                                          variant), inference_mode for an eval with autograd on
#   OUT=$OUT GROUP=knobs4 bash capture/record_realworld.sh the knobs of capture/realworld_knobs4.py: float32 for
#                                                          float64, conversions after the copy, checkpointing off
#   OUT=$OUT GROUP=knobs5 bash capture/record_realworld.sh the knobs of capture/realworld_knobs5.py: argument checks
#                                                          off, F.cross_entropy, no max_norm, a module kept on the GPU
#   OUT=$OUT GROUP=loader bash capture/record_realworld.sh the DataLoader workers knob (capture/realworld_loader.py):
#                                                          num_workers=0 against 4 on a Python tokenizer, numpy
#                                                          features and torch.stft spectrograms
#   OUT=$OUT GROUP=smoke bash capture/record_realworld.sh  every part once, small, reps 1, the parts running side by
#                                                          side (timings meaningless): a shake-out of GPU-only bugs
# Run from the repo root. Groups a, b and c run their parts one after another; none starts once BUDGET seconds
# (a, b: 530; c: 470; smoke: 160) have passed, and the running one is cut there, so the tarball is written inside a
# 10-minute call. Writes into $OUT (at most 3 files):
#   realworld-$GROUP.log       everything printed, each part's full output, and the summary (also on stdout)
#   realworld-$GROUP.tar.gz    $GROUP/{pairs*,cold,generate,traces,logs}/: traces, measured.json, *.truth.json
#   realworld-$GROUP-2.tar.gz  only if the first would pass 15 MiB: the generate/ and traces/ folders
# DEVICE=cpu PYTHON=path/to/python runs the same script on a CPU: a dry run of the plumbing.
set -u
GROUP=${GROUP:?set GROUP=a, b, c, knobs, knobs2, knobs3, knobs4, knobs5, loader or smoke}
OUT=${OUT:?set OUT to the folder for the results}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
CAP_SCALE=${CAP_SCALE:-$( [ "$DEVICE" = cpu ] && echo 4 || echo 1 )}    # the parts' time caps are an H200's
case $GROUP in a|b|knobs|knobs2|knobs3|knobs4|knobs5|loader) BUDGET=${BUDGET:-530} ;; c) BUDGET=${BUDGET:-470} ;; smoke) BUDGET=${BUDGET:-160} ;;
  *) echo "GROUP must be a, b, c, knobs, knobs2, knobs3, knobs4, knobs5, loader or smoke" >&2; exit 2 ;; esac
mkdir -p "$OUT"
ROOT=$(mktemp -d /tmp/realworld.XXXXXX)
WORK=$ROOT/$GROUP
mkdir -p "$WORK/logs"
LOG=$OUT/realworld-$GROUP.log
: > "$LOG"
# The working tree as pyproject installs it (tools/pkglink.py: a folder of links), and only that: the repo root on
# PYTHONPATH, or first on sys.path as the current directory of `python -m`, would shadow packages named like our
# top-level folders (transformers imports the hub's optional `kernels` package where it finds one, and found ours)
# and, without an install, leaves tracetriage.capture unimportable. PYTHONSAFEPATH=1: no python here, nor the
# children they start, puts its current directory or its script's folder first.
PKG=$("$PY" tools/pkglink.py "$ROOT/pkg") || { echo "error: could not link the package (tools/pkglink.py)" >&2; exit 2; }
export PYTHONUNBUFFERED=1 PYTHONSAFEPATH=1 PYTHONPATH="$PKG${PYTHONPATH:+:$PYTHONPATH}"
START=$(date +%s)

say() { echo "$*" | tee -a "$LOG"; }
elapsed() { echo $(( $(date +%s) - START )); }

# part NAME CAP_SECONDS CMD...: one step under `timeout`, its output in logs/NAME.log and its exit status in
# logs/NAME.rc; a hang or crash costs only itself. Its limit is CAP or what is left of the budget, the lesser.
part() {
  local name=$1 cap=$(( $2 * CAP_SCALE )); shift 2
  local left=$(( BUDGET - $(elapsed) ))
  local limit=$(( cap < left ? cap : left ))
  if [ "$limit" -lt 20 ]; then say "[SKIP $name: out of time at $(elapsed)s]"; echo skipped > "$WORK/logs/$name.rc"; return 1; fi
  local t0=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$WORK/logs/$name.log" 2>&1
  local rc=$?
  echo $rc > "$WORK/logs/$name.rc"
  { cat "$WORK/logs/$name.log" >> "$LOG"
    grep -E '^\[(ok|FAIL)' "$WORK/logs/$name.log" | cut -c1-400 | sed "s/^/  [$name] /"
    local verdict=ok
    [ "$rc" -ne 0 ] && verdict=FAIL
    { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && verdict="FAIL (timed out at ${limit}s)"
    echo "[$verdict $name rc=$rc $(( $(date +%s) - t0 ))s; group at $(elapsed)s of $BUDGET]"; } | tee -a "$LOG"
  return $rc
}

pairs() { echo "$PY" -m tracetriage.capture.realworld --device "$DEVICE" --merge --out "$WORK/$1"; }    # the command, as words
# HF generate with its cuda_graphs variant, and (hf_retry) the same without that variant if the first run
# failed other than by its time limit: the retry goes last in a group, so it cannot starve the other parts.
hf_pairs() {
  local cap=$1; shift
  part pairs-hf "$cap" $(pairs pairs-hf) --only hf_llama_generate "$@"
}
hf_retry() {
  local cap=$1; shift
  local rc=$(cat "$WORK/logs/pairs-hf.rc" 2>/dev/null)
  if [ -n "$rc" ] && [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] && [ "$rc" != skipped ]; then
    part pairs-hf-no-graphs "$cap" $(pairs pairs-hf) --only hf_llama_generate --drop-lever cuda_graphs "$@"
  fi
}

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used --format=csv
  "$PY" -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__, torch.cuda.is_available() and torch.cuda.get_device_name())'
  "$PY" -c 'import transformers, torchvision; print("transformers", transformers.__version__, "torchvision", torchvision.__version__)'
  # where the names our folders carry resolve (a package of theirs, or none: never this checkout's folders)
  "$PY" -c 'import importlib.util as u; print("imports:", *(m + "=" + str(getattr(u.find_spec(m), "origin", None)) for m in ("kernels", "capture", "tracetriage.capture")))'
  git rev-parse HEAD 2>/dev/null; } >> "$LOG" 2>&1
say "== realworld group $GROUP on $DEVICE, budget ${BUDGET}s, work in $WORK"

case $GROUP in
a)
  part pairs-optim 120 $(pairs pairs) --only adamw_foreach_off sgd_momentum_loop adam_step_only empty_cache
  part pairs-fusion 150 $(pairs pairs) --only rmsnorm_swiglu_large rmsnorm_swiglu_mid rmsnorm_swiglu_small chain6_large
  part pairs-vision 120 $(pairs pairs) --only dataloader_cnn cnn_b1
  part pairs-recompile 200 $(pairs pairs) --only recompile
  part cold 200 "$PY" -m tracetriage.capture.realworld_cold --device "$DEVICE" --out "$WORK/cold"
  ;;
c)
  part cold-mlp 110 "$PY" -m tracetriage.capture.realworld_cold --device "$DEVICE" --out "$WORK/cold" --model mlp
  part pairs-recompile-batch 100 $(pairs pairs) --only recompile_batch
  part cold-gpt2 160 "$PY" -m tracetriage.capture.realworld_cold --device "$DEVICE" --out "$WORK/cold" --model gpt2
  part pairs-recompile-gpt2 160 $(pairs pairs) --only recompile_gpt2
  ;;
b)
  part traces 90 "$PY" -m tracetriage.capture.realworld_traces --device "$DEVICE" --out "$WORK/traces" --only training norepeat health
  part decode 120 "$PY" -m tracetriage.capture.realworld_traces --device "$DEVICE" --out "$WORK/traces" --only decode
  hf_pairs 220
  part generate 220 "$PY" -m tracetriage.capture.realworld_generate --device "$DEVICE" --out "$WORK/generate"
  hf_retry 150
  ;;
knobs)
  part knobs-tf32 90 $(pairs pairs) --only tf32_gemm tf32_mlp_train
  part knobs-autocast 120 $(pairs pairs) --only autocast_mlp_train autocast_resnet_train
  part knobs-channels-last 120 $(pairs pairs) --only channels_last_resnet50 channels_last_r18_train
  part knobs-grads 90 $(pairs pairs) --only set_to_none_wide set_to_none_small
  part knobs-factory 90 $(pairs pairs) --only device_randn device_masks
  ;;
knobs2)     # each knob's third workload: HF GPT-2 from configs, torchvision's mobilenet_v2
  part knobs-third 300 $(pairs pairs) --only tf32_gpt2_infer autocast_gpt2_train channels_last_mobilenet \
    set_to_none_gpt2 device_labels
  ;;
knobs3)    # sdpa, cudnn_benchmark, inference_mode, keep_allocator_cache: three workloads each
  part knobs3-sdpa 150 $(pairs pairs) --only sdpa_gpt_train sdpa_vit_infer sdpa_hf_gpt2
  part knobs3-inference-mode 120 $(pairs pairs) --only inference_mode_gpt2 inference_mode_resnet inference_mode_encoder
  part knobs3-cudnn-benchmark 240 $(pairs pairs) --only cudnn_bench_r3d cudnn_bench_deeplab cudnn_bench_convnext
  part knobs3-allocator 120 $(pairs pairs) --only empty_cache_conv_train empty_cache_encoder_infer
  ;;
knobs4)    # drop_float64, convert_on_gpu, no_checkpointing: three workloads each
  part knobs4-float64 170 $(pairs pairs) --only float64_mlp_train float64_heat_stencil float64_fno_train
  part knobs4-convert 150 $(pairs pairs) --only convert_images_resnet convert_audio_encoder convert_half_features_mlp
  part knobs4-checkpoint 190 $(pairs pairs) --only checkpoint_encoder_train checkpoint_gpt2_train \
    checkpoint_convstack_train
  ;;
knobs5)    # validate_args, cross_entropy, embedding_max_norm, module_round_trip: two or three workloads each
  part knobs5-validate 150 $(pairs pairs) --only validate_vae_train validate_beta_policy validate_mdn_train
  part knobs5-loss-norm 190 $(pairs pairs) --only onehot_smoothed_lm onehot_segmentation maxnorm_skipgram \
    maxnorm_embedding_bag
  part knobs5-offload 120 $(pairs pairs) --only offload_vae_decoder offload_reranker
  ;;
loader)    # dataloader_workers: three workloads, the knob alone (no pin_memory), 4 workers forked per variant
  part loader-workers 300 $(pairs pairs) --only loader_tokenize_lm loader_numpy_features loader_stft_audio
  ;;
smoke)
  # side by side, each writing its own folder. Vision and the loaders run first in its process: their DataLoader
  # workers fork before any compile worker pool exists there.
  part smoke-pairs 150 $(pairs pairs) --smoke --reps 1 --only dataloader_cnn loader_tokenize_lm \
    loader_numpy_features loader_stft_audio cnn_b1 adamw_foreach_off \
    sgd_momentum_loop adam_step_only empty_cache rmsnorm_swiglu_large rmsnorm_swiglu_mid rmsnorm_swiglu_small \
    chain6_large recompile recompile_batch recompile_gpt2 tf32_gemm tf32_mlp_train autocast_mlp_train \
    autocast_resnet_train channels_last_resnet50 channels_last_r18_train set_to_none_wide set_to_none_small \
    device_randn device_masks tf32_gpt2_infer autocast_gpt2_train channels_last_mobilenet set_to_none_gpt2 \
    device_labels sdpa_gpt_train sdpa_vit_infer sdpa_hf_gpt2 inference_mode_gpt2 inference_mode_resnet \
    inference_mode_encoder cudnn_bench_r3d cudnn_bench_deeplab cudnn_bench_convnext empty_cache_conv_train \
    empty_cache_encoder_infer float64_mlp_train float64_heat_stencil float64_fno_train convert_images_resnet \
    convert_audio_encoder convert_half_features_mlp checkpoint_encoder_train checkpoint_gpt2_train \
    checkpoint_convstack_train validate_vae_train validate_beta_policy validate_mdn_train onehot_smoothed_lm \
    onehot_segmentation maxnorm_skipgram maxnorm_embedding_bag offload_vae_decoder offload_reranker &
  { hf_pairs 150 --smoke --reps 1; hf_retry 150 --smoke --reps 1; } &
  part smoke-generate 150 "$PY" -m tracetriage.capture.realworld_generate --device "$DEVICE" --out "$WORK/generate" --smoke &
  part smoke-traces 150 "$PY" -m tracetriage.capture.realworld_traces --device "$DEVICE" --out "$WORK/traces" --smoke &
  part smoke-cold 150 "$PY" -m tracetriage.capture.realworld_cold --device "$DEVICE" --out "$WORK/cold" --smoke --model resnet18 mlp gpt2 &
  wait
  ;;
esac

say "== summary (profiled and unprofiled after/before ratios: median [p10-p90])"
"$PY" -m tracetriage.capture.realworld --summary "$WORK" 2>&1 | cut -c1-900 | tee -a "$LOG"

TAR=$OUT/realworld-$GROUP.tar.gz
tar czf "$TAR" -C "$ROOT" "$GROUP"
if [ "$(stat -c %s "$TAR")" -gt $((15 << 20)) ]; then     # the device call brings back files of up to 16 MiB
  tar czf "$TAR" -C "$ROOT" --exclude "$GROUP/generate" --exclude "$GROUP/traces" "$GROUP"
  tar czf "$OUT/realworld-$GROUP-2.tar.gz" -C "$ROOT" "$GROUP/generate" "$GROUP/traces"
fi
ls -la "$OUT" | tee -a "$LOG"
# The parts whose rc file is not 0; pairs-hf counts as passed when its rerun without cuda_graphs passed.
FAILED=""
for f in "$WORK"/logs/*.rc; do
  name=$(basename "$f" .rc)
  [ "$(cat "$f")" = 0 ] && continue
  if [ "$name" = pairs-hf ] && [ "$(cat "$WORK/logs/pairs-hf-no-graphs.rc" 2>/dev/null)" = 0 ]; then
    FAILED="$FAILED pairs-hf's cuda_graphs variant (the rerun without it passed)"
  else
    FAILED="$FAILED $name"
  fi
done
say "== group $GROUP done in $(elapsed)s: ${FAILED:+FAILED or skipped:}${FAILED:-every part ok}"
rm -rf "$ROOT"
[ -z "$FAILED" ]
