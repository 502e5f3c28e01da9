"""Capture the sample library: every preset, the ceilings and the README sweeps.

    python -m tracetriage.capture.library --out traces/            # on a GPU machine
    python -m tracetriage.capture.library --out /tmp/lib --device cpu --only chain-eager-small

One failing workload does not stop the others: its error goes into the manifest
and the run goes on. The manifest lists every trace with its label.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

from tracetriage.analyzers.loading.atomic import write_json_atomic

MANIFEST = "manifest.json"


def manifest_entry(meta: dict, preset) -> dict:
    return {
        "name": meta["name"],
        "file": meta["trace"],
        "meta": meta["trace"].replace(".json.gz", ".meta.json"),
        "workload": meta["workload"],
        "preset": preset.name,
        "params": meta["params"],
        "device": meta["device"].get("name"),
        "label": meta["label"],
        "timing_per_step_ms": meta["timing_per_step"]["median_ms"],
    }


def merge_manifest(out: Path, entries: list[dict], errors: dict) -> dict:
    path = out / MANIFEST
    old = json.loads(path.read_text()) if path.exists() else {"version": 1, "traces": []}
    by_name = {e["name"]: e for e in old.get("traces", [])}
    by_name.update({e["name"]: e for e in entries})
    errs = {**old.get("errors", {}), **errors}
    for e in entries:  # a preset that captured now is no longer in error
        errs.pop(e["name"], None)
    manifest = {"version": 1, "traces": sorted(by_name.values(), key=lambda e: e["name"]), "errors": errs}
    write_json_atomic(path, manifest)
    return manifest


def relabel(out: Path) -> int:
    """Labels live in capture/presets.py; the manifest copies them. Refresh the copies."""
    from tracetriage.capture.presets import PRESETS

    path = out / MANIFEST
    manifest = json.loads(path.read_text())
    for e in manifest["traces"]:
        if e.get("preset") in PRESETS:
            e["label"] = PRESETS[e["preset"]].label()
    write_json_atomic(path, manifest)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tracetriage.capture.library")
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", nargs="*", help="preset names (default: all)")
    ap.add_argument("--extra", nargs="*", default=[], choices=["ceilings", "fusion_sweep"],
                    help="also measure the ceilings and/or the fusion sweep (into measurements.json)")
    ap.add_argument("--relabel", action="store_true",
                    help="only rewrite the manifest's labels from capture/presets.py (no capture)")
    a = ap.parse_args(argv)
    if a.relabel:
        return relabel(Path(a.out))
    if a.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from tracetriage.capture.harness import capture_workload
    from tracetriage.capture.presets import PRESETS

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(PRESETS) if a.only is None else a.only
    entries, errors = [], {}
    for name in names:
        preset = PRESETS[name]
        t0 = time.perf_counter()
        try:
            wl = preset.build(a.device)
            meta = capture_workload(wl, out / f"{name}.json.gz", name=name, label=preset.label_on(a.device))
            entries.append(manifest_entry(meta, preset))
            print(f"[ok]   {name:32s} {time.perf_counter() - t0:6.1f} s  "
                  f"step {meta['timing_per_step']['median_ms']:.3f} ms  {meta['trace_bytes_gz'] / 1e6:.2f} MB",
                  flush=True)
        except Exception as e:  # keep going: one broken workload must not cost the others
            errors[name] = f"{type(e).__name__}: {e}"
            print(f"[FAIL] {name}: {errors[name]}", flush=True)
            traceback.print_exc()
        finally:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    merge_manifest(out, entries, errors)
    if a.extra:
        from tracetriage.capture import ceilings, sweeps

        mpath = out / "measurements.json"
        results = json.loads(mpath.read_text()) if mpath.exists() else {}
        jobs = {"ceilings": lambda: ceilings.measure(a.device), "fusion_sweep": lambda: sweeps.fusion_sweep(a.device)}
        for label in a.extra:
            fn = jobs[label]
            try:
                results[label] = fn()
                print(f"[ok]   {label}", flush=True)
            except Exception as e:
                results[label] = {"error": f"{type(e).__name__}: {e}"}
                traceback.print_exc()
        write_json_atomic(mpath, results)
        if isinstance(results.get("ceilings"), dict) and "error" not in results["ceilings"]:
            write_json_atomic(out / "ceilings.json", results["ceilings"])
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
