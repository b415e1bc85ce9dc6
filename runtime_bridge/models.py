"""The reference networks, in plain PyTorch: a CIFAR-style ResNet, a causal Transformer
language model and a recommendation model with embedding tables. None uses dropout or
other randomness in its forward pass, so a step is a function of parameters and batch."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a (projected) shortcut."""

    def __init__(self, inputs: int, outputs: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut = nn.Sequential()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """He et al.'s CIFAR ResNet: depth 6n + 2, three stages of n blocks at widths w, 2w, 4w."""

    def __init__(self, blocks_per_stage: int, width: int, classes: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        layers, inputs = [], width
        for stage in range(3):
            outputs = width * 2**stage
            for block in range(blocks_per_stage):
                layers.append(BasicBlock(inputs, outputs, 2 if stage and not block else 1))
                inputs = outputs
        self.stages = nn.Sequential(*layers)
        self.head = nn.Linear(inputs, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(images)).mean(dim=(2, 3)))


class TransformerLM(nn.Module):
    """A decoder-only language model: token + position embeddings, pre-norm causal
    self-attention blocks, logits over the vocabulary."""

    def __init__(self, vocabulary: int, width: int, layers: int, heads: int, context: int):
        super().__init__()
        self.tokens = nn.Embedding(vocabulary, width)
        self.positions = nn.Embedding(context, width)
        block = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocabulary)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(context), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        x = self.tokens(tokens) + self.positions.weight[:n]
        return self.head(self.norm(self.blocks(x, mask=self.causal[:n, :n], is_causal=True)))


class RecommendationModel(nn.Module):
    """DLRM-style click model: user and item embeddings, a bottom MLP over dense
    features, pairwise dot products of the three vectors, a top MLP to one logit."""

    def __init__(self, users: int, items: int, dense: int, width: int, hidden: int):
        super().__init__()
        self.users = nn.Embedding(users, width)
        self.items = nn.Embedding(items, width)
        self.bottom = nn.Sequential(nn.Linear(dense, hidden), nn.ReLU(), nn.Linear(hidden, width), nn.ReLU())
        self.top = nn.Sequential(nn.Linear(3 * width + 3, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, users: torch.Tensor, items: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        u, v, d = self.users(users), self.items(items), self.bottom(dense)
        dots = torch.stack([(u * v).sum(1), (u * d).sum(1), (v * d).sum(1)], dim=1)
        return self.top(torch.cat([u, v, d, dots], dim=1)).squeeze(1)
