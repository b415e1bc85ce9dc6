"""Each job's profiled workload, drawn seeded, and the measured speeds of two workloads sharing a GPU.

What the published Lucid simulator (S-Lab-System-Group/Lucid at 63685a3, ``simulation/``) fixes:

- A job's workload is one row of ``single_data.csv``: its simulator reads each job's ``model, dataset,
  batchsize, amp, speed, gpu_util, gmem_util, gmem`` from the trace (``utils.py``: ``trace_process`` /
  ``trace_philly_process`` with ``read_full=True`` read ``cluster_full_log.csv``), and
  ``policy/lucid.py`` looks the job's packing label up in ``analyzer/single_data.csv`` by (model,
  batchsize, dataset, amp), taking the first match, so every job must carry a profiled key.
- Pair speeds (``updater.py``, ``ColocateUpdater``): the row of ``data/colocate_info.csv`` whose two
  keys are the jobs' (either order; GPU counts ignored), exactly one; a pair where either model is
  NeuMF, ResNet50, BERT or Transformer is not looked up: speeds 1 and 1 (:data:`UNLOOKED_MODELS`).

How ``cluster_full_log.csv`` got those columns is not published: its generator is not in
``simulation/`` (``data/`` holds ``log_process.py``, ``vc_dict_generator.py``, ``trace_parser.py``,
``dict2csv.py``, none of which touches workloads; ``estimator/estimator_lucid.ipynb`` only clusters job
names) and the file itself is missing from the public snapshot. So the draw here is an assumption
within those constraints: each job gets one of the profiled workloads, uniformly, keyed by (seed, job
id) (:func:`draw_profiles`), so a job keeps its workload whatever window or VC filter selects it. Every
unordered pair of profiled workloads outside :data:`UNLOOKED_MODELS` is measured (52 workloads, 1,378
pairs, plus 10 NeuMF pairs), so the published lookup never fails on these draws.
"""

from __future__ import annotations

import zlib

import numpy as np

from simulator.readers.lucid_measurements import Colocations, Profiles

#: models whose pairs Lucid's ``ColocateUpdater`` does not look up (speeds 1 and 1)
UNLOOKED_MODELS = ("NeuMF", "ResNet50", "BERT", "Transformer")

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on uint64 (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def draw_profiles(job_ids: np.ndarray, profiles: Profiles, seed: int) -> np.ndarray:
    """Each job's workload as an index into ``profiles``: uniform, a function of (``seed``, job id) only
    (ids hashed as text with CRC-32, then SplitMix64), the same on every machine and run."""
    if not len(profiles):
        raise ValueError("no profiled workloads to draw from")
    ids = np.fromiter((zlib.crc32(str(j).encode()) for j in job_ids), dtype=np.uint64, count=len(job_ids))
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) ^ _MASK)
        bits = _mix(ids * np.uint64(0x9E3779B97F4A7C15) + key)
    return (bits % np.uint64(len(profiles))).astype(np.int64)


def pair_speeds(profiles: Profiles, colocations: Colocations, *, published: bool = True) -> np.ndarray:
    """``speed[i, j]``: workload ``i``'s speed relative to running alone while sharing a GPU with ``j``
    (NaN: not measured; a workload beside itself: the mean of its two measured speeds, where the
    published lookup gives the pair's first job ``speed1`` and its second ``speed2``). ``published``:
    pairs with a model of :data:`UNLOOKED_MODELS` run at 1, as Lucid's simulator has them. Measured
    rows whose keys are not profiled are ignored."""
    index = {key: i for i, key in enumerate(profiles.keys())}
    speed = np.full((len(profiles), len(profiles)), np.nan)
    for a, b, (sa, sb) in zip(colocations.keys(0), colocations.keys(1), colocations.speed, strict=True):
        if a in index and b in index:
            i, j = index[a], index[b]
            speed[i, j], speed[j, i] = (sa, sb) if i != j else ((sa + sb) / 2,) * 2
    if published:
        exempt = np.isin(profiles.model, np.array(UNLOOKED_MODELS, dtype=object))
        speed[exempt, :] = 1.0
        speed[:, exempt] = 1.0
    return speed
