"""A real run on an emulated multi-node cluster that loses a node mid-run (issue 50's target).

    python -m benchmarks.node_faults [--jobs 20] [--out benchmarks/results/node_faults.csv]

A Ray head and three worker nodes started as separate raylets on this machine
(``ray.cluster_utils.Cluster``): two advertising 2 ``v100`` slots each and one 2 ``p100`` slots.
``--jobs`` tiny reference jobs (the four job types in turn, 6-12 steps at 0.01 steps/s, so a
300 s round's lease trains 1 real step at time scale 0.01) run under a round policy (max-min
fairness on ``v100=4,p100=2``) and a slot policy (EDF on ``v100=4``, deadlines 2-4x the isolated
time). In round 3 one ``v100`` node is killed (its raylet SIGKILLed once a lease placed on it has
started); in round 6 a new ``v100`` node joins. A row per policy: jobs finished, failed (each with
its reason in the summary's notes) and lost (neither: must be 0), failed leases, the GPU-seconds
they cost, rounds, and the run's wall seconds.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import ray
from ray.cluster_utils import Cluster

from runtime_bridge.ray_executor import RayExecutor
from simulator.readers.traces import read_trace
from simulator.simulate import simulate
from simulator.throughputs import ThroughputTable

from .rows import write_rows

TYPES = ("v100", "p100")
NODES = ({"v100": 2}, {"v100": 2}, {"p100": 2})
JOB_TYPES = ("ResNet-18 (batch size 8)", "Transformer (batch size 4)", "Recommendation (batch size 64)",
             "LM (batch size 4)")
ROUND, SCALE, RATE = 300.0, 0.01, 0.01
KILL_ROUND, JOIN_ROUND = 3, 6


class LosesANode(RayExecutor):
    """Kills a ``v100`` node once a lease placed on it in round :data:`KILL_ROUND` has started (its
    pid marker exists); starts a new ``v100`` node before round :data:`JOIN_ROUND`."""

    def __init__(self, cluster: Cluster, *args, **kwargs):
        self.cluster, self.killed, self.on = cluster, [], {}
        super().__init__(*args, **kwargs)

    def execute(self, leases):
        self.on.clear()
        if self.rounds + 1 == KILL_ROUND:
            threading.Thread(target=self.kill, daemon=True).start()
        if self.rounds + 1 == JOIN_ROUND:
            self.cluster.add_node(num_cpus=1, resources={"v100": 2})
            self.cluster.wait_for_nodes()
        return super().execute(leases)

    def _submit(self, job, worker_type, gpus, node, steps, seconds):
        if worker_type == "v100":
            self.on[job] = node
        return super()._submit(job, worker_type, gpus, node, steps, seconds)

    def kill(self) -> None:
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            running = [job for job in list(self.on) if self.marker(job).exists()]
            if running:
                node = next(n for n in self.cluster.worker_nodes if n.node_id == self.on[running[0]])
                os.kill(node.all_processes["raylet"][0].process.pid, signal.SIGKILL)
                self.killed.append(node.node_id)
                self.cluster.remove_node(node, allow_graceful=False)
                return
            time.sleep(0.005)


def trace_and_table(folder: Path, jobs: int, seed: int):
    rng = np.random.default_rng(seed)
    lines = [f"{JOB_TYPES[i % len(JOB_TYPES)]}\tcmd\t\t--n\t0\t{int(rng.integers(6, 13))}\t1\t1\t-1\t{30.0 * i}\n"
             for i in range(jobs)]
    path = folder / "jobs.trace"
    path.write_text("".join(lines))
    keys = tuple((t, 1) for t in JOB_TYPES)
    rates = np.full((len(keys), len(TYPES)), RATE)
    return read_trace(path), ThroughputTable(TYPES, keys, rates, np.full(rates.shape, np.nan))


def one_run(cluster: Cluster, folder: Path, policy: str, jobs: int, seed: int) -> dict:
    trace, table = trace_and_table(folder, jobs, seed)
    slotted = policy == "edf"
    types = ("v100",) if slotted else TYPES
    args = ({"cluster": "v100=4", "deadlines": "uniform:2:4", "slot": ROUND} if slotted else
            {"cluster": "v100=4,p100=2", "round_length": ROUND})
    tic = time.perf_counter()
    with LosesANode(cluster, trace.job_types, folder / "ckpt", time_scale=SCALE, worker_types=types) as executor:
        result = simulate(trace, policy=policy, throughputs=table, executor=executor, **args)
    wall = time.perf_counter() - tic
    state = result.jobs["state"]
    finished, failed = int((state == "finished").sum()), int((state == "failed").sum())
    noted = sum(note.startswith("job ") and " failed after " in note for note in result.summary["notes"])
    return {"policy": policy, "kind": "slot" if slotted else "round", "jobs": jobs, "finished": finished,
            "failed": failed, "failed_with_reason": noted, "lost": jobs - finished - failed,
            "failed_leases": int(result.summary["failed_leases"]),
            "redone_gpu_seconds": round(float(result.summary["redone_gpu_seconds"]), 1),
            "node_killed": bool(executor.killed), "rounds": executor.rounds, "wall_s": round(wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "node_faults.csv")
    args = parser.parse_args()
    checks = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 300, "health_check_failure_threshold": 3}
    rows = []
    for policy in ("max_min_fairness_perf", "edf"):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                                "_system_config": checks})
        try:
            for resources in NODES:
                cluster.add_node(num_cpus=1, resources=resources)
            ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.ERROR)
            cluster.wait_for_nodes()
            with tempfile.TemporaryDirectory(prefix="schedopt-node-faults-") as folder:
                rows.append(one_run(cluster, Path(folder), policy, args.jobs, args.seed))
            print(rows[-1], flush=True)
        finally:
            ray.shutdown()
            cluster.shutdown()
    write_rows(rows, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
