"""The answer parts of the ladder's new kinds: (answer type, what the answer file holds), as drills.bank.PARTS.

The types are drills.bank's TEXT, NAMES and NUMBER (spelled here: the bank imports this module)."""
from __future__ import annotations

TEXT, NAMES, NUMBER = "text", "names", "number"

PARTS = {
    "ridge": {
        "ridge": (NUMBER, "FLOP/byte: the ridge point of the trace's own device for bf16 (its datasheet peaks)"),
        "below": (NAMES, "the kernels (k1 ... k6) below that ridge on the trace's device: a list, or \"none\""),
        "flips": (NAMES, "the kernels whose side of the ridge changes between the four cards: a list, or \"none\""),
    },
    "bytes_ledger": {
        "new_bytes": (NUMBER, "the new storage the block's lines allocate and keep, host and device, with its unit "
                              "(\"770 MB\")"),
        "views": (NAMES, "the lines that are views (no new storage): their numbers or line_N names, or \"none\""),
        "hurts": (NAMES, "the one line that takes the most time (its number or line_N name)"),
    },
    "view_copy": {
        "copies": (NAMES, "the ops that copy (op_NN, or their numbers): a list"),
        "copy_bytes": (NUMBER, "the new storage those copies allocate in all, with its unit (\"48 MiB\")"),
        "rule": (TEXT, "free text: the one-line rule that tells a view from a copy"),
    },
    "intensity": {
        "intensity": (NUMBER, "FLOP/byte of one decode step's matmuls against the weights they read"),
        "compute_bound_on": (NAMES, "the cards (of the four shown) on which this step sits above the ridge, or "
                                    "\"none\""),
        "batch_at_ridge": (NUMBER, "the batch at which the step would reach the ridge of the trace's own device"),
    },
    "occupancy": {
        "occupancy_pct": (NUMBER, "%: the kernel's achieved occupancy (warps resident per SM over the SM's warps)"),
        "achieved": (NUMBER, "what the kernel reaches: GB/s for a streaming kernel, TFLOP/s for a matmul; with its "
                             "unit"),
        "verdict": (TEXT, "lever | sideshow | harm: is raising this kernel's occupancy the lever?"),
    },
    "transpose": {
        "strided": (NAMES, "the operand read against its layout in the first trace's code (x, y, a, b), or "
                           "\"none\""),
        "sector_bytes": (NUMBER, "the bytes of 32-byte sectors that operand's reads ask for, at worst, per call; with "
                                 "its unit (0 when none is strided)"),
        "verdict": (TEXT, "worth | not worth: does the contiguous copy in the second trace pay for itself?"),
    },
}

# What a drill asks you to predict before you look closer (tracetriage.drills.quantities names them).
PREDICT = {"ridge": "intensity", "bytes_ledger": "span_ms", "view_copy": "span_ms", "intensity": "intensity",
           "occupancy": "kernel_busy_ms", "transpose": "kernel_busy_ms"}
KINDS = tuple(PARTS)

# What each kind's key gives away about the trace it shows, once graded (issue 34: no other drill may show the same
# trace and ask an answer of the same kind); the bank's own table takes these beside its kinds'.
TRACE_ANSWERS = {"ridge": ("intensity", "ridge_side"), "bytes_ledger": ("storage", "slowest_line"),
                 "view_copy": ("storage", "view_or_copy"), "intensity": ("intensity", "ridge_side"),
                 "occupancy": ("occupancy", "rate", "occupancy_verdict"), "transpose": ("strided", "copy_pays")}
