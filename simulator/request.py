"""One simulation described by the options of ``schedopt simulate``: what the command line and
every cell of a sweep run.

:class:`SimulateRequest` holds the options under their command-line names (``round_length`` is
``--round``, ``config_file`` ``--config``, ``write_trace_to`` ``--write-trace``);
:func:`run_request` picks the clock and the readers from them (a deadline trace with
``cluster_spec`` and ``throughput_dir``, a Helios / Philly job log with ``vc_config``, a Pollux
workload, or a Gavel / Shockwave trace or generated workload) and returns the run's
:class:`~simulator.metrics.SimulationResult`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from allocators import is_slot_policy, load
from allocators.gavel.allox import SHOCKWAVE_ALLOX
from allocators.round_plans import RoundPlanner
from allocators.shockwave.config import read_shockwave_config
from simulator import DEFAULT_CLUSTER, example_table, parse_cluster, read_gavel_json
from simulator.engine import SimulationConfig
from simulator.overheads import OverheadModel
from simulator.readers.pollux_traces import is_pollux_workload
from simulator.readers.traces import read_trace, write_trace
from simulator.simulate import (
    EXAMPLE,
    default_solver,
    simulate,
    simulate_deadlines,
    simulate_job_log,
    simulate_pollux,
)
from simulator.throughputs import find_gavel_table


@dataclass(frozen=True)
class SimulateRequest:
    """The options of ``schedopt simulate`` (its help says what each means); paths as strings."""

    trace: str | None = None
    generate: int | None = None
    example: bool = False
    policy: str | None = None
    solver: str = "auto"
    cluster: str | None = None
    throughputs: str | None = None
    round_length: float | None = None
    reset_interval: float | None = None
    window: str | None = None
    seed: int = 0
    lam: float = 0.0
    multi_gpu: bool = False
    priority_fraction: float = 0.0
    overhead: float | None = None
    max_runtime_factor: float | None = None
    config_file: str | None = None
    gpus_per_server: int = 1
    unconsolidated: bool = False
    gavel_compat: bool = False
    prices: str | None = None
    write_trace_to: str | None = None
    cluster_spec: str | None = None
    throughput_dir: str | None = None
    slot: float | None = None
    preset: str | None = None
    deadlines: str | None = None
    gpu_type: str | None = None
    applications: str | None = None
    vc_config: str | None = None
    submitted: str | None = None
    lucid_data: str | None = None
    vc_scale: float = 1.0
    profiling_nodes: int = 0

    @classmethod
    def options(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @property
    def deadline_trace(self) -> bool:
        return self.cluster_spec is not None or self.throughput_dir is not None

    @property
    def pollux(self) -> bool:
        return self.trace is not None and not self.deadline_trace and is_pollux_workload(self.trace)

    def progress_unit(self) -> str:
        """What the run's progress counts: decisions (slot clock), re-plans or solves."""
        policy = self.policy or ("fifo-helios" if self.vc_config else "max_min_fairness_perf")
        if self.deadline_trace or self.pollux or is_slot_policy(policy):
            return "decisions"
        return "re-plans" if issubclass(load(policy), RoundPlanner) else "solves"


def parse_window(text: str | None) -> tuple[int, int] | None:
    """``FIRST:END`` job ids (``--window``)."""
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    if not sep or not lo.strip().isdigit() or not hi.strip().isdigit():
        raise ValueError(f"--window {text!r}: expected FIRST:END job ids, e.g. 100:400")
    return int(lo), int(hi)


