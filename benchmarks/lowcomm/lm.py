"""The benchmark's task: a byte-level decoder-only transformer and real English text shipped by Debian (vim's manual).

Text: every ``*.txt`` of vim's documentation (the vim-runtime package), in sorted order; the last
``val_files`` files are held out for validation, so validation text is never trained on. Bytes
are tokens (256 symbols), so the loss in bits per byte needs no tokenizer to compare.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Tuple

import torch
import torch.nn.functional as F

TEXT_DIRS = ("/usr/share/vim/vim90/doc", "/usr/share/vim/vim91/doc")


def load_text(val_files: int = 8) -> Tuple[torch.Tensor, torch.Tensor]:
    """(train bytes, validation bytes) as uint8 tensors."""
    for d in TEXT_DIRS:
        files = sorted(Path(d).glob("*.txt"))
        if files:
            break
    else:
        raise FileNotFoundError(f"no vim documentation under {TEXT_DIRS}: apt-get install vim-runtime")
    train = b"".join(f.read_bytes() for f in files[:-val_files])
    val = b"".join(f.read_bytes() for f in files[-val_files:])
    return (torch.frombuffer(bytearray(train), dtype=torch.uint8), torch.frombuffer(bytearray(val), dtype=torch.uint8))


def windows(data: torch.Tensor, starts: torch.Tensor, ctx: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-byte targets of the windows of ctx + 1 bytes starting at `starts`."""
    idx = starts[:, None] + torch.arange(ctx + 1)[None, :]
    chunk = data[idx].long()
    return chunk[:, :-1], chunk[:, 1:]


class Block(torch.nn.Module):
    """Pre-norm transformer block: causal self-attention, then a 4x MLP."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(att)
        return x + self.mlp(self.ln2(x))


class ByteLM(torch.nn.Module):
    """A small GPT over bytes: token and position embeddings, `layers` blocks, a final norm and a byte head."""

    def __init__(self, d: int = 160, layers: int = 4, heads: int = 4, ctx: int = 128) -> None:
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(256, d), torch.nn.Embedding(ctx, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, 256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln(h))


def loss_of(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))


@torch.no_grad()
def bits_per_byte(model: torch.nn.Module, val: torch.Tensor, ctx: int, count: int = 64, batch: int = 16) -> float:
    """Mean next-byte cross-entropy in bits over `count` fixed, evenly spaced validation windows."""
    starts = torch.linspace(0, len(val) - ctx - 2, count).long()
    total = 0.0
    for i in range(0, count, batch):
        x, y = windows(val, starts[i:i + batch], ctx)
        total += loss_of(model, x, y).item() * len(x)
    return total / count / math.log(2)
