"""Loading: a trace file becomes a frozen `Trace`, in one direction only.

read (file bytes, gzip, the memory budget) -> decode (msgspec into numpy columns) -> assemble
(one sorted table) -> link (cpu_op <-> launch call <-> GPU activity) -> cache (Parquet, keyed by
content); `load()` runs the steps in order. Also what loading needs around it: the memory
estimate, the progress bar and atomic writes. Imports only the model.
"""
