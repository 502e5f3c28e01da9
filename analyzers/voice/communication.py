"""The words for collectives: exposed communication, waiting for a peer against moving bytes, the link,
and the Next experiment of a communication-bound trace (the report's Regime and Next lines say them).
"""
from __future__ import annotations

from tracetriage.analyzers.model.units import duration_ns, gbps, integer, share, size
from tracetriage.analyzers.model.verdicts import Experiment
from tracetriage.analyzers.voice.analysis import Analysis
from tracetriage.analyzers.voice.claims import has_fp8
from tracetriage.analyzers.voice.said import claim


def bus_phrase(k, line: str = "regime") -> str:
    """' at 291 GB/s bus bandwidth (65% of the 450 GB/s NVLink 4)', or '' where the trace records no message; the
    link's share claimed on `line` ("regime", or "next.because")."""
    if k.bus_gbps is None:
        return ""
    link = (f" ({claim(f'{line}.link_share', k.link_share, share(k.link_share))} of the {gbps(k.link.gbps)} "
            f"{k.link.name})" if k.link is not None else "")
    return f" at {gbps(k.bus_gbps)} bus bandwidth{link}"


def kind_phrase(k, first: bool, against_peers: bool = False, explained: bool = False) -> str:
    """'AllReduce ×7: 623.1 ms exposed, 597.7 ms waiting for a peer and 25.4 ms moving 805.3 MB at 37 GB/s bus
    bandwidth (8% of the 450 GB/s NVLink 4)'; the first kind says what the wait is measured against: the fastest
    rank's same call (`report DIR`), or, from one rank's trace alone, its own fastest call of the kind (an estimate:
    a call can be slow for a reason of its own)."""
    head = f"{k.kind} ×{integer(k.calls)}: {duration_ns(k.exposed_ns)} exposed"
    unsplit = "not split either (no message size, no shapes)" if explained else _UNSPLIT
    if k.unsplit_ns and k.unsplit_ns >= k.exposed_ns:
        return f"{head}, {unsplit}"
    moving = (f"moving {size(k.message_bytes)}" if k.message_bytes is not None else
              "moving bytes (the trace records no message size)") + bus_phrase(k)
    basis = "against the fastest rank's same call" if against_peers else "against its own fastest call"
    waiting = f" ({basis})" if first else ""
    told = f" and {duration_ns(k.unsplit_ns)} {unsplit}" if k.unsplit_ns else ""
    return (f"{head}, {duration_ns(k.wait_ns)} waiting for a peer{waiting} and {duration_ns(k.transfer_ns)} "
            f"{moving}{told}")


# A call with no message size and no op shapes matches no other call: a slow one may move more bytes (a full-vocab
# logits gather beside per-layer ones), so its time is not split into waiting and moving (analyses.comm).
_UNSPLIT = ("not split into waiting for a peer and moving bytes: the trace records neither its message sizes nor its "
            "ops' shapes, so a slow call may be moving more bytes than a fast one, not waiting (record_shapes=True, "
            "or every rank's trace with tracetriage report DIR, tells them apart)")


WAIT_IN_BUSY = 0.25   # collectives waiting for a peer this share of the busy time: the Measured line says the busy
                      # share is not all work


def busy_wait_clause(c, span_ns: int, busy_ns: int) -> str:
    """', 74% of the span collective kernels waiting for a peer (against the fastest rank's same call), spinning, not
    working' beside the busy share, where the waiting holds WAIT_IN_BUSY of the busy time; '' otherwise. A collective
    kernel runs from its launch until every peer has arrived: the busy share counts the wait as work (heldout-user21
    moeep_after rank 0: 'kernels busy 75%' with ~0.3 ms of GEMMs beside 14.8 ms of all_to_alls waiting)."""
    if c is None or not span_ns or not busy_ns or c.wait_ns < WAIT_IN_BUSY * busy_ns:
        return ""
    basis = "against the fastest rank's same call" if c.against_peers else "against its own fastest call"
    return (f", {claim('measured.peer_wait_share', c.wait_ns / span_ns, share(c.wait_ns / span_ns))} of the span "
            f"collective kernels waiting for a peer ({basis}), spinning, not working")


