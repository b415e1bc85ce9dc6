"""Batch-size adaptation: per-epoch batch-size schedules of Shockwave's job modes.

A job of model M starts at batch size ``b0`` on ``s`` GPUs and trains a fixed number of
epochs ``E = ceil(total_steps / ceil(D_M / b0))`` (``D_M``: the model's dataset size).
Its mode fixes the batch size of every epoch:

* ``static``: ``b0`` throughout;
* ``accordion``: the model's maximum batch size outside its critical regimes and after
  the first 30% of epochs, ``b0`` inside a critical regime;
* ``gns``: ``b0`` times 2, 4, 8, 16 from fixed epochs per (model, b0, s), capped at the
  model's limit.

An epoch at batch size b takes ``(D_M / b) / rate(M at b, s)`` seconds; the sum over the
schedule is the job's isolated BS-adapted run time (the finish-time-fairness baseline).

The published simulator moves jobs between batch sizes with rules of its own that differ
from these schedules (no 30% rule, fewer Recommendation regimes, GNS one doubling per
round); :func:`published_next_batch_size` gives those rules for ``shockwave_compat`` runs.
"""

from __future__ import annotations

import math
import re

import numpy as np

#: samples per epoch of each model's dataset
DATASET_SIZES = {"ResNet-18": 50000, "ResNet-50": 100000, "Transformer": 10000, "LM": 59675,
                 "Recommendation": 117907, "CycleGAN": 6287, "A3C": 4}
#: accordion's large batch size per model
ACCORDION_MAX = {"LM": 80, "ResNet-18": 256, "ResNet-50": 128, "Recommendation": 8192}
#: GNS's batch-size cap per model
GNS_LIMIT = {"ResNet-18": 256, "ResNet-50": 128, "Transformer": 128, "LM": 80, "Recommendation": 8192}
#: models that never change batch size
NEVER_ADAPT = frozenset({"Transformer", "CycleGAN", "A3C"})
#: share of the first epochs an accordion job always trains at its initial batch size
ACCORDION_WARMUP = 0.3

#: GNS doubling epochs: (model, b0, scale) -> (first epoch, multiplier from there) pairs;
#: a job with no more epochs than the first entry never adapts
GNS_STEPS: dict[tuple[str, int, int], tuple[tuple[int, int], ...]] = {
    ("ResNet-18", 16, 1): ((31, 2), (41, 4), (51, 8), (71, 16)),
    ("ResNet-18", 32, 1): ((21, 2), (31, 4), (51, 8)),
    ("ResNet-18", 64, 1): ((11, 2), (31, 4)),
    ("ResNet-18", 128, 1): ((11, 2),),
    ("ResNet-18", 16, 2): ((21, 2), (31, 4), (91, 8), (111, 16)),
    ("ResNet-18", 32, 2): ((11, 2), (21, 4), (41, 8)),
    ("ResNet-18", 64, 2): ((21, 2), (41, 4)),
    ("ResNet-18", 128, 2): ((41, 2),),
    ("ResNet-18", 16, 4): ((11, 2), (21, 4), (81, 8), (91, 16)),
    ("ResNet-18", 32, 4): ((21, 2), (31, 4), (61, 8)),
    ("ResNet-18", 64, 4): ((11, 2), (61, 4)),
    ("ResNet-18", 128, 4): ((11, 2),),
    ("ResNet-50", 64, 1): ((101, 2),),
    ("ResNet-50", 32, 2): ((101, 2), (111, 4)),
    ("ResNet-50", 64, 2): ((81, 2),),
    ("ResNet-50", 32, 4): ((131, 2), (221, 4)),
    ("ResNet-50", 64, 4): ((191, 2),),
    ("LM", 5, 1): ((31, 2), (41, 4), (61, 8), (71, 16)),
    ("LM", 10, 1): ((11, 2), (21, 4), (41, 8)),
    ("LM", 20, 1): ((11, 2), (41, 4)),
    ("LM", 40, 1): ((11, 2),),
    ("LM", 5, 2): ((31, 2), (51, 4), (61, 8), (71, 16)),
    ("LM", 10, 2): ((11, 2), (31, 4), (41, 8)),
    ("LM", 20, 2): ((31, 2), (41, 4)),
    ("LM", 40, 2): ((11, 2),),
    ("LM", 5, 4): ((11, 2), (31, 4), (71, 8), (91, 16)),
    ("LM", 10, 4): ((11, 2), (31, 4), (61, 8)),
    ("LM", 20, 4): ((11, 2), (61, 4)),
    ("LM", 40, 4): ((61, 2),),
    ("Recommendation", 512, 1): ((21, 2), (41, 4), (71, 8), (91, 16)),
    ("Recommendation", 1024, 1): ((21, 2), (51, 4), (91, 8)),
    ("Recommendation", 2048, 1): ((21, 2), (41, 4)),
    ("Recommendation", 4096, 1): ((41, 2),),
}

