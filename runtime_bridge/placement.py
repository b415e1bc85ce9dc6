"""Leases placed on the nodes of a heterogeneous Ray cluster by worker type.

A node serves worker type ``t`` when it advertises a Ray resource named ``t`` (``ray start
--resources '{"v100": 4}'``; on GPU machines next to its ``GPU`` count): that many GPUs (or
emulated GPU slots) of type ``t``. A GPU node without such a label serves the type its GPU model
names: Ray detects the model as the resource ``accelerator_type:V100`` (``H100``, ``A100-80G``,
...), whose first token, in lower case, is the worker type (``v100``, as ``schedopt profile``
names it), with all the node's ``GPU`` count. Each round, :func:`place` puts every lease on one live node
of its planned type with as many free GPUs, largest leases first, each on the node it leaves
fullest (best fit); the lease's task is then pinned to that node. A lease is never split over
nodes: one whose GPUs no live node of its type has, or that finds no room after a node was
lost, is refused with a one-line reason (and fails: it credits nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: the resource Ray gives a GPU node, named after its GPU model
ACCELERATOR = "accelerator_type:"


@dataclass(frozen=True)
class Node:
    """A live Ray node: its id, the GPUs it advertises per worker type, and whether its type was
    ``detected`` from its GPU model (its leases then hold plain ``GPU`` resources)."""

    id: str
    gpus: Mapping[str, int]
    detected: bool = False


def typed_nodes(worker_types: Iterable[str], ray_nodes: Iterable[Mapping]) -> list[Node]:
    """The live nodes of ``ray.nodes()`` that serve any of ``worker_types``, by label or else by
    GPU model (module docstring), in that order."""
    types = tuple(worker_types)
    nodes = []
    for node in ray_nodes:
        if not node.get("Alive"):
            continue
        resources = node["Resources"]
        gpus = {t: int(resources.get(t, 0)) for t in types if resources.get(t, 0) >= 1}
        if gpus:
            nodes.append(Node(node["NodeID"], gpus))
            continue
        models = {key[len(ACCELERATOR):].split("-")[0].lower() for key in resources if key.startswith(ACCELERATOR)}
        model = next((t for t in types if t.lower() in models), None)
        if model is not None and resources.get("GPU", 0) >= 1:
            nodes.append(Node(node["NodeID"], {model: int(resources["GPU"])}, detected=True))
    return nodes


def labelled_gpus(worker_types: Iterable[str], nodes: Iterable[Node]) -> dict[str, int]:
    """GPUs per worker type over ``nodes``."""
    totals = dict.fromkeys(worker_types, 0)
    for node in nodes:
        for t, n in node.gpus.items():
            totals[t] += n
    return totals


def place(types: Sequence[str], gpus: Sequence[int], nodes: Sequence[Node]) -> list[tuple[str, str]]:
    """Per lease (of worker type ``types[i]`` holding ``gpus[i]`` GPUs): (node id, "") where it
    runs, or ("", why it cannot run this round); see the module docstring."""
    free = [dict(node.gpus) for node in nodes]
    placed = [("", "")] * len(types)
    for i in sorted(range(len(types)), key=lambda i: -gpus[i]):
        t, n = types[i], gpus[i]
        fits = [k for k, left in enumerate(free) if left.get(t, 0) >= n]
        if fits:
            k = min(fits, key=lambda k: free[k][t])
            free[k][t] -= n
            placed[i] = (nodes[k].id, "")
            continue
        largest = max((node.gpus.get(t, 0) for node in nodes), default=0)
        placed[i] = ("", f"{n} {t} GPUs on one node: the largest live {t} node has {largest} (a lease is never split "
                         f"over nodes)" if largest < n else f"no live {t} node has {n} free GPUs (a node was lost)")
    return placed
