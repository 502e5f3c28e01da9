"""The trace model and the vocabulary every later layer shares.

`Trace` (linked event columns in integer ns, its caveats, `TraceError`), the verdicts'
string enums (`Cause`, `Regime`, `Bound`, `Experiment`), each idle cause's frozen evidence
type, what a CUDA/HIP runtime call is (one name test per concept), interval arithmetic on
sorted ns arrays. Nothing here reads a file or decides a verdict; it imports no other layer.
"""
