"""A sync Next in the words of the op that syncs where the user wrote no read-back: a sparse COO product coalesces
its operand on every call (analyzers.analyses.sparse_syncs, found by the triage); its fix is the matrix's format,
not a deferred read."""
from __future__ import annotations

from tracetriage.analyzers.model.units import integer
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.said import claim


def coalesce_advice(a: Analysis) -> str | None:
    """'coalesce the sparse matrix once ...' where syncs inside aten::_coalesce hold most of the sync time; None
    otherwise (the cause's own advice holds)."""
    c = getattr(a, "coalesce_syncs", None)
    if c is None:
        return None
    n = claim("next.coalesce_syncs", c.syncs, integer(c.syncs))
    return (f"remove the syncs of the sparse matrix products ({n} of the "
            f"{claim('next.coalesce_sync_calls', c.total, integer(c.total))} sync calls are inside aten::_coalesce, "
            "holding " + claim("next.coalesce_sync_share", c.share, f"{100 * c.share:.0f}%") + " of the time "
            "the host spent in syncs): a sparse COO operand is coalesced on every product, which reads its index "
            "count back to the host; coalesce the sparse matrix once where it is built (.coalesce()) or store it "
            "as CSR (.to_sparse_csr())")
