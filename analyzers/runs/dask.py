"""`tracetriage report DIR --scheduler ADDRESS`: the per-rank analyses on a Dask cluster.

    results, workers = analyze_on_cluster("s3://bucket/run-17", "tcp://10.0.0.5:8786", analyze_source)
    results, workers = analyze_on_cluster("traces/ddp", "local", analyze_source)   # a LocalCluster here

The client sends each worker a rank source (tracetriage.analyzers.runs.sources: a few strings); the
worker reads that rank's file where it runs, analyses it with the function it is given (the
local pool's own, tracetriage.analyzers.runs.pool.analyze_source), and sends back its RankReport
(kilobytes). No trace crosses the wire, and the straggler reduction runs on the client
(tracetriage.analyzers.runs.pool.merged_report). Even the listing of the run's directory runs on a worker: the
client need not see the storage at all.

Faults. A worker that dies while it holds a rank has that rank rescheduled by the Dask
scheduler on another worker (the scheduler's `distributed.scheduler.allowed-failures`,
3 by default, is how many deaths a rank may cause); a rank that still fails, or whose file is
not a trace, comes back as a RankError, its own row in the report.

This is the only module that imports dask, and only tracetriage.analyzers.runs.pool.report_object imports it, only
when a scheduler is named.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
import warnings
from concurrent.futures import CancelledError
from typing import Callable, Iterator

from tracetriage.analyzers.analyses.ranks import RankError, RankReport
from tracetriage.analyzers.model.trace import TraceError
from tracetriage.analyzers.runs.machine import usable_cpus
from tracetriage.analyzers.runs.sources import RankSource, is_url, list_sources

CONNECT_TIMEOUT_S = 10      # to reach the scheduler: long enough for a busy one, short enough to say so
WORKERS_TIMEOUT_S = 30      # for a first worker to join a scheduler that has none yet
LOCAL = "local"


class SchedulerError(TraceError):
    """The cluster cannot be used (bad address, unreachable, no workers): a user error, one line."""


Analyze = Callable[[RankSource], "RankReport | RankError"]   # never raises: a bad rank is a RankError


def analyze_on_cluster(target: str, scheduler: str, analyze: Analyze, progress=None) \
        -> tuple[dict[RankSource, RankReport | RankError], int]:
    """Each rank source's result, in name order, and how many ranks the cluster analysed at once."""
    where = target if is_url(target) else os.path.abspath(target)   # a remote worker has another cwd
    with connected(scheduler) as (client, address):
        sources = _list_on_cluster(client, address, where, target)
        return run_sources(client, address, sources, analyze, progress)


def run_sources(client, address: str, sources: list[RankSource], analyze: Analyze, progress=None) \
        -> tuple[dict[RankSource, RankReport | RankError], int]:
    """analyze(source) for each source on the cluster's workers, in the order of `sources`."""
    from distributed import as_completed

    slots = sum(client.nthreads().values())
    token = uuid.uuid4().hex[:8]
    # keys that name the file: the Dask dashboard then shows which rank a worker holds
    futures = client.map(analyze, sources, key=[f"tracetriage-{s.name}-{i}-{token}" for i, s in enumerate(sources)])
    of = dict(zip((f.key for f in futures), sources))
    results: dict[RankSource, RankReport | RankError] = {}
    with _quiet_dask(), client.as_current():   # as_completed finds its client there, not in a process-wide default
        for done, f in enumerate(as_completed(futures), 1):
            s = of[f.key]
            results[s] = _result(f, s, client, address, done, len(sources))
            f.release()   # the scheduler and the worker forget the result once it is here
            if progress:
                progress(done, len(sources))
    del futures
    return {s: results[s] for s in sources}, max(1, min(len(sources), slots))


def _result(future, s: RankSource, client, address: str, done: int, total: int) -> RankReport | RankError:
    from distributed import KilledWorker

    try:
        return future.result()
    except KilledWorker:
        return RankError(f"{s.label}: every Dask worker that analysed it died (out of memory? give the workers "
                         "more memory, e.g. `dask worker --memory-limit 8GiB`, or fewer threads each)")
    except CancelledError:
        if client.status != "running":
            raise SchedulerError(f"lost the Dask scheduler at {address} after {done - 1} of {total} ranks") from None
        return RankError(f"{s.label}: its analysis was cancelled on the cluster")
    except Exception as e:  # the worker could not even run the analysis (it could not unpickle it, ...)
        return RankError(f"{s.label}: the Dask worker could not run its analysis ({type(e).__name__}: {e})")


def _list_on_cluster(client, address: str, where: str, shown: str) -> list[RankSource]:
    from distributed import KilledWorker

    try:
        return client.submit(list_sources, where, shown, pure=False).result()
    except TraceError:
        raise
    except KilledWorker:
        raise SchedulerError(f"the Dask worker listing {shown} died; check the workers' logs") from None
    except CancelledError:
        if client.status != "running":     # the scheduler went away while its worker listed the run
            raise SchedulerError(f"lost the Dask scheduler at {address} while it listed {shown}") from None
        raise SchedulerError(f"the listing of {shown} was cancelled on the cluster at {address}") from None
    except Exception as e:
        said = " ".join(str(e).split())    # Dask's messages run over lines; the error is one
        raise SchedulerError(f"the Dask workers at {address} could not list {shown} "
                             f"({type(e).__name__}: {said})") from None


# --- reaching the cluster ---------------------------------------------------------------------------

