"""Reference workloads: a model, its optimizer and an endless source of synthetic batches
of fixed shapes, built from ``(name, batch size, model size, seed)``.

Data are synthesized in memory (no downloads) from a learnable task fixed by the seed:
images are noisy class prototypes, token sequences mostly count upwards, clicks follow
hidden user and item factors. Batches are drawn from the workload's own
``torch.Generator`` on its device, so no global RNG is touched and a checkpoint holding
model, optimizer, generator state and step counter continues the loss sequence exactly.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .models import RecommendationModel, ResNet, TransformerLM

MODEL_SIZES = ("tiny", "small", "base")


@dataclass(frozen=True)
class WorkloadSpec:
    """What identifies a workload: ``name`` (see :data:`WORKLOADS`), the per-process batch
    size, the model size (``tiny`` runs in CI on a CPU in milliseconds per step) and the seed."""

    name: str
    batch_size: int
    model_size: str = "small"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.name not in WORKLOADS:
            raise ValueError(f"unknown workload {self.name!r} (known: {', '.join(WORKLOADS)})")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch size must be a positive integer, got {self.batch_size!r}")
        if self.model_size not in MODEL_SIZES:
            raise ValueError(f"unknown model size {self.model_size!r} (known: {', '.join(MODEL_SIZES)})")

    @property
    def job_type(self) -> str:
        """The model name of this workload in a throughput table, e.g. ``ResNet-14 (batch size 32)``."""
        return f"{WORKLOADS[self.name].label(self.model_size)} (batch size {self.batch_size})"


def _seed(*words: int) -> int:
    return int(np.random.SeedSequence(list(words)).generate_state(1, np.uint64)[0] >> 1)


class Workload(ABC):
    """A training job in one process: ``train_step(next_batch())`` is one optimizer step.

    ``rank`` picks the data stream (data-parallel workers see different batches of the
    same task); the model's initial weights depend on the seed alone. ``module`` is what
    the forward pass calls: the model, or its ``DistributedDataParallel`` wrapper after
    :meth:`data_parallel`; checkpoints always hold the bare model's ``state_dict``.
    """

    def __init__(self, spec: WorkloadSpec, device: str | torch.device = "cpu", rank: int = 0):
        self.spec = spec
        self.device = torch.device(device)
        self.rank = rank
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(_seed(spec.seed, 0))
            self.model = self.build_model().to(self.device)
        self.module = self.model
        self.optimizer = self.build_optimizer()
        task = torch.Generator().manual_seed(_seed(spec.seed, 1))
        self.build_task(task)
        self.generator = torch.Generator(device=self.device).manual_seed(_seed(spec.seed, 2, rank))
        self.step = 0

    # what each workload defines
    @staticmethod
    @abstractmethod
    def label(model_size: str) -> str:
        """The model's name at ``model_size``, e.g. ``ResNet-14``."""

    @abstractmethod
    def build_model(self) -> torch.nn.Module:
        """The network, initialized from the global RNG (seeded and restored by the caller)."""

    @abstractmethod
    def build_optimizer(self) -> torch.optim.Optimizer:
        """The optimizer over ``self.model``'s parameters."""

    @abstractmethod
    def build_task(self, generator: torch.Generator) -> None:
        """Draw the fixed tensors that define the synthetic task (on the CPU, then moved)."""

    @abstractmethod
    def next_batch(self) -> tuple[torch.Tensor, ...]:
        """The next batch, drawn from ``self.generator``."""

    @abstractmethod
    def loss(self, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """The training loss of ``batch`` through ``self.module``."""

    # shared behaviour
    def batches(self):
        """An endless batch source (one batch drawn per ``next``)."""
        while True:
            yield self.next_batch()

    def train_step(self, batch: tuple[torch.Tensor, ...]) -> float:
        """One optimizer step on ``batch``; the loss before the step."""
        self.module.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss(batch)
        loss.backward()
        self.optimizer.step()
        self.step += 1
        return loss.item()

    def data_parallel(self) -> None:
        """Train through ``DistributedDataParallel`` (the default process group must exist)."""
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.device] if self.device.type == "cuda" else None
        self.module = DistributedDataParallel(self.model, device_ids=ids)

    def state_dict(self) -> dict:
        return {"workload": asdict(self.spec), "step": self.step, "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(), "data_rng": self.generator.get_state()}

    def load_state_dict(self, state: dict, source: str = "checkpoint") -> None:
        if state.get("workload") != asdict(self.spec):
            raise CheckpointError(f"{source}: holds workload {state.get('workload')}, not {asdict(self.spec)}")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["data_rng"])
        self.step = int(state["step"])

    def save(self, path: str | os.PathLike) -> None:
        """Checkpoint model, optimizer, data RNG and step counter to ``path`` atomically."""
        save_checkpoint(self.state_dict(), path)

    def restore(self, path: str | os.PathLike) -> int:
        """Load the checkpoint at ``path``; the restored step counter."""
        self.load_state_dict(load_checkpoint(path), str(path))
        return self.step

    def resume(self, path: str | os.PathLike) -> int:
        """:meth:`restore` if ``path`` exists; the step counter either way."""
        return self.restore(path) if Path(path).exists() else self.step


