#!/usr/bin/env bash
# Record the sample library on a GPU machine, in one go, into $OUT:
#   lib.tar.gz    <presets>.json.gz + .meta.json + manifest.json + measurements.json + ceilings.json
#                 (+ ddp/rank*.json.gz when the machine has 2+ GPUs)
#   bench.json.gz prefill + 400 eager decode steps (BENCH=1): a large trace for the speed benchmark
#   *.log         everything printed
# Usage (repo root, python3 with torch + triton):
#   OUT=/tmp/out [PRESETS="smell-sync-item ..."] [EXTRA="ceilings fusion_sweep"] [BENCH=0] bash capture/record_gpu.sh
set -u
OUT=${OUT:-/tmp/tracetriage-gpu}
EXTRA=${EXTRA-ceilings fusion_sweep}
BENCH=${BENCH:-1}
mkdir -p "$OUT/lib"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi > "$OUT/nvidia-smi.log" 2>&1
python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name(), torch.cuda.device_count())' >> "$OUT/nvidia-smi.log" 2>&1; tail -1 "$OUT/nvidia-smi.log"
timeout 360 python3 -m tracetriage.capture.library --out "$OUT/lib" ${PRESETS:+--only $PRESETS} ${EXTRA:+--extra $EXTRA} > "$OUT/library.log" 2>&1
echo "library exit $?" | tee -a "$OUT/library.log"; grep -E '^\[(ok|FAIL)' "$OUT/library.log"
if [ "$(python3 -c 'import torch; print(torch.cuda.device_count())')" -ge 2 ]; then
  timeout 180 python3 -m tracetriage.capture.distributed --out "$OUT/lib/ddp" --nproc 2 >> "$OUT/library.log" 2>&1
  echo "ddp exit $?" | tee -a "$OUT/library.log"
fi
timeout 120 python3 -m tracetriage.cli capture --out "$OUT/lib/script-toy-train.json.gz" script capture/examples/toy_train.py --steps 20 >> "$OUT/library.log" 2>&1; echo "script exit $?" | tee -a "$OUT/library.log"
tar czf "$OUT/lib.tar.gz" -C "$OUT" lib && rm -rf "$OUT/lib"
if [ "$BENCH" = 1 ]; then
  { timeout 60 python3 -m tracetriage.kernels.fused_chain; timeout 60 python3 -m tracetriage.kernels.fused_softmax; } > "$OUT/kernels.log" 2>&1
  tail -30 "$OUT/kernels.log"
  timeout 120 python3 - > "$OUT/bench.log" 2>&1 <<'PY'
from tracetriage.capture.harness import capture_workload
from tracetriage.capture.gpt import PrefillDecode
wl = PrefillDecode(mode="eager", decode_steps=400, steps=1, warmup=1)
meta = capture_workload(wl, "/tmp/bench/gpt-eager-400.json.gz", name="gpt-eager-400", time_repeats=2)
print(meta["trace_bytes_gz"])
PY
  tail -3 "$OUT/bench.log"
fi
ls -la "$OUT"
