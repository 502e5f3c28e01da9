"""The analyses of one trace, each a typed, frozen result.

Idle gaps and their causes with evidence (idle), device time by op and kernel (hotspots), named
ranges (ranges), FLOPs and bytes from shapes (opcost), the peak table (peaks), roofline points and
the regime (roofline), per-stream figures for HTA (streams), the straggler rules over ranks (ranks).
They read a `Trace` and the model; none reads a file or another layer above.
"""
