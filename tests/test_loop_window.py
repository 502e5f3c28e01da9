"""Host work a fix takes off the loop's critical path is the loop's own: the script's start-up before its first GPU
work and what it runs after its last (a closing torch.cuda.synchronize()) are neither host work no_host_work
removes nor Python that remove_syncs removes with a sync (heldout-user3 wenlu_train_opt_4090m: a 38 ms lead-in and
a 14.4 ms tail priced as host work, no_host_work −73% where the loop's own stretches hold about a quarter of the
span). A hand-built timeline: the public trace is not committed."""
from __future__ import annotations

import kineto_factory as kf
from tracetriage.analyzers.loading.load import load
from tracetriage.analyzers.whatif import predict as whatif

US, MS = 1_000, 1_000_000
LEAD, TAIL, STEPS, STALL = 30 * MS, 15 * MS, 12, 1 * MS


def _script(tmp_path):
    """30 ms of start-up, then 12 steps of 4 kernels each with 1 ms of untraced Python before each step's first op,
    each step closed by a sync that waits for its kernels, then 15 ms of script and a torch.cuda.synchronize()
    called straight from Python."""
    launches, t, extra = [], LEAD, [kf.annotation("start-up", 0, 100 * US)]   # the host traced from the start
    for i in range(STEPS):
        t += STALL
        for name in ("aten::linear", "aten::gelu", "aten::linear", "aten::mse_loss"):
            launches.append(kf.Launch(op_start=t, op_end=t + 8 * US, call_start=t + 2 * US, call_end=t + 6 * US,
                                      gpu_start=t + 10 * US, gpu_end=t + 200 * US, op=name))
            t += 10 * US
        # each step waits for its loss (a sync straight from Python that blocks), so remove_syncs acts
        extra.append(kf.call("cudaStreamSynchronize", t, t + 200 * US, corr=900_000 + i))
        t += 210 * US
    t += TAIL
    extra.append(kf.call("cudaDeviceSynchronize", t, t + 14 * US, corr=999_999))
    return load(kf.write(tmp_path / "script.json", kf.document(kf.events_for(launches) + extra)), use_cache=False)


def test_no_host_work_removes_the_loops_stretches_not_the_start_up_nor_the_tail(tmp_path):
    w = whatif.predict(_script(tmp_path), levers=["no_host_work", "remove_syncs"])
    gone = w.lever("no_host_work").saving_ns
    # the 11 stalls between the steps go (the first step's is the lead-in's end), never the 45 ms around the loop
    assert 0.8 * (STEPS - 1) * STALL <= gone <= 1.2 * STEPS * STALL
    # the steps' syncs go with the Python before them; the closing sync's 15 ms of script stays
    assert w.lever("remove_syncs").saving_ns < TAIL / 2
