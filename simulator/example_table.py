"""The built-in example throughput table, computed from a small roofline model.

Each job type has a compute load (GFLOP/step), a memory-traffic load (GB/step), a host
(CPU, input pipeline) time per step and a memory footprint; each GPU type has a peak
throughput, a memory bandwidth, a memory size and a host speed. A step takes

    max(flops / (peak * efficiency), bytes / bandwidth) + host_time / host_speed

on one GPU; ``s`` GPUs reach ``s / (1 + comm * (s - 1))`` times that rate (gradient
exchange), 15% less again when spread over servers (unconsolidated). Two single-GPU
jobs sharing a GPU each slow down in proportion to the other's memory traffic, and
cannot share when their footprints do not fit together.

The numbers are illustrative, not measurements. They reproduce the heterogeneity that
matters to schedulers: large speed-ups for compute-bound models on newer GPUs, a
host-bound recommendation model that runs faster on the p100 servers (faster CPUs
there) than on the v100 ones, and a large Transformer that does not fit a k80.
"""

from __future__ import annotations

import numpy as np

from simulator.throughputs import ThroughputTable

#: name: (TFLOP/s peak, GB/s bandwidth, GB memory, host speed)
GPUS = {
    "v100": (15.7, 900.0, 16.0, 1.0),
    "p100": (9.3, 732.0, 16.0, 1.6),
    "k80": (4.1, 240.0, 12.0, 1.0),
}
#: model: (GFLOP/step, GB/step, host s/step, GB footprint, comm overhead per extra GPU)
MODELS = {
    "ResNet-50 (batch size 64)": (1580.0, 28.0, 0.004, 9.0, 0.08),
    "ResNet-18 (batch size 128)": (570.0, 21.0, 0.003, 4.0, 0.05),
    "Transformer (batch size 64)": (900.0, 40.0, 0.002, 7.0, 0.10),
    "LM (batch size 20)": (240.0, 26.0, 0.002, 3.0, 0.12),
    "Recommendation (batch size 8192)": (30.0, 6.0, 0.045, 3.0, 0.30),
    "Transformer-XL (batch size 32)": (2100.0, 55.0, 0.003, 14.0, 0.10),
}
SCALES = (1, 2, 4)
COMPUTE_EFFICIENCY = 0.45
UNCONSOLIDATED_PENALTY = 0.85


def example_table() -> ThroughputTable:
    """The built-in table (deterministic; see the module docstring)."""
    types = tuple(GPUS)
    peak, bw, mem, host = (np.array([GPUS[t][k] for t in types]) for k in range(4))
    names = tuple(sorted(MODELS))
    flops, traffic, host_s, footprint, comm = (np.array([MODELS[m][k] for m in names]) for k in range(5))
    kernel = np.maximum(
        flops[:, None] / (peak[None, :] * 1e3 * COMPUTE_EFFICIENCY), traffic[:, None] / bw[None, :]
    )
    step = kernel + host_s[:, None] / host[None, :]
    fits = footprint[:, None] <= mem[None, :]
    single = np.where(fits, 1.0 / step, 0.0)
    keys, iso, uncons = [], [], []
    for s in SCALES:
        for k, name in enumerate(names):
            speedup = s / (1.0 + comm[k] * (s - 1))
            keys.append((name, s))
            iso.append(np.round(single[k] * speedup, 4))
            uncons.append(np.round(single[k] * speedup * UNCONSOLIDATED_PENALTY, 4) if s > 1
                          else np.full(len(types), np.nan))
    pair_keys, pair_rates = [], []
    pressure = traffic / traffic.max()
    for a in range(len(names)):
        for b in range(a, len(names)):
            share_fits = (footprint[a] + footprint[b]) <= mem
            ra = single[a] / (1.0 + 0.8 * pressure[b])
            rb = single[b] / (1.0 + 0.8 * pressure[a])
            rates = np.where(share_fits[:, None], np.stack([ra, rb], axis=1), 0.0)
            pair_keys.append((a, b))  # scale-1 keys come first, so index = model index
            pair_rates.append(np.round(rates, 4))
    return ThroughputTable(
        worker_types=types,
        keys=tuple(keys),
        isolated=np.array(iso),
        unconsolidated=np.array(uncons),
        pair_keys=tuple(pair_keys),
        pair_rates=np.array(pair_rates),
        source="<built-in example table>",
    )


EXAMPLE_CLUSTER = "v100=4,p100=4,k80=4"
EXAMPLE_JOBS = 16
EXAMPLE_SEED = 0
