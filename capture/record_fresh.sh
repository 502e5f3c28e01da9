#!/usr/bin/env bash
# On the GPU machine: OUT=$OUT bash capture/record_fresh.sh NAME TIMEOUT_S   (runs capture/NAME.py: its before/after pairs)
# Writes $OUT/NAME.tar.gz (NAME/: the traces + truth.json) and $OUT/NAME.log; the script is killed at TIMEOUT_S
# (truth.json is rewritten after each workload). Over 15 MiB, only truth.json comes back (the device's file limit).
set -uo pipefail; : "${OUT:?OUT must name the output folder}"; export PYTHONUNBUFFERED=1
NAME=${1:?the suite: fresh4, fresh5, ...}; LIMIT=${2:?seconds before the script is killed}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); PY=${PY:-python3}
W=$(mktemp -d); LOG="$OUT/$NAME.log"; nvidia-smi -L > "$LOG" 2>&1; nproc >> "$LOG"
$PY -c 'import torch,triton;print(torch.__version__,triton.__version__)' >> "$LOG" 2>&1
$PY -c 'import torchvision as v,transformers as t,timm;print(v.__version__,t.__version__,timm.__version__)' >> "$LOG" 2>&1
timeout "$LIMIT" $PY "$HERE/$NAME.py" --out "$W/$NAME" 2>&1 | grep -v '^USDT:' | tee -a "$LOG"; echo "$NAME.py rc=${PIPESTATUS[0]}" | tee -a "$LOG"
ls -l "$W/$NAME" | tee -a "$LOG"; tar -czf "$OUT/$NAME.tar.gz" -C "$W" "$NAME"
SZ=$(stat -c %s "$OUT/$NAME.tar.gz"); echo "$NAME.tar.gz: $SZ bytes" | tee -a "$LOG"
# Over 15 MiB (the device's per-file limit is 16): one tar per workload's pair beside truth.json, so the pairs that
# fit still come back.
if [ "$SZ" -ge $((15 * 1024 * 1024)) ]; then
  echo "over 15 MiB: one tar per pair" | tee -a "$LOG"; tar -czf "$OUT/$NAME.tar.gz" -C "$W" "$NAME/truth.json"
  for B in "$W/$NAME"/*-before.json.gz; do P=$(basename "$B" -before.json.gz)
    tar -cf "$OUT/$NAME--$P.tar" -C "$W" "$NAME/$P-before.json.gz" "$NAME/$P-after.json.gz" 2>>"$LOG"; done
fi
$PY -c 'import json,sys;[print(w["name"],w.get("status"),w.get("speedup"),w.get("reason","")[:200]) for w in json.load(open(sys.argv[1]))["workloads"]]' "$W/$NAME/truth.json" | tee -a "$LOG"
