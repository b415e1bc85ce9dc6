"""Execution of the simulator's round plans on real GPUs (Ray + PyTorch).

Nothing is implemented here yet: the executor arrives with the runtime-bridge issue.
"""
