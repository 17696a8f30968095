"""Transformer-XL (relative-position attention, segment memory, adaptive embedding and softmax), torch.nn only.

`transformer_xl_large()` is the WikiText-103 "large" configuration: 18 layers, d_model 1024, 16 heads
of 64, inner size 4096, vocabulary 267,735 with cutoffs 20k/40k/200k and div_val 4, tied input and
output embeddings. Counted the way the reference implementation builds it (a separate positional
projection per layer, an untied head projection) that is about 285M parameters; the paper quotes
257M for the same configuration.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn


class AdaptiveEmbedding(nn.Module):
    """Embeds each frequency cluster with a smaller width (d / div_val**i) and projects it to d_proj."""

    def __init__(self, n_token: int, d_embed: int, d_proj: int, cutoffs: Sequence[int], div_val: int) -> None:
        super().__init__()
        self.ends = [0] + list(cutoffs) + [n_token]
        self.d_proj = d_proj
        self.layers = nn.ModuleList()
        self.projs = nn.ParameterList()
        for i in range(len(self.ends) - 1):
            d_i = d_embed // (div_val ** i)
            self.layers.append(nn.Embedding(self.ends[i + 1] - self.ends[i], d_i))
            nn.init.normal_(self.layers[-1].weight, std=0.02)  # TXL's init; N(0, 1) would saturate the tied softmax
            self.projs.append(nn.Parameter(torch.randn(d_proj, d_i) * 0.02))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        flat = tokens.reshape(-1)
        out = torch.zeros(flat.numel(), self.d_proj, dtype=self.projs[0].dtype, device=tokens.device)
        for i, (emb, proj) in enumerate(zip(self.layers, self.projs)):
            idx = ((flat >= self.ends[i]) & (flat < self.ends[i + 1])).nonzero().squeeze(1)
            if idx.numel():
                out = out.index_copy(0, idx, F.linear(emb(flat[idx] - self.ends[i]), proj))
        return (out * math.sqrt(self.d_proj)).view(*tokens.shape, self.d_proj)


class AdaptiveLogSoftmax(nn.Module):
    """Negative log-likelihood over a head (shortlist + one logit per tail cluster) and tail clusters.

    Output weights are the embedding tables (tied); tail projections are tied too, the head's is not.
    """

    def __init__(self, emb: AdaptiveEmbedding, d_model: int) -> None:
        super().__init__()
        self.emb = emb
        n_clusters = len(emb.layers) - 1
        self.cluster_weight = nn.Parameter(torch.zeros(n_clusters, emb.layers[0].embedding_dim))
        self.cluster_bias = nn.Parameter(torch.zeros(n_clusters))
        self.head_proj = nn.Parameter(torch.randn(d_model, emb.layers[0].embedding_dim) * 0.02)
        self.biases = nn.ParameterList([nn.Parameter(torch.zeros(layer.num_embeddings)) for layer in emb.layers])

    def forward(self, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        ends, shortlist = self.emb.ends, self.emb.ends[1]
        head_w = torch.cat([self.emb.layers[0].weight, self.cluster_weight])
        head_b = torch.cat([self.biases[0], self.cluster_bias])
        head = F.log_softmax(F.linear(hidden @ self.head_proj, head_w, head_b), dim=-1)
        nll = torch.zeros_like(target, dtype=hidden.dtype)
        for i in range(len(ends) - 1):
            idx = ((target >= ends[i]) & (target < ends[i + 1])).nonzero().squeeze(1)
            if idx.numel() == 0:
                continue
            t = (target[idx] - ends[i]).unsqueeze(1)
            if i == 0:
                logp = head[idx].gather(1, t).squeeze(1)
            else:
                h = F.linear(hidden[idx], self.emb.projs[i].t())
                tail = F.log_softmax(F.linear(h, self.emb.layers[i].weight, self.biases[i]), dim=-1)
                logp = head[idx, shortlist + i - 1] + tail.gather(1, t).squeeze(1)
            nll = nll.index_copy(0, idx, -logp)
        return nll


def _rel_shift(x: torch.Tensor) -> torch.Tensor:
    """Align scores of query i with relative distance i - j (TXL's pad-and-reshape trick)."""
    q, k = x.shape[0], x.shape[1]
    padded = torch.cat([x.new_zeros((q, 1) + x.shape[2:]), x], dim=1)
    return padded.view((k + 1, q) + x.shape[2:])[1:].view_as(x)


class RelDecoderLayer(nn.Module):
    """Relative multi-head attention over [memory, segment], then a position-wise FF; post-LayerNorm."""

    def __init__(self, d_model: int, n_head: int, d_head: int, d_inner: int, dropout: float) -> None:
        super().__init__()
        self.n_head, self.d_head, self.scale = n_head, d_head, 1.0 / math.sqrt(d_head)
        self.qkv = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        self.r_net = nn.Linear(d_model, n_head * d_head, bias=False)
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.ln1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_inner), nn.ReLU(inplace=True), nn.Dropout(dropout),
                                nn.Linear(d_inner, d_model), nn.Dropout(dropout))
        self.ln2 = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, w: torch.Tensor, r: torch.Tensor, r_w_bias: torch.Tensor, r_r_bias: torch.Tensor,
                mask: torch.Tensor, mem: Optional[torch.Tensor]) -> torch.Tensor:
        q_len, bsz = w.shape[0], w.shape[1]
        cat = w if mem is None else torch.cat([mem, w], 0)
        heads = self.qkv(cat).view(cat.shape[0], bsz, 3, self.n_head, self.d_head)
        q, k, v = heads[-q_len:, :, 0], heads[:, :, 1], heads[:, :, 2]
        r_k = self.r_net(r).view(r.shape[0], self.n_head, self.d_head)
        ac = torch.einsum("ibnd,jbnd->ijbn", q + r_w_bias, k)
        bd = _rel_shift(torch.einsum("ibnd,jnd->ijbn", q + r_r_bias, r_k))
        score = ((ac + bd) * self.scale).masked_fill(mask[:, :, None, None], float("-inf"))
        attn = torch.einsum("ijbn,jbnd->ibnd", self.drop(F.softmax(score, dim=1)), v)
        out = self.ln1(w + self.drop(self.o_net(attn.reshape(q_len, bsz, -1))))
        return self.ln2(out + self.ff(out))


