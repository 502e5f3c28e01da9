"""Tooling beside the analysis: the speed benchmark against HTA, the trace grower, the HTA bridge.

Nothing under analyzers/ outside this package imports it (the report's `--hta` flag loads the
bridge on demand from the CLI).
"""
