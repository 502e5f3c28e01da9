"""The analyses of one trace, each a typed, frozen result.

Idle gaps and their causes with evidence (idle), one-time set-up (setup; the first calls that held the
host: first_calls), the steps of the loop (steps),
prefill and decode from shapes (inference), whose code made the idle (framework), the user's own frames
(frames), device time by op and kernel (hotspots), named ranges (ranges), FLOPs and bytes from shapes
(opcost), the peak table (peaks), roofline points and the regime (roofline), eager elementwise chains
(fusion), Inductor kernels' ATen ops (inductor), exposed communication and its links (comm, peer_links),
graph captures (graph_capture), the health check (health), per-stream figures for HTA (streams), the
straggler rules over ranks (ranks). They read a `Trace` and the model; none reads a file or a layer above.
"""
