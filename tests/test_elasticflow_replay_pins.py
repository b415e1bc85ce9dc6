"""The published ElasticFlow planner's replays (``ef``, ``elasticflow-greedy``) keep their decisions:
on the first jobs of two ITP traces, on clusters small enough for late jobs and declines (195job)
and for hand-outs to more jobs than :data:`~formulations.elasticflow_leftover.BATCH_FROM`
(cluster01), each job's state, start and finish time (to the last bit) and deadline outcome hash
to the values the one-job-at-a-time hand-out gave."""

import hashlib

import numpy as np
import pytest

from simulator.simulate import simulate_deadlines

EF = "elasticflow"

#: (trace, jobs kept, cluster, slot, policy) -> (accepted, declined, late, decisions, digest)
PINS = {
    ("itp/195job.csv", 80, "n4g8", 240.0, "ef"): (80, 0, 73, 129, "949eacacb5250662"),
    ("itp/195job.csv", 80, "n4g8", 240.0, "elasticflow-greedy"): (64, 16, 1, 111, "f12ab1173895e6a1"),
    ("itp/cluster01.csv", 140, "n16g8", 60.0, "ef"): (140, 0, 22, 231, "653023611727cf38"),
    ("itp/cluster01.csv", 140, "n16g8", 60.0, "elasticflow-greedy"): (123, 17, 1, 141, "9524b7ac2e95418e"),
}


def digest(jobs: dict) -> str:
    """Each job's state, start and finish (float64 bytes) and whether it met its deadline."""
    h = hashlib.sha256("|".join(map(str, jobs["state"])).encode())
    for column in ("start", "finish"):
        h.update(np.asarray(jobs[column], dtype=np.float64).tobytes())
    h.update(np.asarray(jobs["met_deadline"], dtype=bool).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("case", sorted(PINS), ids=lambda c: f"{c[0].split('/')[1]}-{c[4]}")
def test_the_replays_keep_every_decision(shared_data, tmp_path, case):
    trace, kept, cluster, slot, policy = case
    root = shared_data / EF
    lines = (root / trace).read_text().splitlines()
    (tmp_path / "trace.csv").write_text("\n".join(lines[:kept + 1]) + "\n")
    result = simulate_deadlines(tmp_path / "trace.csv", root / "cluster_specs" / f"{cluster}.csv",
                                root / "throughputs_A100", policy=policy, slot=slot)
    s = result.summary
    assert (s["accepted"], s["declined"], s["finished_late"], s["decisions"], digest(result.jobs)) == PINS[case]
