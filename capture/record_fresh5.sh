#!/usr/bin/env bash
# On the GPU machine: OUT=$OUT bash record_fresh5.sh   (runs fresh5.py next to this script: 8 before/after pairs)
# Writes $OUT/fresh5.tar.gz (fresh5/: 16 traces + truth.json) and $OUT/fresh5.log. fresh5.py needs fresh_harness.py
# beside it; its global budget is 320 s and the whole run is killed at 420 s (truth.json is rewritten after each workload).
set -uo pipefail; : "${OUT:?OUT must name the output folder}"; export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); PY=${PY:-python3}
W=$(mktemp -d); LOG="$OUT/fresh5.log"; nvidia-smi -L > "$LOG" 2>&1; nproc >> "$LOG"
$PY -c 'import torch,torchvision as v,triton,transformers as t,timm;print(torch.__version__,v.__version__,triton.__version__,t.__version__,timm.__version__)' >> "$LOG" 2>&1
timeout 420 $PY "$HERE/fresh5.py" --out "$W/fresh5" 2>&1 | grep -v '^USDT:' | tee -a "$LOG"; echo "fresh5.py rc=${PIPESTATUS[0]}" | tee -a "$LOG"
ls -l "$W/fresh5" | tee -a "$LOG"; tar -czf "$OUT/fresh5.tar.gz" -C "$W" fresh5
SZ=$(stat -c %s "$OUT/fresh5.tar.gz"); echo "fresh5.tar.gz: $SZ bytes" | tee -a "$LOG"
if [ "$SZ" -ge $((15 * 1024 * 1024)) ]; then echo "over 15 MiB: keeping truth.json only" | tee -a "$LOG"; tar -czf "$OUT/fresh5.tar.gz" -C "$W" fresh5/truth.json; fi
$PY -c 'import json,sys;[print(w["name"],w.get("status"),w.get("speedup"),w.get("reason","")[:200]) for w in json.load(open(sys.argv[1]))["workloads"]]' "$W/fresh5/truth.json" | tee -a "$LOG"
