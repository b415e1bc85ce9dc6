"""Pollux (OSDI'21) and the baselines its artifact published: Optimus+Oracle and Tiresias, each with
the workload's tuned jobs; all three run on Pollux's co-adaptive job model (:mod:`simulator.coadaptive`)
and place GPUs on nodes themselves."""