@contextlib.contextmanager
def connected(scheduler: str) -> Iterator[tuple[object, str]]:
    """A Client with at least one worker that can run tracetriage, and the address as said to the user;
    `local` starts a LocalCluster of one single-threaded worker process per core, closed afterwards."""
    with _quiet_dask(), _client(scheduler) as pair:
        yield pair


@contextlib.contextmanager
def _client(scheduler: str) -> Iterator[tuple[object, str]]:
    from distributed import Client

    if scheduler == LOCAL:
        from distributed import LocalCluster

        # one thread per worker process: the analysis holds the GIL for much of its time. Loopback only, and the
        # scheduler's HTTP server (it serves /health even without a dashboard) on a free port, not 8787 on every
        # interface
        cluster = LocalCluster(n_workers=usable_cpus(), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
        client = Client(cluster, set_as_default=False)
        address = f"a local cluster ({cluster.scheduler_address})"
    else:
        address = _checked_address(scheduler)
        _reachable(address)
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError) as e:
            raise SchedulerError(f"cannot reach a Dask scheduler at {address} ({e}); start one with "
                                 "`dask scheduler`, or check the address") from None
        cluster = None
    try:
        _has_workers(client, address)
        yield client, address
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _checked_address(scheduler: str) -> str:
    """'tcp://host:8786' or 'host:8786' -> 'tcp://host:8786'; SchedulerError with one line otherwise."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, loc = parse_address(scheduler.strip())
        get_backend(scheme)   # an unknown scheme (http://...) fails here, not inside the Client
        if scheme in ("tcp", "tls"):
            parse_host_port(loc)
    except (ValueError, TypeError) as e:
        raise SchedulerError(f"not a Dask scheduler address: {scheduler!r} ({e}); give tcp://HOST:PORT "
                             "(`dask scheduler` prints it), or `local` for a cluster on this machine") from None
    return f"{scheme}://{loc}"


def _reachable(address: str) -> None:
    """Ask whatever listens there who it is, within CONNECT_TIMEOUT_S.

    distributed's Client bounds neither a connection that is accepted and never answered (a web
    server on that port waits for a request forever) nor, after a failure, its own clean-up (the
    collected Client prints a traceback): so nothing is handed to a Client before a scheduler answered."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    async def identity():
        from distributed.comm import connect
        from distributed.security import Security

        comm = await connect(address, timeout=CONNECT_TIMEOUT_S, **Security().get_connection_args("client"))
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    def ask():
        return asyncio.run(asyncio.wait_for(identity(), CONNECT_TIMEOUT_S))

    from distributed.comm.addressing import parse_address, parse_host_port

    scheme, loc = parse_address(address)
    try:
        if scheme in ("tcp", "tls"):   # refused at once, where distributed's connect would retry for the timeout
            socket.create_connection(parse_host_port(loc), timeout=CONNECT_TIMEOUT_S).close()
        # in a thread of its own: the caller may be inside a running event loop (a notebook)
        with ThreadPoolExecutor(1) as ex:
            who = ex.submit(ask).result()
    except (OSError, asyncio.TimeoutError, TimeoutError) as e:
        why = getattr(e, "strerror", None) or str(e) or f"no answer within {CONNECT_TIMEOUT_S} s"
        raise SchedulerError(f"cannot reach a Dask scheduler at {address} ({why}); start one with "
                             "`dask scheduler`, or check the address") from None
    except Exception as e:   # it answered, but not in Dask's protocol
        raise SchedulerError(f"{address} does not answer as a Dask scheduler ({type(e).__name__}: {e})") from None
    if not isinstance(who, dict) or who.get("type") != "Scheduler":
        kind = who.get("type") if isinstance(who, dict) else type(who).__name__
        raise SchedulerError(f"{address} is a Dask {kind}, not a scheduler: give the scheduler's address")


def _has_workers(client, address: str) -> None:
    try:
        client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)
    except TimeoutError:
        raise SchedulerError(f"the Dask scheduler at {address} has no workers after {WORKERS_TIMEOUT_S} s; start "
                             f"some with `dask worker {address} --nthreads 1`") from None
    # a worker without tracetriage would fail every rank alike: say it once
    from importlib.metadata import version

    mine = version("tracetriage")
    theirs = client.run(version, "tracetriage", on_error="return")
    for worker, v in sorted(theirs.items()):
        if isinstance(v, BaseException):
            raise SchedulerError(f"the Dask worker {worker} cannot run tracetriage ({type(v).__name__}: {v}); "
                                 f"install tracetriage {mine} on every worker")
        if v != mine:
            raise SchedulerError(f"the Dask worker {worker} runs tracetriage {v}, this client {mine}: install the "
                                 "same version on every worker")


@contextlib.contextmanager
def _quiet_dask() -> Iterator[None]:
    """distributed logs connection chatter, and tracebacks when it loses the scheduler, and warns (a port in
    use, versions) on stderr, where the report's only words are its progress and its one-line errors.
    TRACETRIAGE_DEBUG=1 lets them through.

    The loggers stay quiet for the rest of the process: a Client's threads outlive the `with` (its reconnect
    gives up seconds after the scheduler is gone, and says so), so restoring their levels would let that
    through. distributed sets some levels one by one at import (distributed.client among them)."""
    if os.environ.get("TRACETRIAGE_DEBUG"):
        yield
        return
    for n in ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]:
        logging.getLogger(n).setLevel(logging.CRITICAL + 1)
    # ... and every logging call of the process, whatever a later import or dictConfig sets a logger's level to: a
    # lost scheduler's "Couldn't gather 1 keys, rescheduling" (distributed.client) once got past the levels alone
    logging.disable(logging.CRITICAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
