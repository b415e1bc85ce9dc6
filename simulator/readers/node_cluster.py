"""A cluster of identical GPU nodes under switches, read from ElasticFlow's cluster spec CSV.

The file is a header and exactly one data row (a trailing newline is optional)::

    num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node
    1,16,4,64,256

Every value is a positive integer. Errors are :class:`DeadlineInputError` naming file, line and column.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from simulator.readers.elasticflow_traces import DeadlineInputError, read_csv_rows

COLUMNS = ("num_switch", "num_node_p_switch", "num_gpu_p_node", "num_cpu_p_node", "mem_p_node")


@dataclass(frozen=True)
class NodeCluster:
    """``num_switches`` × ``nodes_per_switch`` nodes, each with the same GPUs, CPUs and memory (GB)."""

    num_switches: int
    nodes_per_switch: int
    gpus_per_node: int
    cpus_per_node: int
    memory_per_node: int

    @property
    def num_nodes(self) -> int:
        return self.num_switches * self.nodes_per_switch

    @property
    def num_gpus(self) -> int:
        return self.num_nodes * self.gpus_per_node


def read_cluster_spec(path: str | os.PathLike) -> NodeCluster:
    """Read a cluster spec CSV (see the module docstring)."""
    table = read_csv_rows(path, "cluster spec")
    table.require(COLUMNS, "cluster spec")
    if len(table.rows) != 1:
        line = table.lines[1] if table.rows else table.header_line
        raise DeadlineInputError(f"{table.source}:{line}: expected exactly one data row after the header, "
                                 f"got {len(table.rows)}")
    return NodeCluster(*(int(table.numbers(name, minimum=1, integer=True)[0]) for name in COLUMNS))
