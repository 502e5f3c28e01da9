"""Assemble decoded parts into one table of events: the third step of loading.

Each decoded Part has its own local name and shape tables; here they are merged
(re-numbered), times become integer ns, GPU activities of old traces get their device
and stream from pid/tid, impossible times are dropped and counted, exact duplicates
counted once, and the rows sorted by (start, -end): parents before children.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tracetriage.analyzers.loading.decode import Part, ns_from_us, table_list
from tracetriage.analyzers.model.groups import any_of
from tracetriage.analyzers.model.trace import (
    CAT_CODES,
    EVENT_COLUMNS,
    GPU_CATS,
    MAX_DUR_US,
    MAX_TS_US,
    NONE,
    OTHER,
    Caveat,
    Events,
    Tables,
)

# The sorted columns are gathered in two threads from this many rows on (below it a thread pool's start, ~0.2 ms, is a
# share of the work)
THREADED_ROWS = 50_000
SORT_THREADS = 2


def assemble(parts: list[Part], path: Path) -> Tables:
    """Merge the decoded parts (re-numbering their local name/shape tables), convert times, sort."""
    names: dict[str, int] = {}
    shapes: dict[tuple, int] = {}
    cols: dict[str, list] = {}
    for part in parts:
        first = not names and not shapes
        name_map = np.array([names.setdefault(n, len(names)) for n in part.names] or [0], np.int32)
        shape_map = np.array([shapes.setdefault(k, len(shapes)) for k in part.shapes] or [0], np.int32)
        cat_lut = np.array([CAT_CODES.get(str(c).lower(), OTHER) for c in part.cols["cat_names"]] or [0], np.int8)
        c = part.cols
        sid = c["shape"]
        # the first part's tables are its own, in order (ids 0..n-1): its name and shape ids stand as they are (one
        # part, as a large .gz's streamed scan gives: two gathers of 1M rows fewer)
        same_names = first and len(part.names) == len(names) and c["name"].dtype == np.int32
        same_shapes = first and len(part.shapes) == len(shapes) and sid.dtype == np.int32 and \
            (not len(sid) or sid.min() >= NONE)
        local = {"name": c["name"] if same_names or not len(c["name"]) else name_map[c["name"]],
                 "cat": cat_lut[c["cat_raw"]] if len(c["cat_raw"]) else c["cat_raw"].astype(np.int8),
                 "shape": sid if same_shapes else
                 np.where(sid >= 0, shape_map[np.maximum(sid, 0)], NONE).astype(np.int32)}
        for k in ("ts", "dur", "pid", "tid", "ext", "corr", "device", "stream", "nbytes", "graph_node", "group", "seq",
                  "pyid"):
            local[k] = c[k]
        for k, v in local.items():
            cols.setdefault(k, []).append(v)
    # Times that cannot be right: negative, not finite, or beyond what int64 ns hold (ts past year
    # 2096 in µs since the epoch, a duration over 11 days). Such rows are dropped and counted.
    ts, dur = _joined(cols.pop("ts")), _joined(cols.pop("dur"))
    bad = ~((ts >= 0) & (ts <= MAX_TS_US) & (dur >= 0) & (dur <= MAX_DUR_US))  # (NaN compares False)
    n_bad = int(bad.sum())
    if n_bad:
        ts, dur = ts[~bad], dur[~bad]
    start, end = _ns_times(ts, dur)
    order = _by_start_longest_first(start, end)
    col = _sorted_columns(cols, start, end, order, ~bad if n_bad else None)
    start, end = col.pop("start"), col.pop("end")
    cat, pid, tid = col["cat"], col["pid"], col["tid"]
    device, stream = col["device"].astype(np.int32), col["stream"]
    # GPU activities without args.device/stream (old traces): pid is the device, tid the stream.
    gpu = any_of(cat, GPU_CATS)
    fix = gpu & (device == NONE) & (pid >= 0)
    device[fix] = pid[fix]
    fix = gpu & (stream == NONE) & (tid >= 0)
    stream[fix] = tid[fix]
    ev = Events(cat=cat, name=col["name"], start=start, end=end, pid=pid,
                tid=tid, device=device, stream=stream, ext=col["ext"],
                corr=col["corr"], nbytes=col["nbytes"], shape=col["shape"],
                graph_node=col["graph_node"], group=col["group"],
                seq=col["seq"], pyid=col["pyid"])
    caveats = []
    dropped = sum(p.dropped for p in parts) + n_bad
    if dropped:
        caveats.append(Caveat("dropped_events", dropped))
    ev, dups = _drop_duplicates(ev)
    if dups:
        caveats.append(Caveat("duplicate_events", dups))
    head = parts[0]
    device_names: dict[int, str] = {}
    for p in reversed(parts):  # (keys after traceEvents land in the second part of a split decode)
        device_names.update(p.device_names)
    rank = next((p.rank for p in parts if p.rank is not None), None)
    world_size = next((p.world_size for p in parts if p.world_size is not None), None)
    base = next((p.base_time_ns for p in parts if p.base_time_ns is not None), None)
    rank_of_pid: dict[int, int] = {}
    for p in parts:
        rank_of_pid.update(p.rank_of_pid)
    merged = rank_of_pid if len(set(rank_of_pid.values())) > 1 else {}   # one rank's tags merge nothing
    return Tables(path=str(path), names=table_list(names), ev=ev, device_names=device_names, rank=rank,
                  world_size=world_size,
                  base_time_ns=base, events_in_file=head.events_in_file, shapes_raw=table_list(shapes),
                  caveats=tuple(caveats), merged_ranks=merged)


def _joined(pieces: list[np.ndarray]) -> np.ndarray:
    """A column's pieces as one array: one piece (a large .gz's streamed scan) as it is, read and never written."""
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def _ns_times(ts: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's start and end in integer ns from its ts and dur in µs (decode.ns_from_us; the duration rounded to the
    ns, then added). From THREADED_ROWS rows on, the second half of the rows in a second thread: numpy's arithmetic
    lets go of the GIL, and the first touch of the new columns' and temporaries' pages, most of the cost (a 1M-event
    trace: 14-30 ms in one thread while the other core waited for the load), is shared by two cores."""
    n = len(ts)
    start, end = np.empty(n, np.int64), np.empty(n, np.int64)

    def rows(lo: int, hi: int) -> None:
        ns_from_us(ts[lo:hi], out=start[lo:hi])
        d = dur[lo:hi] * 1000.0   # (in place, here and below: a 1M-event trace's temporaries cost their pages' faults)
        np.rint(d, out=d)
        np.copyto(end[lo:hi], d, casting="unsafe")
        end[lo:hi] += start[lo:hi]

    if n < THREADED_ROWS:
        rows(0, n)
        return start, end
    half = n // 2
    with ThreadPoolExecutor(1) as pool:
        second = pool.submit(rows, half, n)
        rows(0, half)
        second.result()
    return start, end


