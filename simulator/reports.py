"""Tables and files describing an allocation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from formulations import Allocation
from simulator.files import write_atomically

OUTPUT_SUFFIXES = (".csv", ".json")


def allocation_frame(allocation: Allocation):
    """One row per job: identity, time fraction alone per worker type, time in co-located
    pairs (space-sharing policies), total time fraction, effective throughput."""
    import pandas as pd

    p = allocation.problem
    frame = pd.DataFrame(
        {
            "job_id": p.job_ids,
            "job_type": p.job_types,
            "scale_factor": p.scale_factors,
            "priority_weight": p.weights,
        }
    )
    for j, wtype in enumerate(p.worker_types):
        frame[f"x_{wtype}"] = allocation.x[:, j]
    if allocation.pair_x is not None:
        frame["pair_time"] = allocation.time_fractions() - allocation.x.sum(axis=1)
    frame["time_fraction"] = allocation.time_fractions()
    frame["throughput"] = allocation.effective_throughput()
    return frame


def check_output_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ValueError(f"output file {str(path)!r}: use a .csv or .json name")
    return path


def write_allocation(allocation: Allocation, path: str | os.PathLike) -> None:
    """Write the allocation as CSV (per-job rows) or JSON (summary + jobs), atomically."""
    path = check_output_path(path)
    frame = allocation_frame(allocation)
    if path.suffix.lower() == ".csv":
        write_atomically(path, frame.to_csv(index=False))
        return
    result = allocation.result
    doc = {
        "policy": allocation.policy,
        "objective": allocation.objective,
        "status": str(result.status) if result else None,
        "backend": result.backend if result else None,
        "timings_s": vars(result.timings) if result else None,
        "notes": allocation.notes,
        "worker_types": list(allocation.problem.worker_types),
        "capacities": allocation.problem.capacities.tolist(),
        "jobs": json.loads(frame.to_json(orient="records")),
        "pairs": _pair_records(allocation),
    }
    write_atomically(path, json.dumps(doc, indent=1))


def _pair_records(allocation: Allocation) -> list[dict]:
    """Co-located pairs with a positive share: job ids and time fraction per worker type."""
    if allocation.pair_x is None:
        return []
    p = allocation.problem
    pairs = p.job_pairs()
    used = np.flatnonzero(allocation.pair_x.max(axis=1) > 0)
    return [
        {"jobs": [int(p.job_ids[pairs.first[q]]), int(p.job_ids[pairs.second[q]])],
         **{f"x_{w}": float(allocation.pair_x[q, j]) for j, w in enumerate(p.worker_types)}}
        for q in used
    ]