class TransformerXL(nn.Module):
    """Language model: forward(tokens [T, B], targets [T, B], mems) -> (mean NLL, new mems)."""

    def __init__(self, n_token: int, n_layer: int, d_model: int, n_head: int, d_head: int, d_inner: int,
                 cutoffs: Sequence[int], div_val: int, mem_len: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.mem_len, self.d_model = mem_len, d_model
        self.emb = AdaptiveEmbedding(n_token, d_model, d_model, cutoffs, div_val)
        self.r_w_bias = nn.Parameter(torch.zeros(n_head, d_head))
        self.r_r_bias = nn.Parameter(torch.zeros(n_head, d_head))
        self.layers = nn.ModuleList([RelDecoderLayer(d_model, n_head, d_head, d_inner, dropout)
                                     for _ in range(n_layer)])
        self.crit = AdaptiveLogSoftmax(self.emb, d_model)
        self.drop = nn.Dropout(dropout)

    def _pos_emb(self, k_len: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        pos = torch.arange(k_len - 1, -1, -1.0, device=device, dtype=dtype)
        inv_freq = 1.0 / (10000 ** (torch.arange(0.0, self.d_model, 2.0, device=device, dtype=dtype) / self.d_model))
        angles = pos[:, None] * inv_freq[None, :]
        return torch.cat([angles.sin(), angles.cos()], dim=-1)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor,
                mems: Optional[List[torch.Tensor]] = None) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        q_len = tokens.shape[0]
        m_len = mems[0].shape[0] if mems else 0
        k_len = q_len + m_len
        h = self.drop(self.emb(tokens))
        mask = torch.triu(torch.ones(q_len, k_len, dtype=torch.bool, device=tokens.device), diagonal=1 + m_len)
        r = self.drop(self._pos_emb(k_len, h.device, h.dtype))
        hidden = [h]
        for i, layer in enumerate(self.layers):
            h = layer(h, r, self.r_w_bias, self.r_r_bias, mask, mems[i] if mems else None)
            hidden.append(h)
        new_mems = []
        if self.mem_len > 0:
            with torch.no_grad():
                for i, hid in enumerate(hidden[:-1]):
                    full = hid if not mems else torch.cat([mems[i], hid], 0)
                    new_mems.append(full[-self.mem_len:].detach())
        nll = self.crit(self.drop(h).reshape(-1, self.d_model), targets.reshape(-1))
        return nll.mean(), new_mems


def transformer_xl_large(mem_len: int = 128) -> TransformerXL:
    """The WikiText-103 large configuration (see the module docstring for its parameter count)."""
    return TransformerXL(n_token=267735, n_layer=18, d_model=1024, n_head=16, d_head=64, d_inner=4096,
                         cutoffs=[20000, 40000, 200000], div_val=4, mem_len=mem_len)
