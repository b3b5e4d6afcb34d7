"""A trained lab transformer as a `Predictor`, so every experiment runs on it unchanged.

The model reads ``[BOS, x_1, ..., x_t]`` and its logits at position t give P(x_{t+1} | x_1..x_t),
renormalised over the two bits (the BOS logit is ignored). The causal mask makes one forward pass
give every prefix of a sequence at once: `prefix_probs` scores a whole sequence per row, and
`prob_one` right-pads prefixes of different lengths into one batch (padding after the last real
token cannot change its logits).

Predictions are computed in float64 by default, on a float64 copy of the weights: an exactly
exchangeable model then shows order variance at the 1e-32 level, not float32's 1e-16, so a
non-zero variance in the ablation means the encoding, not rounding. ``dtype="float32"`` scores
with the weights as trained.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch

from cotplan.errors import InputError
from cotplan.research.experiments.predictors import (
    FloatArray,
    Predictor,
    ProgressFn,
    check_lengths,
    check_uniforms,
)
from cotplan.research.experiments.sequences import Bits, check_bits
from cotplan.research.lab.transformer import TinyTransformer
from cotplan.validation import require_int

__all__ = ["BOS", "Precision", "TransformerPredictor"]

#: The beginning-of-sequence token; the bits are tokens 0 and 1.
BOS = 2

Precision = Literal["float64", "float32"]
_DTYPES: dict[str, torch.dtype] = {"float64": torch.float64, "float32": torch.float32}


class TransformerPredictor(Predictor):
    """P(next bit = 1 | prefix) from a `TinyTransformer` over the vocabulary {0, 1, BOS}.

    `max_prefix` (the model's ``max_len`` − 1) is the longest prefix it can score; longer ones
    raise an `InputError` that names the limit, rather than extrapolating positions it never saw.
    The model makes no requests (`requests_made` stays 0); `forward_passes` counts its batches.
    """

    exact = False

    def __init__(
        self,
        model: TinyTransformer,
        *,
        name: str | None = None,
        dtype: Precision = "float64",
        batch_size: int = 256,
    ) -> None:
        config = model.config
        if config.vocab_size != 3:
            raise InputError(
                f"must have vocab_size 3 (0, 1, BOS), got {config.vocab_size}", field="model"
            )
        if dtype not in _DTYPES:
            raise InputError(f"must be 'float64' or 'float32', got {dtype!r}", field="dtype")
        batch_size = require_int(batch_size, "batch_size", low=1)
        self.config = config
        self.dtype: Precision = dtype
        self.batch_size = batch_size
        # A private copy in the scoring precision: the caller's model stays as trained.
        self.model = copy.deepcopy(model).to(_DTYPES[dtype]).eval()
        self.max_prefix = config.max_len - 1
        self.exchangeable = config.pe == "none" and config.attend_to == "tokens"
        suffix = " (ordinary decoder)" if config.attend_to == "states" else ""
        self.name = name or f"lab {config.pe}{suffix}"
        self.forward_passes = 0

    def _check_length(self, length: int, what: str) -> None:
        if length > self.max_prefix:
            raise InputError(
                f"{what} of {length} bits is longer than this model can score ({self.max_prefix} "
                f"bits: it was trained on sequences of {self.max_prefix + 1}); train with a "
                "larger `seq_len`",
                field="prefixes",
            )

    def _p_one(self, tokens: torch.Tensor) -> torch.Tensor:
        """P(next = 1) at every position of (batch, time) token rows."""
        with torch.inference_mode():
            logits = self.model(tokens)
        self.forward_passes += 1
        return torch.sigmoid(logits[..., 1] - logits[..., 0])

    def prob_one(self, prefixes: Sequence[Sequence[int]]) -> FloatArray:
        rows = [np.asarray(p, dtype=np.int64).reshape(-1) for p in prefixes]
        out = np.empty(len(rows))
        if not rows:
            return out
        flat = np.concatenate(rows)
        if flat.size and ((flat < 0) | (flat > 1)).any():
            raise InputError("must contain only 0 and 1", field="prefixes")
        lengths = np.fromiter((r.size for r in rows), dtype=np.int64, count=len(rows))
        self._check_length(int(lengths.max()), "a prefix")
        # Similar lengths share a batch, so little of it is padding.
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = int(lengths[chunk].max()) + 1
            tokens = torch.zeros((len(chunk), width), dtype=torch.long)
            tokens[:, 0] = BOS
            for i, j in enumerate(chunk):
                tokens[i, 1 : 1 + lengths[j]] = torch.from_numpy(rows[j])
            probs = self._p_one(tokens)
            index = torch.from_numpy(lengths[chunk])
            out[chunk] = probs[torch.arange(len(chunk)), index].double().numpy()
        return out

    def prefix_probs(
        self,
        sequences: Bits,
        lengths: Sequence[int] | None = None,
        *,
        progress: ProgressFn | None = None,
    ) -> FloatArray:
        bits = check_bits(sequences)
        lens = check_lengths(lengths, bits.shape[1])
        longest = max(lens)
        self._check_length(longest, "a prefix")
        columns = torch.tensor(lens)
        out = np.empty((bits.shape[0], len(lens)))
        for start in range(0, bits.shape[0], self.batch_size):
            block = torch.from_numpy(
                bits[start : start + self.batch_size, :longest].astype(np.int64)
            )
            bos = torch.full((block.shape[0], 1), BOS, dtype=torch.long)
            probs = self._p_one(torch.cat([bos, block], dim=1))
            out[start : start + block.shape[0]] = probs[:, columns].double().numpy()
            if progress is not None:
                progress(block.shape[0] * len(lens))
        return out

    def sample_paths(
        self,
        context: Sequence[int],
        uniforms: FloatArray,
        *,
        progress: ProgressFn | None = None,
    ) -> Bits:
        u = check_uniforms(uniforms)
        ctx = check_bits([list(context)], "context")[0] if len(context) else np.zeros(0, np.int8)
        paths, steps = u.shape
        # The last step conditions on the context and steps - 1 sampled bits.
        self._check_length(ctx.size + steps - 1, "the context plus the path")
        tokens = torch.empty((paths, 1 + ctx.size + steps), dtype=torch.long)
        tokens[:, 0] = BOS
        tokens[:, 1 : 1 + ctx.size] = torch.from_numpy(ctx.astype(np.int64))
        out = np.zeros(u.shape, dtype=np.int8)
        for t in range(steps):
            used = 1 + ctx.size + t
            q = self._p_one(tokens[:, :used])[:, -1].double().numpy()
            out[:, t] = u[:, t] < q
            tokens[:, used] = torch.from_numpy(out[:, t].astype(np.int64))
            if progress is not None:
                progress(paths)
        return out
