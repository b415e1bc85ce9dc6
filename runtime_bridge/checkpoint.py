"""Checkpoint files: a ``state_dict``-style mapping saved with ``torch.save``, atomically."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from simulator.files import atomic_file


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not belong to the workload restoring it."""


def save_checkpoint(state: dict, path: str | os.PathLike) -> None:
    """Write ``state`` to ``path`` atomically (:func:`~simulator.files.atomic_file`), so a crash
    or an interrupt mid-write leaves the previous checkpoint (or none), never a truncated one."""
    with atomic_file(path, "wb") as fh:
        torch.save(state, fh)


def load_checkpoint(path: str | os.PathLike) -> dict:
    """The mapping saved at ``path``, its tensors on the CPU."""
    try:
        state = torch.load(Path(path), map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except Exception as exc:
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: not a checkpoint (expected a mapping, got {type(state).__name__})")
    return state
