"""Turn a cluster, a job set and a throughput table into an AllocationProblem."""

from __future__ import annotations

from formulations import AllocationProblem

from .cluster import Cluster
from .jobs import JobSet
from .throughputs import ThroughputTable


def build_problem(cluster: Cluster, jobs: JobSet, table: ThroughputTable) -> AllocationProblem:
    """The snapshot the allocation programs solve (throughputs mapped to the cluster's types)."""
    return AllocationProblem(
        worker_types=cluster.worker_types,
        capacities=cluster.gpus,
        job_ids=jobs.job_ids,
        job_types=jobs.models,
        scale_factors=jobs.scale_factors,
        weights=jobs.weights,
        throughputs=table.rates(jobs.keys, cluster.worker_types),
    )
