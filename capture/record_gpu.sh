#!/usr/bin/env bash
# Record the sample library on a GPU machine, in one go, into $OUT:
#   lib.tar.gz    traces/*.json.gz + *.meta.json + manifest.json + measurements.json + ceilings.json
#   bench.json.gz prefill + 400 eager decode steps: the large trace for the speed benchmark
#   *.log         everything printed
# Usage (repo root, python3 with torch + triton): OUT=/tmp/out bash capture/record_gpu.sh
set -u
OUT=${OUT:-/tmp/tracetriage-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi > "$OUT/nvidia-smi.log" 2>&1
python3 -c 'import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())' 2>&1 >> "$OUT/nvidia-smi.log"; tail -1 "$OUT/nvidia-smi.log"
timeout 360 python3 -m capture.library --out "$OUT/lib" --sweeps > "$OUT/library.log" 2>&1
echo "library exit $?" | tee -a "$OUT/library.log"; grep -E '^\[(ok|FAIL)' "$OUT/library.log"
tar czf "$OUT/lib.tar.gz" -C "$OUT" lib
{ timeout 60 python3 -m kernels.fused_chain; timeout 60 python3 -m kernels.fused_softmax; } > "$OUT/kernels.log" 2>&1
tail -30 "$OUT/kernels.log"
timeout 120 python3 - > "$OUT/bench.log" 2>&1 <<'PY'
from capture.harness import capture_workload
from capture.gpt import PrefillDecode
wl = PrefillDecode(mode="eager", decode_steps=400, steps=1, warmup=1)
meta = capture_workload(wl, "/tmp/bench/gpt-eager-400.json.gz", name="gpt-eager-400", time_repeats=2)
print(meta["trace_bytes_gz"])
PY
cp /tmp/bench/gpt-eager-400.json.gz "$OUT/bench.json.gz" 2>/dev/null; cp /tmp/bench/gpt-eager-400.meta.json "$OUT/bench.meta.json" 2>/dev/null
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_kernels.py > "$OUT/gpu-tests.log" 2>&1; tail -2 "$OUT/gpu-tests.log"
tail -3 "$OUT/bench.log"; ls -la "$OUT"
