"""Which reference workload stands in for a trace's job type when the job runs for real."""

from __future__ import annotations

import re

from simulator.adaptation import split_job_type

from .workloads import WorkloadSpec

#: the batch size a job type without ``(batch size B)`` trains at
DEFAULT_BATCH_SIZE = 32


def reference_workload(job_type: str) -> str:
    """``transformer`` for a model name containing ``Transformer`` or the word ``LM``,
    ``recommendation`` for ``Recommendation``, else ``resnet`` (ResNet and any other model)."""
    if "transformer" in job_type.lower() or re.search(r"\bLM\b", job_type):
        return "transformer"
    if "recommendation" in job_type.lower():
        return "recommendation"
    return "resnet"


def workload_spec(job_type: str, model_size: str = "tiny", seed: int = 0) -> WorkloadSpec:
    """The reference workload of ``job_type`` at the batch size its ``(batch size B)`` names
    (:data:`DEFAULT_BATCH_SIZE` without one), at ``model_size``, seeded with ``seed``."""
    batch_size = split_job_type(job_type)[1]
    return WorkloadSpec(reference_workload(job_type), batch_size or DEFAULT_BATCH_SIZE, model_size, seed)
