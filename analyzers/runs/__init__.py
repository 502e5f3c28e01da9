"""Runs: the analysis of many traces at once (`report DIR`), after the output layer.

Lists a run's rank traces wherever they live (local folders, fsspec URLs: `sources`), analyses each
rank in a local process pool (`pool`) or on a Dask cluster (`dask`), and joins the per-rank results
into the ranks report. It reads the engine through its public functions and prints nothing itself;
`machine` says how many CPUs the pool may use.
"""
