#!/usr/bin/env bash
# On the GPU machine, from the repo root: OUT=$OUT bash capture/record_fresh3.sh  (fresh3.py: 8 before/after pairs)
set -uo pipefail; : "${OUT:?OUT must name the output folder}"; export PYTHONUNBUFFERED=1
W=$(mktemp -d); LOG="$OUT/fresh3.log"; nvidia-smi -L > "$LOG" 2>&1; python3 -c 'import torch,transformers,timm,torchvision as v;print(torch.__version__,transformers.__version__,timm.__version__,v.__version__)' >> "$LOG" 2>&1
timeout 540 python3 capture/fresh3.py --out "$W/fresh3" 2>&1 | grep -v '^USDT:' | tee -a "$LOG"; echo "fresh3.py rc=${PIPESTATUS[0]}" | tee -a "$LOG"
ls -l "$W/fresh3" | tee -a "$LOG"; tar -czf "$OUT/fresh3.tar.gz" -C "$W" fresh3
SZ=$(stat -c %s "$OUT/fresh3.tar.gz"); echo "fresh3.tar.gz: $SZ bytes" | tee -a "$LOG"
if [ "$SZ" -ge $((15 * 1024 * 1024)) ]; then echo "over 15 MiB: keeping truth.json only" | tee -a "$LOG"; tar -czf "$OUT/fresh3.tar.gz" -C "$W" fresh3/truth.json; fi
python3 -c 'import json,sys;[print(w["name"],w.get("status"),w.get("speedup"),w.get("reason","")[:200]) for w in json.load(open(sys.argv[1]))["workloads"]]' "$W/fresh3/truth.json" | tee -a "$LOG"