def _sorted_columns(cols: dict[str, list[np.ndarray]], start: np.ndarray, end: np.ndarray, order: np.ndarray,
                    keep: np.ndarray | None) -> dict[str, np.ndarray]:
    """Every column in sorted order, start and end with them: row j of the sorted table is kept row order[j] of the
    file. One part's columns (a large .gz's streamed scan) are gathered, col[rows]; several parts' are written
    straight from their pieces to their sorted places (_placed), with no concatenated copy first. The columns go in
    SORT_THREADS threads: numpy's gathers and scatters release the GIL, and the first touch of the new columns' pages
    (16 columns of a 1M-event trace, ~100 MB) is most of their cost, which two cores then share."""
    jobs = {"start": lambda: start[order], "end": lambda: end[order]}
    if all(len(pieces) == 1 for pieces in cols.values()):
        rows = order if keep is None else np.flatnonzero(keep)[order]      # (file rows, sorted)
        jobs.update({k: (lambda piece=pieces[0]: piece[rows]) for k, pieces in cols.items()})
    else:
        to = np.empty(len(order), np.int64)      # row i of the kept rows lands at to[i] (the sort's inverse)
        to[order] = np.arange(len(order))
        jobs.update({k: (lambda pieces=pieces: _placed(pieces, to, keep)) for k, pieces in cols.items()})
    if len(order) < THREADED_ROWS:
        return {k: job() for k, job in jobs.items()}
    with ThreadPoolExecutor(SORT_THREADS) as pool:       # (its threads end here: the levers' child forks later)
        return dict(zip(jobs, pool.map(lambda job: job(), jobs.values())))


def _placed(pieces: list[np.ndarray], to: np.ndarray, keep: np.ndarray | None) -> np.ndarray:
    """One column's pieces (in file order) written to their sorted places: out[to[i]] = kept row i. `keep`: which
    of the file's rows are kept (None: all)."""
    out = np.empty(len(to), np.result_type(*pieces))
    in_file = kept = 0
    for piece in pieces:
        n = len(piece)
        if keep is not None:
            piece = piece[keep[in_file:in_file + n]]
        out[to[kept:kept + len(piece)]] = piece
        in_file += n
        kept += len(piece)
    return out


def _by_start_longest_first(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """np.lexsort((-end, start)): by start, longest first on ties (parents before children), then file order.

    A stable sort by start alone is ~20x faster (the events come in long sorted runs, one per thread, which
    timsort merges), and equal starts are rare (a dozen in 700k rows): only those runs are sorted again."""
    order = np.argsort(start, kind="stable")
    s = start[order]
    tie = s[1:] == s[:-1]
    if tie.any():
        at = np.flatnonzero(np.r_[tie, False] | np.r_[False, tie])    # every position in a run of equal starts
        rows = order[at]
        order[at] = rows[np.lexsort((rows, -end[rows], start[rows]))]
    return order


def _drop_duplicates(ev: Events) -> tuple[Events, int]:
    """The same event written twice (a merged or re-exported trace) would count its time twice.

    Exact duplicates agree on every column; sorted by (start, -end) they share start and end, so
    only rows in runs of equal (start, end) are compared, on all columns (cheap: such runs are rare).
    """
    n = len(ev)
    if n < 2:
        return ev, 0
    tie = (ev.start[1:] == ev.start[:-1]) & (ev.end[1:] == ev.end[:-1])
    if not tie.any():
        return ev, 0
    cand = np.flatnonzero(np.concatenate(([False], tie)) | np.concatenate((tie, [False])))
    cols = [getattr(ev, k)[cand].astype(np.int64) for k in reversed(EVENT_COLUMNS)]
    order = np.lexsort(cols)   # identical rows become adjacent; stable, so the first of each is kept
    keys = np.stack([c[order] for c in cols])
    same = (keys[:, 1:] == keys[:, :-1]).all(axis=0)
    if not same.any():
        return ev, 0
    drop = np.zeros(n, dtype=bool)
    drop[cand[order[1:][same]]] = True
    return ev.take(np.flatnonzero(~drop)), int(drop.sum())
