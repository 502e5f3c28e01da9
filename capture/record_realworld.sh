#!/usr/bin/env bash
# Record the real-world ground truth (capture/realworld*.py) on a GPU machine, one group per device call:
#   OUT=$OUT GROUP=a bash capture/record_realworld.sh      optimizers, allocator, fusion, vision, recompiles, warm_up
#   OUT=$OUT GROUP=b bash capture/record_realworld.sh      HF generate (pairs + phase traces), graph-captured decode,
#                                                          training-outlier / no-repetition / health-check traces
#   OUT=$OUT GROUP=smoke bash capture/record_realworld.sh  every part once, small (reps 1): a shake-out, not data
# Run from the repo root. Each group stops starting parts once BUDGET seconds (a: 530, b: 530, smoke: 170) have
# passed, and cuts the running one there, so its tarball is written inside a 10-minute call.
# Writes into $OUT (at most 4 files):
#   realworld-$GROUP.log       everything printed, each part's full output, and the summary (also on stdout)
#   realworld-$GROUP.tar.gz    $GROUP/{pairs,cold,generate,traces}/...: traces, measured.json, *.truth.json, logs
#   realworld-$GROUP-2.tar.gz  only if the first would pass 15 MiB: the generate/ and traces/ folders
set -u
GROUP=${GROUP:?set GROUP=a, b or smoke}
OUT=${OUT:?set OUT to the folder for the results}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}     # DEVICE=cpu PYTHON=... runs the same script on a CPU (a dry run of the plumbing)
case $GROUP in a|b) BUDGET=${BUDGET:-530} ;; smoke) BUDGET=${BUDGET:-170} ;; *) echo "GROUP must be a, b or smoke" >&2; exit 2 ;; esac
mkdir -p "$OUT"
ROOT=$(mktemp -d /tmp/realworld.XXXXXX)
WORK=$ROOT/$GROUP
mkdir -p "$WORK/logs"
LOG=$OUT/realworld-$GROUP.log
: > "$LOG"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
START=$(date +%s)
FAILED=0

say() { echo "$*" | tee -a "$LOG"; }
elapsed() { echo $(( $(date +%s) - START )); }

# part NAME CAP_SECONDS CMD...: one step under `timeout`, its output in logs/NAME.log; a hang or crash costs
# only itself. Its limit is CAP or what is left of the budget, whichever is less.
part() {
  local name=$1 cap=$2; shift 2
  local left=$(( BUDGET - $(elapsed) ))
  local limit=$(( cap < left ? cap : left ))
  if [ "$limit" -lt 20 ]; then say "[SKIP $name: out of time at $(elapsed)s]"; FAILED=1; return; fi
  local t0=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$WORK/logs/$name.log" 2>&1
  local rc=$?
  cat "$WORK/logs/$name.log" >> "$LOG"
  grep -E '^\[(ok|FAIL)' "$WORK/logs/$name.log" | cut -c1-400 | sed 's/^/  /' | tee -a "$LOG"
  local verdict=ok
  if [ "$rc" -ne 0 ]; then verdict=FAIL; FAILED=1; fi
  [ "$rc" -eq 124 ] && verdict="FAIL (timed out at ${limit}s)"
  say "[$verdict $name rc=$rc $(( $(date +%s) - t0 ))s; group at $(elapsed)s of $BUDGET]"
  return $rc
}

PAIRS=("$PY" -m capture.realworld --out "$WORK/pairs" --merge --device "$DEVICE")     # (timeout runs programs, not shell functions)
# HF generate with its cuda_graphs variant; if the scenario fails (not a time-out), again without that variant.
hf_pairs() {
  part pairs-hf "$1" "${PAIRS[@]}" --only hf_llama_generate ${SMOKE:+--smoke --reps 1}
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
    part pairs-hf-no-graphs "$1" "${PAIRS[@]}" --only hf_llama_generate --drop-lever cuda_graphs ${SMOKE:+--smoke --reps 1}
  fi
}

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used --format=csv
  "$PY" -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__, torch.cuda.get_device_name())'
  "$PY" -c 'import transformers, torchvision; print("transformers", transformers.__version__, "torchvision", torchvision.__version__)'
  git rev-parse HEAD 2>/dev/null; } >> "$LOG" 2>&1
say "== realworld group $GROUP, budget ${BUDGET}s, work in $WORK"

case $GROUP in
a)
  part pairs-optim 120 "${PAIRS[@]}" --only adamw_foreach_off sgd_momentum_loop adam_step_only empty_cache
  part pairs-fusion 150 "${PAIRS[@]}" --only rmsnorm_swiglu_large rmsnorm_swiglu_mid rmsnorm_swiglu_small chain6_large
  part pairs-vision 120 "${PAIRS[@]}" --only dataloader_cnn cnn_b1
  part pairs-recompile 200 "${PAIRS[@]}" --only recompile
  part cold 200 "$PY" -m capture.realworld_cold --device "$DEVICE" --out "$WORK/cold"
  ;;
b)
  hf_pairs 260
  part generate 240 "$PY" -m capture.realworld_generate --device "$DEVICE" --out "$WORK/generate"
  part decode 120 "$PY" -m capture.realworld_traces --device "$DEVICE" --out "$WORK/traces" --only decode
  part traces 90 "$PY" -m capture.realworld_traces --device "$DEVICE" --out "$WORK/traces" --only training norepeat health
  ;;
smoke)
  SMOKE=1
  # vision first: its DataLoader workers fork before any compile worker pool exists in the process
  part smoke-pairs 100 "${PAIRS[@]}" --smoke --reps 1 --only dataloader_cnn cnn_b1 adamw_foreach_off sgd_momentum_loop \
    adam_step_only empty_cache rmsnorm_swiglu_large rmsnorm_swiglu_mid rmsnorm_swiglu_small chain6_large recompile
  hf_pairs 60
  part smoke-generate 40 "$PY" -m capture.realworld_generate --device "$DEVICE" --out "$WORK/generate" --smoke
  part smoke-traces 50 "$PY" -m capture.realworld_traces --device "$DEVICE" --out "$WORK/traces"
  part smoke-cold 40 "$PY" -m capture.realworld_cold --device "$DEVICE" --out "$WORK/cold" --smoke
  ;;
esac

say "== summary (profiled and unprofiled after/before ratios: median [p10-p90, min-max])"
"$PY" -m capture.realworld --summary "$WORK" 2>&1 | cut -c1-700 | tee -a "$LOG"

TAR=$OUT/realworld-$GROUP.tar.gz
tar czf "$TAR" -C "$ROOT" "$GROUP"
if [ "$(stat -c %s "$TAR")" -gt $((15 << 20)) ]; then     # the device call brings back files of up to 16 MiB
  tar czf "$TAR" -C "$ROOT" --exclude "$GROUP/generate" --exclude "$GROUP/traces" "$GROUP"
  tar czf "$OUT/realworld-$GROUP-2.tar.gz" -C "$ROOT" "$GROUP/generate" "$GROUP/traces"
fi
ls -la "$OUT" | tee -a "$LOG"
say "== group $GROUP done in $(elapsed)s, $( [ $FAILED = 0 ] && echo 'every part ok' || echo 'some part FAILED or was skipped: see above')"
rm -rf "$ROOT"
exit $FAILED
