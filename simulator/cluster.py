"""Cluster specs: worker types and their GPU counts, e.g. ``v100=36,p100=36,k80=36``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from simulator.readers.node_cluster import NodeCluster

DEFAULT_CLUSTER = "v100=36,p100=36,k80=36"
_NAME = re.compile(r"^[A-Za-z][\w.-]*$")


class ClusterSpecError(ValueError):
    pass


@dataclass(frozen=True)
class Cluster:
    """The one cluster model: ``gpus[i]`` GPUs of ``worker_types[i]``, in nodes of ``gpus_per_node``
    GPUs (None: not given; a run then takes its ``--gpus-per-server``). A Gavel ``v100=36`` spec and
    an ElasticFlow node spec (:meth:`of_nodes`) are both clusters."""

    worker_types: tuple[str, ...]
    gpus: np.ndarray
    gpus_per_node: int | None = None

    @classmethod
    def of_nodes(cls, nodes: NodeCluster, gpu_type: str) -> Cluster:
        """An ElasticFlow cluster spec's identical nodes as one worker type ``gpu_type``."""
        return cls((gpu_type,), np.array([nodes.num_gpus], dtype=np.int64), nodes.gpus_per_node)

    def __str__(self) -> str:
        return ",".join(f"{t}={int(g)}" for t, g in zip(self.worker_types, self.gpus))


def parse_cluster(spec: str) -> Cluster:
    """Parse ``type=count[,type=count...]``; counts are positive integers."""
    types, counts = [], []
    for part in spec.split(","):
        name, sep, count = part.strip().partition("=")
        name, count = name.strip(), count.strip()
        if not sep or not _NAME.match(name):
            raise ClusterSpecError(f"cluster spec {spec!r}: {part.strip()!r} is not TYPE=COUNT")
        if not count.isdigit() or int(count) == 0:
            raise ClusterSpecError(f"cluster spec {spec!r}: {name} needs a positive integer GPU count, got {count!r}")
        if name in types:
            raise ClusterSpecError(f"cluster spec {spec!r}: worker type {name!r} given twice")
        types.append(name)
        counts.append(int(count))
    return Cluster(tuple(types), np.asarray(counts, dtype=np.int64))


def parse_prices(spec: str, cluster: Cluster) -> np.ndarray:
    """Parse ``type=price[,...]`` (per GPU-hour, > 0) into one price per worker type of ``cluster``."""
    prices = {}
    for part in spec.split(","):
        name, sep, value = part.strip().partition("=")
        name = name.strip()
        try:
            price = float(value) if sep else math.nan
        except ValueError:
            price = math.nan
        if not sep or not math.isfinite(price) or price <= 0:
            raise ClusterSpecError(f"prices {spec!r}: {part.strip()!r} is not TYPE=PRICE with a price > 0")
        prices[name] = price
    unknown = set(prices) - set(cluster.worker_types)
    missing = [t for t in cluster.worker_types if t not in prices]
    if unknown or missing:
        raise ClusterSpecError(f"prices {spec!r}: " + "; ".join(
            ([f"unknown worker types {sorted(unknown)}"] if unknown else [])
            + ([f"no price for {missing}"] if missing else [])) + f" (cluster {cluster})")
    return np.array([prices[t] for t in cluster.worker_types])
