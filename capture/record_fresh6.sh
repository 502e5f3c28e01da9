#!/usr/bin/env bash
# On the GPU machine: OUT=$OUT bash capture/record_fresh6.sh   (fresh6.py: 8 before/after pairs; budget 320 s, FRESH6_BUDGET_S)
exec bash "$(dirname "${BASH_SOURCE[0]}")/record_fresh.sh" fresh6 480
