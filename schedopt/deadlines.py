"""``schedopt simulate`` for deadline traces (ElasticFlow / ITP CSV on a node cluster)."""

from __future__ import annotations

from pathlib import Path

from allocators import POLICIES, UnknownPolicyError
from allocators.registry import SLOT_POLICIES
from simulator.overheads import OverheadModel
from simulator.simulate import simulate_deadlines


def simulate_deadlines_command(*, trace: Path | None, cluster_spec: Path | None, throughput_dir: Path | None,
                               policy: str, solver: str, slot: float | None, preset: str | None,
                               gpu_type: str | None,
                               overhead: float | None, deadlines: str | None, report, round_config):
    """Any policy on a deadline trace: a slot policy on the slot clock, a round policy (with
    ``round_config``) on the round clock; returns the run's result."""
    missing = [name for name, value in (("--trace", trace), ("--cluster-spec", cluster_spec),
                                        ("--throughput-dir", throughput_dir)) if value is None]
    if missing:
        raise ValueError(f"a deadline trace run needs {', '.join(missing)} too")
    if deadlines is not None:
        raise ValueError(f"--deadlines: {trace} is a deadline trace and brings its own deadlines")
    if policy not in SLOT_POLICIES and policy not in POLICIES:
        raise UnknownPolicyError(f"unknown policy {policy!r}; known: "
                                 f"{', '.join(sorted({*POLICIES, *SLOT_POLICIES}))}")
    if policy in SLOT_POLICIES and overhead not in (None, 0):
        raise ValueError(f"--overhead for {policy}: 0 (none) or leave it out (the published model)")
    return simulate_deadlines(trace, cluster_spec, throughput_dir, policy=policy,
                              solver="highs" if solver == "auto" else solver, slot=slot, preset=preset,
                              gpu_type=gpu_type,
                              overhead=OverheadModel.none() if overhead == 0 else None, progress=report,
                              round_config=round_config)
