import numpy as np
import pytest
from helpers import problems, tiny
from hypothesis import given
from hypothesis import strategies as st

from allocators import UnknownPolicyError, make_policy
from allocators.pop import Partitioned, split_capacities, split_jobs
from formulations import JobPairs, allocation_violations, max_min_fairness
from optim import tally
from simulator import build_problem, example_table, parse_cluster, sample_jobs


def example(num_jobs: int, gpus: int):
    table = example_table()
    cluster = parse_cluster(",".join(f"{t}={gpus}" for t in table.worker_types))
    return build_problem(cluster, sample_jobs(table, num_jobs, 0), table)


@pytest.fixture(scope="module")
def big():
    return example(300, 75)


@given(st.lists(st.integers(1, 1000), min_size=1, max_size=5), st.integers(1, 40))
def test_gpu_split_loses_nothing_and_is_balanced(caps, k):
    gpus = split_capacities(np.array(caps, dtype=float), k)
    assert gpus.shape == (k, len(caps))
    np.testing.assert_array_equal(gpus.sum(axis=0), caps)
    assert np.all(gpus == np.round(gpus)) and np.all(gpus >= 0)
    assert np.ptp(gpus, axis=0).max() <= 1 and np.ptp(gpus.sum(axis=1)) <= 1


def test_gpu_split_example_and_fractional_capacity():
    np.testing.assert_array_equal(split_capacities(np.array([10.0, 1.0]), 3), [[4, 0], [3, 1], [3, 0]])
    assert split_capacities(np.array([2.5]), 2).sum() == 2.5


@given(st.integers(0, 200), st.integers(1, 12), st.integers(0, 3))
def test_job_split_is_near_equal_and_seeded(m, k, seed):
    part = split_jobs(m, k, seed)
    counts = np.bincount(part, minlength=k)
    assert counts.sum() == m and counts.max() - counts.min() <= 1
    np.testing.assert_array_equal(part, split_jobs(m, k, seed))


def test_one_part_is_the_exact_solve(big):
    exact = make_policy("max_min_fairness_perf").allocate(big)
    merged = Partitioned(make_policy("max_min_fairness_perf"), 1, compare_exact=True).allocate(big)
    assert merged.objective == pytest.approx(exact.objective, rel=1e-6)
    assert merged.report.quality_ratio == pytest.approx(1.0, rel=1e-6)
    np.testing.assert_allclose(merged.x, exact.x, atol=1e-9)


@given(problems(max_jobs=10), st.integers(1, 5), st.integers(0, 2))
def test_merged_allocation_is_valid(problem, k, seed):
    merged = Partitioned(make_policy("max_min_fairness_perf"), k, seed=seed).allocate(problem)
    assert allocation_violations(merged) == []
    report = merged.report
    assert report.num_parts == k and report.jobs.sum() == problem.num_jobs
    np.testing.assert_array_equal(report.gpus.sum(axis=0), problem.capacities)
    # every job its part can run gets time; the others get none
    assert np.all(merged.time_fractions()[report.unplaced] == 0)


def test_quality_ratio_on_the_example_table(big):
    policy = make_policy("max_min_fairness_perf")
    merged = Partitioned(policy, 4, compare_exact=True).allocate(big)
    report = merged.report
    assert allocation_violations(merged) == []
    assert report.num_parts == 4 and list(report.jobs) == [75] * 4 and report.unplaced.size == 0
    assert np.all(report.seconds > 0) and report.exact_seconds > 0
    assert 0.8 < report.quality_ratio <= 1 + 1e-6
    assert report.exact_objective == pytest.approx(policy.allocate(big).objective, rel=1e-6)
    # the merged objective is the full program's: the smallest normalized share over all jobs
    shares = max_min_fairness.normalized_coefficients(big, "perf") * merged.x
    assert merged.objective == pytest.approx(shares.sum(axis=1).min(), rel=1e-6)
    assert any("quality ratio" in note for note in merged.notes)


def test_deterministic_and_parallel_matches_sequential(big):
    runs, tallies = [], []
    for workers in (None, None, 2):
        with tally() as spent:
            runs.append(Partitioned(make_policy("max_min_fairness_perf"), 3, seed=7, workers=workers).allocate(big))
        tallies.append(spent)
    # the parts' builds and solves are tallied here whether they ran in this process or another
    assert all(t.build > 0 and t.solve > 0 for t in tallies)
    for other in runs[1:]:
        np.testing.assert_array_equal(other.report.part, runs[0].report.part)
        np.testing.assert_allclose(other.x, runs[0].x, atol=1e-12)
    other_seed = Partitioned(make_policy("max_min_fairness_perf"), 3, seed=8).allocate(big)
    assert not np.array_equal(other_seed.report.part, runs[0].report.part)


def test_parts_without_gpus_or_jobs():
    problem = tiny(np.ones((5, 2)), caps=(1, 1))
    merged = Partitioned(make_policy("max_min_fairness_perf"), 3).allocate(problem)
    assert allocation_violations(merged) == []
    assert merged.report.gpus.sum(axis=1).tolist() == [1, 1, 0]
    unplaced = merged.report.unplaced
    assert unplaced.size == merged.report.jobs[2] and np.all(merged.report.part[unplaced] == 2)
    assert np.all(merged.x[unplaced] == 0) and any("no allocation" in note for note in merged.notes)
    few = Partitioned(make_policy("max_min_fairness_perf"), 4).allocate(tiny(np.ones((2, 1)), caps=(8,)))
    assert allocation_violations(few) == [] and sorted(few.report.jobs) == [0, 0, 1, 1]
    np.testing.assert_allclose(few.x, 1.0)


def test_pairs_stay_inside_their_part():
    pairs = JobPairs([0, 1, 2], [1, 2, 3], np.full((3, 2, 2), 0.8))
    problem = tiny(np.ones((4, 2)), caps=(2, 2), pairs=pairs)
    merged = Partitioned(make_policy("max_min_fairness_packed"), 2).allocate(problem)
    assert allocation_violations(merged) == []
    part = merged.report.part
    across = part[pairs.first] != part[pairs.second]
    assert merged.pair_x.shape == (3, 2) and np.all(merged.pair_x[across] == 0)


def test_registry_name_form():
    policy = make_policy("max_min_fairness_perf@pop4", "highs")
    assert isinstance(policy, Partitioned) and policy.k == 4 and policy.name == "max_min_fairness_perf@pop4"
    assert policy.fixed_type_order
    for bad in ("max_min_fairness_perf@pop0", "max_min_fairness_perf@popx", "nope@pop2"):
        with pytest.raises(UnknownPolicyError):
            make_policy(bad)


def test_rejects_what_it_cannot_partition():
    with pytest.raises(TypeError, match="plans rounds"):
        Partitioned(make_policy("shockwave"), 2)
    with pytest.raises(TypeError, match="one program"):
        Partitioned(make_policy("finish_time_fairness_perf"), 2, compare_exact=True)
    with pytest.raises(ValueError):
        Partitioned(make_policy("max_min_fairness_perf"), 0)


def test_simulate_runs_a_partitioned_policy_by_name():
    from simulator.simulate import default_solver, simulate

    assert default_solver("max_min_fairness_perf@pop2") == default_solver("max_min_fairness_perf")
    result = simulate(policy="max_min_fairness_perf@pop2", solver="highs", cluster="v100=4,p100=4,k80=4",
                      generate={"num_jobs": 20, "lam": 600.0, "seed": 0})
    assert result.summary["jobs_completed"] == 20
    assert any(note.startswith("POP: 2 parts") for note in result.summary["notes"])