def regime_line(v) -> str:
    """The Regime line of a communication-bound span."""
    c = v.communication
    shown = c.kinds[:2]
    kinds = "; ".join(kind_phrase(k, i == 0, c.against_peers, any(j.unsplit_ns for j in shown[:i]))
                      for i, k in enumerate(shown))
    return (f"Regime: communication-bound: collectives with no compute kernel beside them hold "
            f"{share(c.exposed_share)} of the kernel busy time ({duration_ns(c.exposed_ns)} exposed of "
            f"{duration_ns(c.collective_ns)} in collectives); {kinds}.")


def next_words(a: Analysis) -> dict[str, str]:
    """{"lever", "why", "waste"} of a communication-bound trace's next experiment."""
    c, nx = a.verdict.communication, a.next_experiment
    exposed = (f"{claim('next.because.exposed_share', c.exposed_share, share(c.exposed_share))} of the kernel busy "
               "time is collectives with no compute beside them "
               f"({duration_ns(c.exposed_ns)})")
    if nx.kind is Experiment.FIND_STRAGGLER:
        # measured against every rank's same calls, this report is part of `report DIR` already, and the rank it
        # waits for may change from call to call (heldout-user21 moeep: 2 ranks each waiting for the other in turn)
        lever = ("find what holds up the rank that arrives last at each call this rank waits in (the Straggler line "
                 "names it, or the ranks that take turns): its host between the collectives (first calls, a "
                 "blocked launch, a sync, data loading, uneven work) or a slower GPU, then even it out"
                 if c.against_peers else
                 "find the rank the others wait for: report every rank's trace together (tracetriage report "
                 "DIR) to name it and what holds it up (its host: data loading, a sync, uneven work; or a "
                 "slower GPU), then even it out")
        return {"lever": lever,
                "why": f"{exposed}, and {duration_ns(c.wait_ns)} of it is waiting for a peer to arrive, not moving "
                       "bytes",
                "waste": "faster kernels or more overlap on this rank: it waits for a peer that arrives late"}
    top = c.top
    link = ("; check the link: the topology (nvidia-smi topo -m) and NCCL's algorithm and protocol "
            "(NCCL_DEBUG=INFO)") if top.link_slow else ""
    if nx.lever is None:   # every collective already runs on a stream of its own, and nothing runs beside it
        # fp8 gradients only where the device has fp8 (voice.claims: advice the device can take)
        low = f"bf16 or {claim('next.precision.fp8', 1, 'fp8')}" if has_fp8(a.roof.peaks) else "bf16"
        lever = ("give the collectives compute to hide behind and fewer bytes to move: start them earlier (DDP "
                 f"buckets during backward, bucket_cap_mb; FSDP forward/backward prefetch), send {low} "
                 "gradients (a DDP comm hook), fewer, larger all-gathers")
    else:
        lever = ("overlap the collectives with the compute they do not depend on: all-reduce each gradient bucket "
                 "during backward (DDP, bucket_cap_mb), prefetch FSDP's all-gathers, or launch your own on a side "
                 "stream and wait on its event only where the result is read")
    why = (f"{exposed}, mostly moving bytes: {duration_ns(top.transfer_ns)} of {top.kind}"
           f"{bus_phrase(top, 'next.because')}{link}")
    if top.unsplit_ns > top.transfer_ns:
        why = (f"{exposed}; whether {top.kind}'s {duration_ns(top.unsplit_ns)} is moving bytes or waiting for a peer, "
               "this trace cannot tell (no message size, no op shapes)")
    return {"lever": lever, "why": why,
            "waste": "faster kernels: the step waits on the collectives, not on arithmetic or memory"}
