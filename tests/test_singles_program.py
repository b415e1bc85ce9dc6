"""The programs over single jobs assembled as arrays (formulations.combinations.singles_program) are
those the Model path builds, array for array, so every solver returns what it returned before."""

from __future__ import annotations

import dataclasses
from unittest import mock

import numpy as np
import pytest
from helpers import many_equal_jobs, problems, tiny
from hypothesis import given
from hypothesis import strategies as st

from formulations import combinations, max_min_fairness, max_sum_throughput, min_total_duration
from formulations.classes import MergedProblem, merge_equal_jobs
from optim import Model, ModelError

PROGRAMS = [("max_min", "perf"), ("max_min", "agnostic"), ("throughput", "perf"),
            ("throughput", "normalized_by_cost_perf"), ("makespan", "perf"), ("makespan", "agnostic")]


def model_path(problem, kind: str, variant: str):
    """The same program built through ``Model`` (base rows, then max-min rows or the objective)."""
    if kind == "max_min":
        T = max_min_fairness.effective_throughputs(problem, variant)
        combos = combinations.singles(problem, T)
        model = Model(f"max_min_fairness[{variant}]")
        x = combos.add_allocation(model)
        max_min_fairness.add_max_min(model, x, combos.throughput_rows(max_min_fairness.share_scale(problem, T)),
                                     problem.job_ids)
        return model.canonical()
    if kind == "makespan":
        combos = min_total_duration.space(problem, variant)
        model = Model(f"min_total_duration[{variant}]")
        x = combos.add_allocation(model)
        u = model.add_variables("u", 1, lb=0.0)
        scale = min_total_duration.time_scale(problem, variant) / problem.remaining_steps
        model.add_rows("finish", {x: combos.throughput_rows(scale), u: -np.ones((problem.num_jobs, 1))}, lo=0.0,
                       keys=problem.job_ids)
        model.set_objective({u: 1.0}, sense="max")
        return model.canonical()
    combos = combinations.singles(problem)
    model = Model(f"max_sum_throughput[{variant}]")
    x = combos.add_allocation(model)
    per_job = problem.counts if isinstance(problem, MergedProblem) else None
    model.set_objective({x: combos.throughput_rows(per_job).column_sums().reshape(x.shape)
                         / max_sum_throughput.costs(problem, variant)}, sense="max")
    return model.canonical()


@pytest.mark.parametrize("compiled", [False, True], ids=["arrays", "compiled"])
@given(st.one_of(problems(max_jobs=10), many_equal_jobs()), st.sampled_from(PROGRAMS), st.booleans())
def test_the_singles_program_is_the_model_paths_array_for_array(compiled, problem, program, merge):
    kind, variant = program
    problem = dataclasses.replace(problem, remaining_steps=1e3 + 37.0 * np.arange(problem.num_jobs))
    if merge:
        problem = merge_equal_jobs(problem) or problem
    module = {"max_min": max_min_fairness, "throughput": max_sum_throughput, "makespan": min_total_duration}[kind]
    with mock.patch.object(combinations, "COMPILED_MIN_CELLS", 0 if compiled else 10**12):
        ours = module.build(problem, variant)
    reference = model_path(problem, kind, variant)
    for name in ("c", "row_lo", "row_hi", "col_lo", "col_hi", "integrality"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(reference, name), err_msg=name)
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(ours.A, name), getattr(reference.A, name), err_msg=name)
        assert getattr(ours.A, name).dtype == getattr(reference.A, name).dtype, name
    assert (ours.name, ours.sense, ours.offset, ours.A.shape) == (reference.name, reference.sense, reference.offset,
                                                                 reference.A.shape)
    assert ours.blocks == reference.blocks and ours.row_blocks == reference.row_blocks
    for keys, expected in ((ours.col_keys, reference.col_keys), (ours.row_keys, reference.row_keys)):
        assert keys.keys() == expected.keys() and all(np.array_equal(keys[k], expected[k]) for k in keys)


def test_a_non_finite_coefficient_is_refused_by_name():
    problem = tiny([[1.0, 2.0], [2.0, 1.0]], caps=(1, 1))
    with pytest.raises(ModelError, match=r"max_sum_throughput\[perf\]: non-finite coefficient"):
        combinations.singles_program(problem, "max_sum_throughput[perf]", objective=np.array([[1.0, np.nan],
                                                                                             [1.0, 1.0]]))
