#!/usr/bin/env bash
# On the GPU machine: OUT=$OUT bash record_fresh4.sh   (runs fresh4.py next to this script: 8 before/after pairs)
# Writes $OUT/fresh4.tar.gz (fresh4/: 16 traces + truth.json) and $OUT/fresh4.log. fresh4.py ends within ~470 s (budget 390 s + last workload).
set -uo pipefail; : "${OUT:?OUT must name the output folder}"; export PYTHONUNBUFFERED=1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); PY=${PY:-python3}
W=$(mktemp -d); LOG="$OUT/fresh4.log"; nvidia-smi -L > "$LOG" 2>&1; nproc >> "$LOG"
$PY -c 'import torch,torchvision as v,triton;print(torch.__version__,v.__version__,triton.__version__)' >> "$LOG" 2>&1
timeout 470 $PY "$HERE/fresh4.py" --out "$W/fresh4" 2>&1 | grep -v '^USDT:' | tee -a "$LOG"; echo "fresh4.py rc=${PIPESTATUS[0]}" | tee -a "$LOG"
ls -l "$W/fresh4" | tee -a "$LOG"; tar -czf "$OUT/fresh4.tar.gz" -C "$W" fresh4
SZ=$(stat -c %s "$OUT/fresh4.tar.gz"); echo "fresh4.tar.gz: $SZ bytes" | tee -a "$LOG"
if [ "$SZ" -ge $((15 * 1024 * 1024)) ]; then echo "over 15 MiB: keeping truth.json only" | tee -a "$LOG"; tar -czf "$OUT/fresh4.tar.gz" -C "$W" fresh4/truth.json; fi
$PY -c 'import json,sys;[print(w["name"],w.get("status"),w.get("speedup"),w.get("reason","")[:200]) for w in json.load(open(sys.argv[1]))["workloads"]]' "$W/fresh4/truth.json" | tee -a "$LOG"
