"""Helios' (SC '21) scheduling baselines as the Lucid artifact (ASPLOS '23) simulates them: one queue
per virtual cluster, jobs gang-scheduled on their requested GPUs, placed on as few nodes as possible."""
