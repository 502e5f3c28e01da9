#!/usr/bin/env bash
# On the GPU machine: OUT=$OUT bash capture/record_fresh4.sh   (fresh4.py: 8 before/after pairs; budget 390 s + the last workload)
exec bash "$(dirname "${BASH_SOURCE[0]}")/record_fresh.sh" fresh4 470
