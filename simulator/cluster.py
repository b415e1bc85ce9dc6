"""Cluster specs: worker types and their GPU counts, e.g. ``v100=36,p100=36,k80=36``, and the
virtual clusters (VCs) a cluster may be split into (:class:`VirtualClusters`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from simulator.readers.fields import LIMIT
from simulator.readers.lucid_measurements import VcConfig
from simulator.readers.node_cluster import NodeCluster

DEFAULT_CLUSTER = "v100=36,p100=36,k80=36"
_NAME = re.compile(r"^[A-Za-z][\w.-]*$")
_COUNT = re.compile(r"[0-9]{1,20}")


class ClusterSpecError(ValueError):
    pass


@dataclass(frozen=True)
class VirtualClusters:
    """A cluster's nodes split into virtual clusters (Helios' and Lucid's VCs): VC ``names[k]`` owns
    ``nodes[k]`` whole nodes, numbered consecutively in VC order (VC 0 owns nodes ``0..nodes[0]-1``).

    The contract every policy runs under on such a cluster: a job whose ``vc`` is ``names[k]`` holds
    GPUs only on VC k's nodes, so the GPUs its VC's jobs hold together never exceed the VC's. An
    ``open`` VC (Lucid's profiling VC, :meth:`with_profiling`) is the exception: any job may use its
    nodes."""

    names: tuple[str, ...]
    nodes: np.ndarray
    open: np.ndarray | None = None

    @classmethod
    def of_config(cls, config: VcConfig) -> VirtualClusters:
        return cls(tuple(config.names), np.asarray(config.nodes, dtype=np.int64))

    def with_profiling(self, nodes: int, name: str = "profiling") -> VirtualClusters:
        """``nodes`` nodes carved out of the largest VC (the first of the largest) into an open VC
        ``name``, appended last (Lucid's profiler: two nodes of Philly's VC)."""
        k = int(np.argmax(self.nodes))
        if not 0 < nodes < self.nodes[k]:
            raise ClusterSpecError(f"profiling nodes: {nodes} of the largest VC {self.names[k]}'s {int(self.nodes[k])} "
                                   f"(at least 1, leaving it one)")
        if name in self.names:
            raise ClusterSpecError(f"profiling VC {name!r}: the cluster already has a VC of that name")
        left = self.nodes.copy()
        left[k] -= nodes
        open_ = np.zeros(len(self.names) + 1, dtype=bool) if self.open is None else np.append(self.open, False)
        open_[-1] = True
        return VirtualClusters((*self.names, name), np.append(left, nodes), open_)

    @property
    def bounds(self) -> np.ndarray:
        """(K + 1,) node offsets: VC k owns nodes ``bounds[k]:bounds[k + 1]``."""
        return np.concatenate(([0], np.cumsum(self.nodes))).astype(np.int64)

    def index(self, vc: np.ndarray | None, job_ids: np.ndarray, source: str) -> np.ndarray:
        """Each job's VC index; a job without a VC or in a VC not laid out here is one error line."""
        if vc is None:
            raise ClusterSpecError(f"{source}: the cluster is split into VCs ({', '.join(self.names)}) and the jobs "
                                   f"name none")
        known = {name: k for k, name in enumerate(self.names)}
        out = np.array([known.get(v, -1) for v in vc.tolist()], dtype=np.int64)
        if (out < 0).any():
            j = int(np.argmax(out < 0))
            raise ClusterSpecError(f"{source}: job {job_ids[j]} is in VC {vc[j]!r}, which the cluster does not have "
                                   f"(VCs: {', '.join(self.names)})")
        return out


@dataclass(frozen=True)
class Cluster:
    """The one cluster model: ``gpus[i]`` GPUs of ``worker_types[i]``, in nodes of ``gpus_per_node``
    GPUs (None: not given; a run then takes its ``--gpus-per-server``). A Gavel ``v100=36`` spec and
    an ElasticFlow node spec (:meth:`of_nodes`) are both clusters; ``vcs``, where given, splits its
    nodes into virtual clusters (:meth:`of_vcs`; None: one pool, every job may run on any node)."""

    worker_types: tuple[str, ...]
    gpus: np.ndarray
    gpus_per_node: int | None = None
    vcs: VirtualClusters | None = None

    @classmethod
    def of_nodes(cls, nodes: NodeCluster, gpu_type: str) -> Cluster:
        """An ElasticFlow cluster spec's identical nodes as one worker type ``gpu_type``."""
        return cls((gpu_type,), np.array([nodes.num_gpus], dtype=np.int64), nodes.gpus_per_node)

    @classmethod
    def of_vcs(cls, config: VcConfig, gpu_type: str = "gpu") -> Cluster:
        """A VC config's nodes (``config.gpus_per_node`` GPUs each) as one worker type, split into its VCs."""
        vcs = VirtualClusters.of_config(config)
        return cls((gpu_type,), np.array([int(vcs.nodes.sum()) * config.gpus_per_node], dtype=np.int64),
                   config.gpus_per_node, vcs)

    def __str__(self) -> str:
        spec = ",".join(f"{t}={int(g)}" for t, g in zip(self.worker_types, self.gpus))
        return spec if self.vcs is None else f"{spec} in {len(self.vcs.names)} VCs"


def parse_cluster(spec: str) -> Cluster:
    """Parse ``type=count[,type=count...]``; counts are positive integers below 2**63."""
    types, counts = [], []
    for part in spec.split(","):
        name, sep, count = part.strip().partition("=")
        name, count = name.strip(), count.strip()
        if not sep or not _NAME.match(name):
            raise ClusterSpecError(f"cluster spec {spec!r}: {part.strip()!r} is not TYPE=COUNT")
        if not _COUNT.fullmatch(count) or not 0 < int(count) < LIMIT:
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