def run_request(req: SimulateRequest, progress=None, say: Callable[[str], None] = lambda _: None):
    """Run ``req``; ``progress`` as :func:`simulator.simulate.simulate` takes it; ``say`` gets the
    lines a user should read (a table found near the trace, a variant's parameters, a trace written)."""
    given = {"round_length": req.round_length, "reset_interval": req.reset_interval, "overhead": req.overhead}
    fields = {"gpus_per_server": req.gpus_per_server, "unconsolidated": req.unconsolidated, "seed": req.seed,
              "window": parse_window(req.window), "gavel_compat": req.gavel_compat,
              **{k: v for k, v in given.items() if v is not None}}
    if req.max_runtime_factor is not None:
        fields["max_runtime_factor"] = req.max_runtime_factor or None
    if req.deadline_trace:
        return _deadline_run(req, fields, progress)
    if req.vc_config is not None or req.submitted is not None or req.lucid_data is not None:
        return _job_log_run(req, progress)
    if req.pollux:
        return simulate_pollux(req.trace, req.applications, policy=req.policy or "tiresias",
                               solver="highs" if req.solver == "auto" else req.solver, slot=req.slot,
                               preset=req.preset, progress=progress)
    policy = req.policy or "max_min_fairness_perf"
    if sum((req.trace is not None, req.generate is not None, req.example)) != 1:
        raise ValueError("give exactly one of --trace FILE, --generate N or --example")
    generated = None
    if req.example:
        generated = {k: v for k, v in EXAMPLE.items() if k != "cluster"}
    elif req.generate is not None:
        generated = {"num_jobs": req.generate, "lam": req.lam, "multi_gpu": req.multi_gpu,
                     "priority_fraction": req.priority_fraction, "seed": req.seed}
    if req.write_trace_to is not None and generated is None:
        raise ValueError("--write-trace needs --generate or --example")
    if req.config_file is not None and policy != "shockwave":
        raise ValueError(f"--config is for --policy shockwave, not {policy!r}")
    params = {"config": read_shockwave_config(Path(req.config_file))} if req.config_file is not None else {}
    table = read_gavel_json(req.throughputs) if req.throughputs else example_table()
    cluster = req.cluster or (EXAMPLE["cluster"] if req.example else DEFAULT_CLUSTER)
    spec = parse_cluster(cluster)
    workload = read_trace(req.trace) if req.trace is not None else None
    shockwave = policy == "shockwave" or (workload is not None and workload.adaptive)
    config = SimulationConfig.from_preset(req.preset or ("shockwave" if shockwave else "gavel"), **fields)
    if shockwave and policy == "allox":
        params.update(SHOCKWAVE_ALLOX)
        say("allox: Shockwave's multi-GPU variant, alpha 0.2 (a gang of s GPUs counts as one job per type)")
    if req.throughputs is None and workload is not None:
        table = table_for_trace(workload, Path(req.trace), table, say)
    if generated is not None:
        from simulator.generator import generate_trace

        workload = generate_trace(table, **generated)
        if req.write_trace_to is not None:
            write_trace(workload, req.write_trace_to)
            say(f"wrote {req.write_trace_to}")
    solver = req.solver
    if not is_slot_policy(policy) and solver == "auto":
        solver = default_solver(policy, config.gavel_compat)
    return simulate(workload, policy=policy, solver=solver, cluster=spec, throughputs=table, config=config,
                    prices=req.prices, progress=progress, policy_params=params, deadlines=req.deadlines,
                    slot=req.slot, preset=req.preset)


def parse_submitted(text: str | None) -> tuple[str | float, str | float] | None:
    """``FIRST,LAST`` submission instants (``--submitted``): date-times, or seconds for logs timed so."""
    if text is None:
        return None
    first, sep, last = text.partition(",")
    if not sep or not first.strip() or not last.strip():
        raise ValueError(f"--submitted {text!r}: expected FIRST,LAST, e.g. '2017-10-01 00:00:00,2017-10-07 23:59:00'")

    def instant(bound: str) -> str | float:
        try:
            return float(bound)
        except ValueError:
            return bound.strip()

    return instant(first), instant(last)


def _job_log_run(req: SimulateRequest, progress):
    """A slot policy on a Helios / Philly job log's virtual clusters (default ``fifo-helios``)."""
    if req.trace is None or req.vc_config is None:
        raise ValueError("a job log run needs --trace (a Helios / Philly job log) and --vc-config")
    solver = "highs" if req.solver == "auto" else req.solver
    return simulate_job_log(req.trace, req.vc_config, policy=req.policy or "fifo-helios",
                            window=parse_submitted(req.submitted), solver=solver, slot=req.slot, preset=req.preset,
                            progress=progress, lucid_data=req.lucid_data, seed=req.seed,
                            vc_scale=req.vc_scale, profiling_nodes=req.profiling_nodes)


def _deadline_run(req: SimulateRequest, fields: dict, progress):
    """Any policy on a deadline trace: a slot policy on the slot clock, a round policy on the round
    clock (with the round settings of ``fields``)."""
    policy = req.policy or "elasticflow"
    round_config = SimulationConfig.from_preset(req.preset or ("shockwave" if policy == "shockwave" else "gavel"),
                                                **fields)
    missing = [name for name, value in (("--trace", req.trace), ("--cluster-spec", req.cluster_spec),
                                        ("--throughput-dir", req.throughput_dir)) if value is None]
    if missing:
        raise ValueError(f"a deadline trace run needs {', '.join(missing)} too")
    if req.deadlines is not None:
        raise ValueError(f"--deadlines: {req.trace} is a deadline trace and brings its own deadlines")
    slotted = is_slot_policy(policy)
    if slotted and req.overhead not in (None, 0):
        raise ValueError(f"--overhead for {policy}: 0 (none) or leave it out (the published model)")
    solver = req.solver if req.solver != "auto" or slotted else default_solver(policy)
    return simulate_deadlines(req.trace, req.cluster_spec, req.throughput_dir, policy=policy,
                              solver="highs" if solver == "auto" else solver, slot=req.slot, preset=req.preset,
                              gpu_type=req.gpu_type, overhead=OverheadModel.none() if req.overhead == 0 else None,
                              progress=progress, round_config=round_config)


def table_for_trace(workload, trace: Path, builtin, say):
    """The built-in table when it knows every job type of the trace; else Gavel's table found
    beside the trace (said); else the built-in one (the run then names the first unknown job type)."""
    known = set(builtin.keys)
    if all((t, int(s)) in known for t, s in zip(workload.job_types, workload.scale_factors)):
        return builtin
    found = find_gavel_table(trace)
    if found is None:
        return builtin
    say(f"throughputs: {found} (found near the trace; --throughputs FILE to choose another)")
    return read_gavel_json(found)
