"""Checkpoint files: a ``state_dict``-style mapping saved with ``torch.save``, atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch


class CheckpointError(ValueError):
    """A checkpoint that cannot be read or does not belong to the workload restoring it."""


def save_checkpoint(state: dict, path: str | os.PathLike) -> None:
    """Write ``state`` to ``path`` via a temporary file in the same folder, so a crash
    mid-write leaves the previous checkpoint (or none), never a truncated one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(state, fh)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


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
