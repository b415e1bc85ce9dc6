"""Tables and files describing an allocation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from formulations import Allocation

from .files import write_atomically

OUTPUT_SUFFIXES = (".csv", ".json")


def allocation_frame(allocation: Allocation) -> pd.DataFrame:
    """One row per job: identity, time fraction per worker type, effective throughput."""
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
    frame["time_fraction"] = allocation.x.sum(axis=1)
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
    }
    write_atomically(path, json.dumps(doc, indent=1))