_JOB_TYPE = re.compile(r"^(?P<model>\S+) \(batch size (?P<bs>\d+)\)$")


class AdaptationError(ValueError):
    """A job type without a batch size, or a batch size missing from the throughput table."""


def split_job_type(job_type: str) -> tuple[str, int | None]:
    """``"ResNet-18 (batch size 32)"`` -> ``("ResNet-18", 32)``; a name without a batch size
    (``"A3C"``) -> ``(name, None)``."""
    match = _JOB_TYPE.match(job_type)
    if match is None:
        return job_type, None
    return match["model"], int(match["bs"])


def job_type_at(model: str, batch_size: int) -> str:
    return f"{model} (batch size {batch_size})"


def steps_per_epoch(model: str, batch_size: int) -> int:
    """``ceil(D / b)``: optimizer steps in one epoch."""
    return math.ceil(DATASET_SIZES[model] / batch_size)


def num_epochs(model: str, batch_size: int, total_steps: int) -> int:
    """Epochs a job of ``total_steps`` steps at ``batch_size`` trains (at least 1)."""
    return max(1, math.ceil(total_steps / steps_per_epoch(model, batch_size)))


def accordion_critical(model: str, b0: int, epochs: np.ndarray, *, published: bool = False) -> np.ndarray:
    """Whether each epoch lies in one of the model's critical regimes (Accordion).

    ``published``: the regimes of the published simulator's rule (Recommendation without
    its two later regimes)."""
    e = np.asarray(epochs)
    if model == "ResNet-18":
        first = 20 if b0 == 256 else 10
        return (e < first) | ((e >= 150) & (e < 160)) | ((e >= 250) & (e < 260))
    if model == "ResNet-50":
        return (e < 600) & (e % 30 < 10)
    if model == "LM":
        return e < 10
    if model == "Recommendation":
        first = 30 if b0 in (512, 1024) else 40 if b0 == 2048 else 10
        later = np.zeros(e.shape, dtype=bool) if published else ((e >= 60) & (e < 70)) | ((e >= 80) & (e < 90))
        return (e < first) | later
    return np.ones(e.shape, dtype=bool)


def accordion_schedule(model: str, b0: int, epochs: int) -> np.ndarray:
    """Per-epoch batch size of an accordion job: the model's maximum outside critical
    regimes once past the first 30% of epochs, ``b0`` otherwise."""
    e = np.arange(epochs)
    if model not in ACCORDION_MAX:
        return np.full(epochs, b0, dtype=np.int64)
    large = ~accordion_critical(model, b0, e) & (e > ACCORDION_WARMUP * epochs)
    return np.where(large, ACCORDION_MAX[model], b0).astype(np.int64)


def gns_schedule(model: str, b0: int, epochs: int, scale: int) -> np.ndarray:
    """Per-epoch batch size of a GNS job: ``b0`` times each step's multiplier from its first
    epoch (the last epoch keeps the multiplier of the first step only), capped at the
    model's limit."""
    bs = np.full(epochs, b0, dtype=np.int64)
    if model in NEVER_ADAPT:
        return bs
    steps = GNS_STEPS.get((model, b0, scale))
    if steps and epochs > steps[0][0]:
        for k, (start, mult) in enumerate(steps):
            end = steps[k + 1][0] if k + 1 < len(steps) else epochs
            stop = min(end, epochs if k == 0 else epochs - 1)
            bs[start:max(start, stop)] = b0 * mult
    return np.minimum(bs, GNS_LIMIT.get(model, b0))


def batch_size_schedule(mode: str, model: str, b0: int, epochs: int, scale: int) -> np.ndarray:
    """Per-epoch batch size of a job in ``mode`` (static / accordion / gns)."""
    if mode == "accordion":
        return accordion_schedule(model, b0, epochs)
    if mode == "gns":
        return gns_schedule(model, b0, epochs, scale)
    return np.full(epochs, b0, dtype=np.int64)


def published_next_batch_size(mode: str, model: str, b0: int, current: int, epoch: int, scale: int) -> int:
    """The batch size the published simulator moves a job to after a round in which it was
    in epoch ``epoch`` at batch size ``current`` (its own rules, not the schedules above):
    accordion switches to the maximum outside critical regimes and back to ``b0`` inside;
    GNS doubles once when the schedule of the next epoch (or this one) is larger."""
    if mode == "accordion" and model in ACCORDION_MAX:
        critical = bool(accordion_critical(model, b0, np.array([epoch]), published=True)[0])
        if current == b0 and not critical and b0 != ACCORDION_MAX[model]:
            return ACCORDION_MAX[model]
        if current != b0 and critical:
            return b0
        return current
    if mode == "gns" and model not in NEVER_ADAPT:
        pattern = gns_schedule(model, b0, max(760, epoch + 2), scale)
        limit = GNS_LIMIT.get(model, b0)
        if current < limit and (pattern[epoch + 1] > current or pattern[epoch] > current):
            return min(current * 2, limit)
    return current
