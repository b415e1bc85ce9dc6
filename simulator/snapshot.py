"""Turn a cluster, a job set and a throughput table into an AllocationProblem."""

from __future__ import annotations

import numpy as np

from formulations import AllocationProblem, JobPairs
from simulator.cluster import Cluster
from simulator.jobs import JobSet
from simulator.throughputs import ThroughputTable


def build_problem(cluster: Cluster, jobs: JobSet, table: ThroughputTable, *, pairs: bool = False,
                  prices: np.ndarray | None = None) -> AllocationProblem:
    """The snapshot the allocation programs solve (throughputs mapped to the cluster's
    types); ``pairs`` adds the co-located candidates that space-sharing policies use."""
    job_pairs = None
    if pairs:
        job_pairs = JobPairs(*table.co_located(jobs.keys, jobs.scale_factors, cluster.worker_types))
    return AllocationProblem(
        worker_types=cluster.worker_types,
        capacities=cluster.gpus,
        job_ids=jobs.job_ids,
        job_types=jobs.models,
        scale_factors=jobs.scale_factors,
        weights=jobs.weights,
        throughputs=table.rates(jobs.keys, cluster.worker_types),
        remaining_steps=jobs.total_steps,
        slo_remaining=jobs.slo,
        prices=prices,
        pairs=job_pairs,
    )
