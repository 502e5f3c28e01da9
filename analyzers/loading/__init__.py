"""Loading: a trace file becomes a frozen `Trace`, in one direction only.

read (file bytes, gzip, the memory budget) -> decode (msgspec into numpy columns) -> assemble
(one sorted table) -> link (cpu_op <-> launch call <-> GPU activity) -> cache (Parquet, keyed by
content); `load()` runs the steps in order. The trace formats (formats: the names a trace goes by,
how each format is told from its first bytes, its decoder) are the one seam a new input format plugs
into. Also what loading needs around it: the memory estimate, the progress bar and atomic writes.
Imports only the model.
"""
