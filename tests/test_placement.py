"""Placement of selected rows on GPUs: lease extension first, then consolidation."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from simulator.placement import Placement


def reference_place(capacities, per_server, previous, rows, types, scale):
    """The rule of :mod:`simulator.placement` written plainly: types ascending, scales
    descending, selection order; a row keeps last round's GPUs when they are all still
    free, the others take the fullest server with room for the whole gang, else the
    servers with most room in turn (single-GPU servers: the lowest free ids)."""
    gpus, extended = [None] * len(rows), [False] * len(rows)
    for j in sorted(set(types)):
        used: set[int] = set()
        for s in sorted({scale[i] for i in range(len(rows)) if types[i] == j}, reverse=True):
            group = [i for i in range(len(rows)) if types[i] == j and scale[i] == s]
            rest = []
            for i in group:
                prev = previous.get(rows[i])
                if prev is not None and prev[0] == j and len(prev[1]) == s and used.isdisjoint(prev[1]):
                    gpus[i], extended[i] = prev[1], True
                    used.update(prev[1])
                else:
                    rest.append(i)
            for i in rest:
                per = per_server[j]
                servers = [[g for g in range(k, min(k + per, capacities[j])) if g not in used]
                           for k in range(0, capacities[j], per)]
                fits = [srv for srv in servers if len(srv) >= s]
                if fits:
                    picked = min(fits, key=len)[:s]
                else:
                    picked = [g for srv in sorted(servers, key=len, reverse=True) for g in srv][:s]
                gpus[i] = tuple(picked)
                used.update(picked)
    return gpus, extended


@st.composite
def rounds(draw):
    n = draw(st.integers(1, 3))
    capacities = draw(st.lists(st.integers(1, 16), min_size=n, max_size=n))
    per_server = [min(draw(st.sampled_from([1, 2, 4, 8])), c) for c in capacities]
    schedule = []
    for _ in range(draw(st.integers(1, 5))):
        left = list(capacities)
        rows, types, scale = [], [], []
        for row in draw(st.permutations(range(12))):
            j, s = draw(st.integers(0, n - 1)), draw(st.sampled_from([1, 1, 2, 4, 8]))
            if s <= left[j] and draw(st.booleans()):
                left[j] -= s
                rows.append(row)
                types.append(j)
                scale.append(s)
        schedule.append((rows, types, scale))
    return capacities, per_server, schedule


@given(rounds())
def test_placement_follows_the_rule_round_after_round(case):
    capacities, per_server, schedule = case
    placement = Placement(np.array(capacities), np.array(per_server))
    previous: dict = {}
    for rows, types, scale in schedule:
        placed = placement.place(np.array(rows, dtype=np.int64), np.array(types, dtype=np.int64),
                                 np.array(scale, dtype=np.int64))
        gpus, extended = reference_place(capacities, per_server, previous, rows, types, scale)
        assert placed.gpus == gpus
        assert placed.extended.tolist() == extended
        for j in set(types):  # every gang gets its GPUs, and no GPU is given twice
            given_out = [g for i, gs in enumerate(placed.gpus) if types[i] == j for g in gs]
            assert len(given_out) == len(set(given_out)) and all(0 <= g < capacities[j] for g in given_out)
        assert [len(gs) for gs in placed.gpus] == scale
        per = [per_server[j] for j in types]
        assert placed.servers.tolist() == [len({g // p for g in gs}) for gs, p in zip(placed.gpus, per)]
        previous = dict(zip(rows, zip(types, gpus)))


def test_a_gang_keeps_its_gpus_and_a_new_one_takes_the_fullest_server_with_room():
    placement = Placement(np.array([8]), np.array([4]))
    first = placement.place(np.array([0, 1]), np.array([0, 0]), np.array([2, 1]))
    assert first.gpus == [(0, 1), (2,)] and not first.extended.any()
    # row 0 keeps GPUs 0-1; row 2 (2 GPUs) fits on server 0 (GPUs 2, 3 free, row 1 gone)
    # rather than the empty server 1; row 3 then takes the fullest server with room: 1
    second = placement.place(np.array([0, 2, 3]), np.array([0, 0, 0]), np.array([2, 2, 1]))
    assert second.gpus == [(0, 1), (2, 3), (4,)]
    assert second.extended.tolist() == [True, False, False]