_RESNET = {"tiny": (1, 8, 16), "small": (2, 16, 32), "base": (3, 16, 32)}  # blocks per stage, width, image side


class ImageClassifier(Workload):
    """A CIFAR-style ResNet (depth 8 / 14 / 20) on 10 classes of noisy prototype images; SGD with momentum."""

    classes = 10

    @staticmethod
    def label(model_size: str) -> str:
        return f"ResNet-{6 * _RESNET[model_size][0] + 2}"

    def build_model(self):
        blocks, width, _ = _RESNET[self.spec.model_size]
        return ResNet(blocks, width, self.classes)

    def build_optimizer(self):
        return torch.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)

    def build_task(self, generator):
        side = _RESNET[self.spec.model_size][2]
        self.prototypes = torch.randn(self.classes, 3, side, side, generator=generator).to(self.device)

    def next_batch(self):
        labels = torch.randint(self.classes, (self.spec.batch_size,), generator=self.generator, device=self.device)
        noise = torch.randn(self.spec.batch_size, *self.prototypes.shape[1:], generator=self.generator,
                            device=self.device)
        return self.prototypes[labels] + 2.0 * noise, labels

    def loss(self, batch):
        images, labels = batch
        return F.cross_entropy(self.module(images), labels)


_TRANSFORMER = {"tiny": (256, 32, 1, 2, 32), "small": (1024, 128, 2, 4, 64),
                "base": (4096, 256, 4, 8, 128)}  # vocabulary, width, layers, heads, context


class LanguageModel(Workload):
    """A causal Transformer LM on sequences that count upwards modulo the vocabulary,
    with a random jump at 10% of positions; AdamW."""

    @staticmethod
    def label(model_size: str) -> str:
        _, width, layers, _, _ = _TRANSFORMER[model_size]
        return f"Transformer-{layers}x{width}"

    def build_model(self):
        return TransformerLM(*_TRANSFORMER[self.spec.model_size])

    def build_optimizer(self):
        return torch.optim.AdamW(self.model.parameters(), lr=1e-3)

    def build_task(self, generator):
        self.vocabulary, self.context = _TRANSFORMER[self.spec.model_size][0], _TRANSFORMER[self.spec.model_size][4]

    def next_batch(self):
        shape = (self.spec.batch_size, self.context + 1)
        kw = {"generator": self.generator, "device": self.device}
        jumps = torch.randint(self.vocabulary, shape, **kw)
        moves = torch.where(torch.rand(shape, **kw) < 0.9, torch.ones_like(jumps), jumps)
        tokens = moves.cumsum(1) % self.vocabulary
        return tokens[:, :-1], tokens[:, 1:]

    def loss(self, batch):
        inputs, targets = batch
        return F.cross_entropy(self.module(inputs).flatten(0, 1), targets.flatten())


_RECOMMENDATION = {"tiny": (1000, 1000, 8, 32), "small": (20_000, 10_000, 32, 128),
                   "base": (200_000, 100_000, 64, 256)}  # users, items, embedding width, hidden width
_DENSE, _FACTORS = 13, 4


class Recommendation(Workload):
    """A DLRM-style click model; a click when hidden user and item factors agree (plus a
    linear term in 13 dense features); Adagrad."""

    @staticmethod
    def label(model_size: str) -> str:
        return f"Recommendation-{_RECOMMENDATION[model_size][2]}"

    def build_model(self):
        users, items, width, hidden = _RECOMMENDATION[self.spec.model_size]
        return RecommendationModel(users, items, _DENSE, width, hidden)

    def build_optimizer(self):
        return torch.optim.Adagrad(self.model.parameters(), lr=0.05)

    def build_task(self, generator):
        users, items, _, _ = _RECOMMENDATION[self.spec.model_size]
        self.user_factors = torch.randn(users, _FACTORS, generator=generator).to(self.device)
        self.item_factors = torch.randn(items, _FACTORS, generator=generator).to(self.device)
        self.dense_weights = torch.randn(_DENSE, generator=generator).to(self.device)

    def next_batch(self):
        kw = {"generator": self.generator, "device": self.device}
        b = self.spec.batch_size
        users = torch.randint(self.user_factors.shape[0], (b,), **kw)
        items = torch.randint(self.item_factors.shape[0], (b,), **kw)
        dense = torch.randn(b, _DENSE, **kw)
        score = (self.user_factors[users] * self.item_factors[items]).sum(1) + dense @ self.dense_weights
        return users, items, dense, (score > 0).float()

    def loss(self, batch):
        users, items, dense, clicks = batch
        return F.binary_cross_entropy_with_logits(self.module(users, items, dense), clicks)


WORKLOADS: dict[str, type[Workload]] = {
    "resnet": ImageClassifier, "transformer": LanguageModel, "recommendation": Recommendation,
}


def make_workload(name: str, batch_size: int, model_size: str = "small", seed: int = 0, *,
                  device: str | torch.device = "cpu", rank: int = 0) -> Workload:
    """The workload ``name`` (``resnet``, ``transformer``, ``recommendation``) on ``device``."""
    spec = WorkloadSpec(name, batch_size, model_size, seed)
    return WORKLOADS[spec.name](spec, device, rank)
