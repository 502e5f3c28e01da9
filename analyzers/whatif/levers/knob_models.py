"""The knobs priced by a model of their own rather than by their catalogue entry's lever (levers/catalogue.py
names it in the knob's `Outside.model`): a lever of the registry prices a broader fix than the knob makes.

    dataloader_workers  no_host_work takes every long host stretch away; workers take only the batches, and
                        start first (levers/dataloader_workers.py)

Each is an edit as a lever's `apply` is, replayed by tracetriage.analyzers.whatif.predict.Levers.edit_ratios, and
logged in the prediction log as `<model>_ratio`.
"""
from __future__ import annotations

from tracetriage.analyzers.whatif.levers import dataloader_workers

MODELS = {"dataloader_workers": dataloader_workers}
