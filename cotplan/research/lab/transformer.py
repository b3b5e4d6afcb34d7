"""A small decoder-only transformer whose only switch is how it sees position.

Five positional encodings: ``none``, ``learned`` (absolute, added to the input), ``sinusoidal``
(fixed, added), ``rope`` (rotary, applied to queries and keys) and ``alibi`` (a per-head linear
distance penalty on the attention scores). Width, depth, heads and everything else stay equal.

Two ways for the attention to read the past (`attend_to`):

- ``"states"``: the ordinary GPT block; every layer attends to the previous layer's states of
  earlier positions. Even with ``pe="none"`` it is not exchangeable: the causal mask itself leaks
  order, because the state of position j summarises only the prefix up to j, so from the second
  layer on a reordered prefix gives different keys.
- ``"tokens"``: every layer attends to the (position-encoded) input tokens, and the stream that
  asks the questions starts from a learned query vector rather than from the last token. The
  output at position t then depends on the prefix only through its multiset when ``pe="none"``
  (exactly, up to float rounding), and position enters only through the encoding: what a
  positional-encoding ablation needs to isolate the encoding. A beginning-of-sequence token lets
  a position-free model still learn the count: its share of the attention falls as 1/(t + 1).

Logits at position t predict token t + 1, for all positions in one pass.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from cotplan.errors import InputError
from cotplan.validation import require_int

__all__ = [
    "POSITIONAL_ENCODINGS",
    "AttendTo",
    "PositionalEncoding",
    "TinyTransformer",
    "TransformerConfig",
]

PositionalEncoding = Literal["none", "learned", "sinusoidal", "rope", "alibi"]
AttendTo = Literal["states", "tokens"]
POSITIONAL_ENCODINGS: tuple[PositionalEncoding, ...] = get_args(PositionalEncoding)


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """The shape of a `TinyTransformer`; everything that must match to reload its weights."""

    vocab_size: int
    max_len: int
    pe: PositionalEncoding = "rope"
    attend_to: AttendTo = "states"
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_len", "d_model", "n_layers", "n_heads", "d_ff"):
            require_int(getattr(self, name), name, low=1)
        if self.pe not in POSITIONAL_ENCODINGS:
            raise InputError(
                f"must be one of {', '.join(POSITIONAL_ENCODINGS)}; got {self.pe!r}", field="pe"
            )
        if self.attend_to not in get_args(AttendTo):
            raise InputError(
                f"must be 'states' or 'tokens'; got {self.attend_to!r}", field="attend_to"
            )
        if self.d_model % self.n_heads:
            raise InputError(
                f"d_model ({self.d_model}) must be a multiple of n_heads ({self.n_heads})",
                field="n_heads",
            )
        if self.pe == "rope" and (self.d_model // self.n_heads) % 2:
            raise InputError("rope needs an even head width (d_model / n_heads)", field="pe")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TransformerConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"unknown keys {unknown}", field="config")
        return cls(**dict(data))


def _sinusoidal_table(max_len: int, d_model: int) -> Tensor:
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(1e4) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate[: d_model // 2])
    return table


def _alibi_slopes(n_heads: int) -> Tensor:
    # Press et al.: a geometric sequence starting at 2^(-8/n); exact for powers of two, and
    # interleaved from the next power of two otherwise.
    def powers_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    if math.log2(n_heads).is_integer():
        slopes = powers_of_two(n_heads)
    else:
        closest = 2 ** math.floor(math.log2(n_heads))
        slopes = powers_of_two(closest) + powers_of_two(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


class _Rotary(nn.Module):
    """Rotary position embedding (Su et al.) for one head width."""

    cos: Tensor
    sin: Tensor

    def __init__(self, head_dim: int, max_len: int) -> None:
        super().__init__()
        inv_freq = 1.0 / (1e4 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        # x: (batch, heads, time, head_dim); rotate consecutive pairs of channels.
        length = x.shape[-2]
        cos, sin = self.cos[:length], self.sin[:length]
        even, odd = x[..., 0::2], x[..., 1::2]
        rotated = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        return rotated.flatten(-2)


class _Block(nn.Module):
    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.d_model // config.n_heads
        self.norm_query = nn.LayerNorm(config.d_model)
        self.norm_memory = nn.LayerNorm(config.d_model) if config.attend_to == "tokens" else None
        self.query = nn.Linear(config.d_model, config.d_model)
        self.key_value = nn.Linear(config.d_model, 2 * config.d_model)
        self.out = nn.Linear(config.d_model, config.d_model)
        self.norm_ff = nn.LayerNorm(config.d_model)
        self.ff = nn.Sequential(
            nn.Linear(config.d_model, config.d_ff),
            nn.GELU(),
            nn.Linear(config.d_ff, config.d_model),
        )

    def _heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(
        self, stream: Tensor, memory: Tensor | None, rotary: _Rotary | None, bias: Tensor | None
    ) -> Tensor:
        queried = self.norm_query(stream)
        source = queried if memory is None or self.norm_memory is None else self.norm_memory(memory)
        q = self._heads(self.query(queried))
        k, v = (self._heads(t) for t in self.key_value(source).chunk(2, dim=-1))
        if rotary is not None:
            q, k = rotary(q), rotary(k)
        if bias is None:
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        batch, _, length, _ = attended.shape
        stream = stream + self.out(attended.transpose(1, 2).reshape(batch, length, -1))
        updated: Tensor = stream + self.ff(self.norm_ff(stream))
        return updated


class TinyTransformer(nn.Module):
    """Decoder-only transformer: tokens (batch, time) -> next-token logits (batch, time, vocab)."""

    alibi_bias: Tensor

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.position: nn.Embedding | None = None
        if config.pe == "learned":
            self.position = nn.Embedding(config.max_len, config.d_model)
        if config.pe == "sinusoidal":
            self.register_buffer(
                "sinusoid", _sinusoidal_table(config.max_len, config.d_model), persistent=False
            )
        self.rotary = (
            _Rotary(config.d_model // config.n_heads, config.max_len)
            if config.pe == "rope"
            else None
        )
        if config.pe == "alibi":
            distance = torch.arange(config.max_len)[None, :] - torch.arange(config.max_len)[:, None]
            causal = distance <= 0
            bias = _alibi_slopes(config.n_heads)[:, None, None] * distance.float()[None]
            bias = bias.masked_fill(~causal[None], float("-inf"))
            self.register_buffer("alibi_bias", bias, persistent=False)
        # The question stream of `attend_to="tokens"` starts from this vector, not from a token.
        self.query_start = (
            nn.Parameter(torch.zeros(config.d_model)) if config.attend_to == "tokens" else None
        )
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def _additive_position(self, length: int) -> Tensor | None:
        if self.position is not None:
            return self.position.weight[:length]
        if self.config.pe == "sinusoidal":
            table: Tensor = self.get_buffer("sinusoid")
            return table[:length]
        return None

    def forward(self, tokens: Tensor) -> Tensor:
        if tokens.dim() != 2:
            raise InputError(
                f"must be (batch, time); got shape {tuple(tokens.shape)}", field="tokens"
            )
        length = tokens.shape[1]
        if length > self.config.max_len:
            raise InputError(
                f"length {length} exceeds max_len {self.config.max_len}", field="tokens"
            )
        position = self._additive_position(length)
        inputs = self.embed(tokens)
        if position is not None:
            inputs = inputs + position
        bias = self.alibi_bias[:, :length, :length] if self.config.pe == "alibi" else None
        if self.query_start is None:
            stream, memory = inputs, None
        else:
            start = self.query_start.expand_as(inputs)
            stream = start + position if position is not None else start
            memory = inputs
        for block in self.blocks:
            stream = block(stream, memory, self.rotary, bias)
        logits: Tensor = self.head(self.norm(stream))
        return logits

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
