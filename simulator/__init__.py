"""Round-based simulation inputs and engine: clusters, jobs, throughput tables, snapshots."""

from simulator.cluster import (
    DEFAULT_CLUSTER,
    Cluster,
    ClusterSpecError,
    parse_cluster,
    parse_prices,
)
from simulator.example_table import example_table
from simulator.jobs import JobSet, JobsFileError, read_jobs_csv, sample_jobs
from simulator.snapshot import build_problem
from simulator.throughputs import (
    ThroughputTable,
    ThroughputTableError,
    read_gavel_json,
    write_gavel_json,
)

__all__ = [
    "DEFAULT_CLUSTER",
    "Cluster",
    "ClusterSpecError",
    "JobSet",
    "JobsFileError",
    "ThroughputTable",
    "ThroughputTableError",
    "build_problem",
    "example_table",
    "parse_cluster",
    "parse_prices",
    "read_gavel_json",
    "read_jobs_csv",
    "sample_jobs",
    "write_gavel_json",
]
