"""The positional-encoding lab's trainer: small transformers on exchangeable binary sequences,
where Bayes is known exactly.

Each training sequence draws p ~ Beta(a, b), then `seq_len` i.i.d. Bernoulli(p) bits; the model
reads ``[BOS, x_1, ..., x_{L-1}]`` and predicts ``x_1, ..., x_L``. Under this prior the posterior
predictive ``(k + a) / (t + a + b)`` is the Bayes-optimal predictor, and its expected log-loss at
position t is ``E[H((K + a) / (t + a + b))]`` with K ~ BetaBinomial(t, a, b): computable exactly
(`bayes_loss_curve`), so a trained model's held-out loss has an exact floor beside it.

`train(pe=...)` trains one model (AdamW, linear warm-up then cosine decay, gradient clipping) and
returns a `LabModel`: a `Predictor` that every experiment accepts. The weights and the settings go
to the cotplan user folder (`cotplan.research.lab.store`, kind ``pe-lab``) keyed by every setting,
so the same call later loads instead of training. Everything but the positional encoding (and
`attend_to`) is shared by the encodings of an ablation: width, depth, data, steps and seed; the
fresh training batches and the held-out set depend on the seed only.

Two presets pin every hyperparameter: ``quick`` (a tiny model, seconds: tests, notebooks, the
CLI's ``--quick``) and ``full`` (d = 64, 2 layers, 4 heads, length-200 sequences, 2,000 steps).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pandas as pd
import torch
from scipy import stats

from cotplan.errors import InputError
from cotplan.research.experiments.predictors import FloatArray, ProgressFn
from cotplan.research.experiments.sequences import Bits
from cotplan.research.lab import store
from cotplan.research.lab.predictor import BOS, Precision, TransformerPredictor
from cotplan.research.lab.schedule import warmup_cosine
from cotplan.research.lab.transformer import (
    POSITIONAL_ENCODINGS,
    AttendTo,
    PositionalEncoding,
    TinyTransformer,
    TransformerConfig,
)
from cotplan.validation import require_int

__all__ = [
    "PE_LAB_PRESETS",
    "STORE_KIND",
    "EvalPoint",
    "LabModel",
    "PETrainSettings",
    "TrainReport",
    "TrainSettings",
    "bayes_loss_curve",
    "default_threads",
    "from_spec",
    "torch_threads",
    "train",
]

#: The store folder of these models: ``<home>/lab/pe-lab/<key>/``.
STORE_KIND = "pe-lab"
#: Bumped when training changes in a way the settings do not show (old weights then retrain).
_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class PETrainSettings:
    """Everything that shapes a trained model; the store key is a hash of all of it.

    `seq_len` is the number of bits per training sequence, and so the longest prefix the model
    can score is ``seq_len - 1``. `eval_sequences` held-out sequences are scored every
    `eval_every` steps and at the end.
    """

    pe: PositionalEncoding = "rope"
    attend_to: AttendTo = "tokens"
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    seq_len: int = 200
    batch_size: int = 32
    steps: int = 2000
    lr: float = 3e-3
    warmup: int = 100
    final_lr_fraction: float = 0.1
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    prior_a: float = 1.0
    prior_b: float = 1.0
    seed: int = 0
    eval_every: int = 100
    eval_sequences: int = 512

    def __post_init__(self) -> None:
        positive = ("d_model", "n_layers", "n_heads", "d_ff", "batch_size", "eval_every")
        for name in (*positive, "steps", "warmup", "seq_len", "seed", "eval_sequences"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise InputError(f"must be an integer, got {value!r}", field=name)
        for name in positive:
            if getattr(self, name) < 1:
                raise InputError(f"must be >= 1, got {getattr(self, name)!r}", field=name)
        for name in ("steps", "warmup", "seed"):
            if getattr(self, name) < 0:
                raise InputError(f"must be >= 0, got {getattr(self, name)!r}", field=name)
        if self.seq_len < 4:
            raise InputError(f"must be >= 4, got {self.seq_len!r}", field="seq_len")
        if self.eval_sequences < 2:
            raise InputError(f"must be >= 2, got {self.eval_sequences!r}", field="eval_sequences")
        for name in ("lr", "prior_a", "prior_b", "grad_clip"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise InputError(f"must be a positive number, got {value!r}", field=name)
        if not 0.0 <= self.weight_decay < 1.0:
            raise InputError(f"must lie in [0, 1), got {self.weight_decay!r}", field="weight_decay")
        if not 0.0 <= self.final_lr_fraction <= 1.0:
            raise InputError(
                f"must lie in [0, 1], got {self.final_lr_fraction!r}", field="final_lr_fraction"
            )
        self.config()  # the transformer's own checks (encoding, head width)

    def config(self) -> TransformerConfig:
        """The transformer shape: vocabulary {0, 1, BOS}, positions 0..seq_len-1."""
        return TransformerConfig(
            vocab_size=3,
            max_len=self.seq_len,
            pe=self.pe,
            attend_to=self.attend_to,
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_ff=self.d_ff,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PETrainSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(
                f"unknown settings {unknown}; known: {sorted(known)}", field="settings"
            )
        return cls(**dict(data))


#: The name this class had when it was the lab's only training settings; the reasoning lab's
#: `cotplan.research.lab.reasoning.settings.TrainSettings` is another class.
TrainSettings = PETrainSettings


#: Pinned hyperparameters. ``full``: the ablation of docs/lab.md (about 3-4 minutes per
#: encoding on 2 idle cores); ``quick``: a tiny model trained in seconds.
PE_LAB_PRESETS: dict[str, dict[str, Any]] = {
    "quick": {
        "d_model": 32,
        "n_layers": 1,
        "n_heads": 2,
        "d_ff": 64,
        "seq_len": 64,
        "batch_size": 32,
        "steps": 300,
        "lr": 5e-3,
        "warmup": 20,
        "eval_every": 100,
        "eval_sequences": 256,
    },
    "full": {
        "d_model": 64,
        "n_layers": 2,
        "n_heads": 4,
        "d_ff": 256,
        "seq_len": 200,
        "batch_size": 32,
        "steps": 2000,
        "lr": 3e-3,
        "warmup": 100,
        "eval_every": 100,
        "eval_sequences": 512,
    },
}


def bayes_loss_curve(seq_len: int, a: float = 1.0, b: float = 1.0) -> FloatArray:
    """Expected log-loss (nats) of the Bayes predictor at positions t = 0..seq_len-1.

    Position t predicts bit t + 1 after t bits; the number of ones K among them is
    BetaBinomial(t, a, b), and the loss given K is the binary entropy of the posterior predictive.
    """
    if seq_len < 1:
        raise InputError(f"must be >= 1, got {seq_len!r}", field="seq_len")
    out = np.empty(seq_len)
    for t in range(seq_len):
        k = np.arange(t + 1)
        q = (k + a) / (t + a + b)
        entropy = -(q * np.log(q) + (1 - q) * np.log1p(-q))
        out[t] = float(stats.betabinom.pmf(k, t, a, b) @ entropy)
    return out


def default_threads() -> int:
    """torch threads when none are asked for: the idle cores now, at least 1 and at most 4.

    Small models gain little beyond 4 threads, and more threads than idle cores is far worse
    than one: oversubscribed threads wait on each other at every operation (`benchmarks/pe_lab.py
    --threads 1` and ``--threads 2`` on a busy machine show it).
    """
    cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        busy = 0.0
    return max(1, min(4, cores, math.floor(cores - busy + 0.5)))


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[int]:
    """Run torch on `threads` threads (default `default_threads()`), restoring the old count."""
    n = default_threads() if threads is None else require_int(threads, "threads", low=1)
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(previous)


@dataclasses.dataclass(frozen=True)
class EvalPoint:
    """Held-out loss after `step` steps; `train_s` counts training time only (no evaluation)."""

    step: int
    train_s: float
    heldout_loss: float
    excess: float


@dataclasses.dataclass(frozen=True)
class TrainReport:
    """How training went, measured on the held-out sequences.

    - `heldout_loss`: the model's mean log-loss per predicted bit (nats);
    - `bayes_heldout_loss`: the Bayes predictor's on the same sequences, and `excess` the paired
      difference with its standard error `excess_se` (over sequences);
    - `bayes_loss`: the exact expected Bayes loss (what `bayes_heldout_loss` estimates);
    - `constant_loss`: the best constant predictor's (the held-out frequency of ones, fitted on
      the held-out bits themselves: a bar that favours the constant);
    - `history`: the evaluations during training; `steps_per_s` over training time only.
    """

    settings: PETrainSettings
    heldout_loss: float
    bayes_heldout_loss: float
    excess: float
    excess_se: float
    bayes_loss: float
    constant_loss: float
    history: tuple[EvalPoint, ...]
    steps_per_s: float
    train_s: float
    wall_s: float
    parameters: int
    threads: int
    from_store: bool = False
    folder: str = ""

    @property
    def beats_constant(self) -> bool:
        """Whether the model's held-out loss is below the best constant predictor's."""
        return self.heldout_loss < self.constant_loss

    def first_within(self, nats: float = 0.001) -> EvalPoint | None:
        """The first evaluation whose excess over Bayes was at most `nats`, if any."""
        return next((p for p in self.history if p.excess <= nats), None)

    def settled_within(self, nats: float = 0.001) -> EvalPoint | None:
        """The first evaluation from which every later one was within `nats` of Bayes, if any.

        Sturdier than `first_within`: the held-out excess is noisy (about `excess_se`) and the
        loss still moves while the learning rate is high, so one evaluation can dip below by luck.
        """
        settled = None
        for point in self.history:
            settled = (settled or point) if point.excess <= nats else None
        return settled

    def to_frame(self) -> pd.DataFrame:
        """The training curve: step, training seconds, held-out loss, excess over Bayes."""
        return pd.DataFrame([dataclasses.asdict(p) for p in self.history])

    def summary(self) -> dict[str, Any]:
        """One row for tables: the encoding, the losses, the speed."""
        within = self.first_within()
        settled = self.settled_within()
        return {
            "pe": self.settings.pe,
            "attend_to": self.settings.attend_to,
            "parameters": self.parameters,
            "steps": self.settings.steps,
            "heldout_loss": self.heldout_loss,
            "bayes_heldout_loss": self.bayes_heldout_loss,
            "excess": self.excess,
            "excess_se": self.excess_se,
            "bayes_loss": self.bayes_loss,
            "constant_loss": self.constant_loss,
            "steps_per_s": self.steps_per_s,
            "train_s": self.train_s,
            "step_within_0.001": within.step if within else math.nan,
            "s_within_0.001": within.train_s if within else math.nan,
            "step_settled_0.001": settled.step if settled else math.nan,
            "s_settled_0.001": settled.train_s if settled else math.nan,
            "from_store": self.from_store,
        }

    def to_meta(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["settings"] = self.settings.to_dict()
        data["history"] = [dataclasses.asdict(p) for p in self.history]
        for key in ("from_store", "folder"):
            data.pop(key)
        return data

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any], folder: Path) -> TrainReport:
        data = dict(meta)
        data["settings"] = PETrainSettings.from_dict(data["settings"])
        data["history"] = tuple(EvalPoint(**p) for p in data["history"])
        return cls(**data, from_store=True, folder=str(folder))


class LabModel(TransformerPredictor):
    """A transformer trained on Beta-Bernoulli sequences, with its settings and training report.

    A `Predictor`: pass it to `martingale_gap`, `order_variance`, `positional_debias`,
    `entropy_efficiency` or `falck_tests` like any backend (prefixes up to ``seq_len - 1`` bits).
    `trained` is the float32 model as trained; scoring uses a copy in `dtype`.
    """

    def __init__(
        self,
        model: TinyTransformer,
        settings: PETrainSettings,
        report: TrainReport,
        *,
        dtype: Precision = "float64",
        name: str | None = None,
    ) -> None:
        super().__init__(model, dtype=dtype, name=name)
        self.trained = model
        self.settings = settings
        self.report = report

    def as_dtype(self, dtype: Precision) -> LabModel:
        """The same weights scored in another precision."""
        return LabModel(self.trained, self.settings, self.report, dtype=dtype, name=self.name)


def _settings(
    pe: PositionalEncoding, attend_to: AttendTo, preset: str, overrides: Mapping[str, Any]
) -> PETrainSettings:
    if preset not in PE_LAB_PRESETS:
        raise InputError(f"must be one of {sorted(PE_LAB_PRESETS)}, got {preset!r}", field="preset")
    return PETrainSettings.from_dict(
        {**PE_LAB_PRESETS[preset], **overrides, "pe": pe, "attend_to": attend_to}
    )


def _draw(rng: np.random.Generator, n: int, settings: PETrainSettings) -> Bits:
    p = rng.beta(settings.prior_a, settings.prior_b, size=n)
    return (rng.random((n, settings.seq_len)) < p[:, None]).astype(np.int8)


def _inputs(bits: Bits) -> tuple[torch.Tensor, torch.Tensor]:
    """Model input ``[BOS, x_1..x_{L-1}]`` and targets ``x_1..x_L``."""
    targets = torch.from_numpy(bits.astype(np.int64))
    bos = torch.full((bits.shape[0], 1), BOS, dtype=torch.long)
    return torch.cat([bos, targets[:, :-1]], dim=1), targets


def _bit_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-bit log-loss with the distribution renormalised over {0, 1} (the BOS logit ignored)."""
    return torch.nn.functional.cross_entropy(
        logits[..., :2].reshape(-1, 2), targets.reshape(-1), reduction="none"
    ).view(targets.shape)


def _bayes_losses(bits: Bits, a: float, b: float) -> FloatArray:
    ones = np.concatenate([np.zeros((bits.shape[0], 1)), np.cumsum(bits, axis=1)[:, :-1]], axis=1)
    t = np.arange(bits.shape[1], dtype=float)
    q = (ones + a) / (t + a + b)
    return np.asarray(-np.where(bits == 1, np.log(q), np.log1p(-q)), dtype=float)


class _HeldOut:
    """The held-out sequences and the per-sequence Bayes loss the model is compared with."""

    def __init__(self, settings: PETrainSettings) -> None:
        rng = np.random.default_rng(np.random.SeedSequence([settings.seed, 2]))
        self.bits = _draw(rng, settings.eval_sequences, settings)
        self.inputs, self.targets = _inputs(self.bits)
        self.bayes = _bayes_losses(self.bits, settings.prior_a, settings.prior_b).mean(axis=1)
        freq = float(self.bits.mean())
        self.constant = -(freq * math.log(freq) + (1 - freq) * math.log1p(-freq))

    def per_sequence(self, model: TinyTransformer) -> FloatArray:
        was_training = model.training
        model.eval()
        out = np.empty(self.bits.shape[0])
        with torch.inference_mode():
            for start in range(0, len(out), 128):
                stop = start + 128
                loss = _bit_loss(model(self.inputs[start:stop]), self.targets[start:stop])
                out[start:stop] = loss.mean(dim=1).double().numpy()
        model.train(was_training)
        return out


def _optimizer(model: TinyTransformer, settings: PETrainSettings) -> torch.optim.AdamW:
    # No decay on biases, norms and the query start: only matrices and embeddings shrink.
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": settings.weight_decay},
        {"params": rest, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=settings.lr, betas=(0.9, 0.95))


def _lr_factor(step: int, settings: PETrainSettings) -> float:
    return warmup_cosine(
        step, warmup=settings.warmup, steps=settings.steps, floor=settings.final_lr_fraction
    )


def _fit(
    settings: PETrainSettings,
    threads: int,
    progress: ProgressFn | None,
    on_eval: Callable[[EvalPoint], None] | None,
) -> tuple[TinyTransformer, TrainReport]:
    started = time.perf_counter()
    torch.manual_seed(settings.seed)
    model = TinyTransformer(settings.config())
    optimizer = _optimizer(model, settings)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: _lr_factor(step, settings)
    )
    data = np.random.default_rng(np.random.SeedSequence([settings.seed, 1]))
    held = _HeldOut(settings)
    history: list[EvalPoint] = []
    train_s = 0.0

    def evaluate(step: int) -> FloatArray:
        losses = held.per_sequence(model)
        point = EvalPoint(step, train_s, float(losses.mean()), float((losses - held.bayes).mean()))
        history.append(point)
        if on_eval is not None:
            on_eval(point)
        return losses

    model.train()
    for step in range(1, settings.steps + 1):
        tick = time.perf_counter()
        inputs, targets = _inputs(_draw(data, settings.batch_size, settings))
        loss = _bit_loss(model(inputs), targets).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
        optimizer.step()
        scheduler.step()
        train_s += time.perf_counter() - tick
        if progress is not None:
            progress(1)
        if step % settings.eval_every == 0 and step != settings.steps:
            evaluate(step)
    losses = evaluate(settings.steps)
    model.eval()
    excess = losses - held.bayes
    report = TrainReport(
        settings=settings,
        heldout_loss=float(losses.mean()),
        bayes_heldout_loss=float(held.bayes.mean()),
        excess=float(excess.mean()),
        excess_se=float(excess.std(ddof=1) / math.sqrt(excess.size)),
        bayes_loss=float(
            bayes_loss_curve(settings.seq_len, settings.prior_a, settings.prior_b).mean()
        ),
        constant_loss=held.constant,
        history=tuple(history),
        steps_per_s=settings.steps / train_s if train_s > 0 else math.nan,
        train_s=train_s,
        wall_s=time.perf_counter() - started,
        parameters=model.num_parameters(),
        threads=threads,
    )
    return model, report


def _store_settings(settings: PETrainSettings) -> dict[str, Any]:
    return {"format": _FORMAT, **settings.to_dict()}


def train(
    pe: PositionalEncoding = "rope",
    *,
    attend_to: AttendTo = "tokens",
    preset: str = "full",
    steps: int | None = None,
    seed: int = 0,
    threads: int | None = None,
    progress: ProgressFn | None = None,
    retrain: bool = False,
    save: bool = True,
    dtype: Precision = "float64",
    on_eval: Callable[[EvalPoint], None] | None = None,
    **overrides: Any,
) -> LabModel:
    """Train (or load) one model on Beta-Bernoulli sequences and return it as a `Predictor`.

    `preset` (``"quick"`` or ``"full"``) pins the hyperparameters; `steps`, `seed` and any
    `PETrainSettings` field in `overrides` change them. When a model with exactly these settings
    was saved before it is loaded (``report.from_store``) unless `retrain`; with `save` False
    nothing is written. `progress` is called with the number of steps just completed, `on_eval`
    with each held-out evaluation (an `EvalPoint`) as it happens. `threads` sets torch's thread
    count for the duration (default `default_threads()`).
    """
    if pe not in POSITIONAL_ENCODINGS:
        raise InputError(
            f"must be one of {', '.join(POSITIONAL_ENCODINGS)}; got {pe!r}", field="pe"
        )
    if attend_to not in get_args(AttendTo):
        raise InputError(f"must be 'states' or 'tokens'; got {attend_to!r}", field="attend_to")
    changes = dict(overrides, seed=seed)
    if steps is not None:
        changes["steps"] = steps
    settings = _settings(pe, attend_to, preset, changes)
    key = _store_settings(settings)
    if not retrain:
        stored = store.load(STORE_KIND, key)
        if stored is not None:
            model = TinyTransformer(settings.config())
            model.load_state_dict(stored.state)
            model.eval()
            folder = store.lab_dir() / STORE_KIND / store.model_key(key)
            report = TrainReport.from_meta(stored.meta, folder)
            if progress is not None:
                progress(settings.steps)
            return LabModel(model, settings, report, dtype=dtype)
    with torch_threads(threads) as n:
        model, report = _fit(settings, n, progress, on_eval)
    if save:
        folder = store.save(STORE_KIND, key, model.state_dict(), report.to_meta())
        report = dataclasses.replace(report, folder=str(folder))
    return LabModel(model, settings, report, dtype=dtype)


def from_spec(
    spec: str, *, threads: int | None = None, progress: ProgressFn | None = None
) -> LabModel:
    """A lab model from a backend-like spec: ``pe:PE[:states|:tokens][:quick|:full]``.

    ``pe:rope`` is the full preset's RoPE model (trained on first use, then loaded);
    ``pe:none:states:quick`` the quick preset's ordinary decoder without an encoding. (``lab:``
    names the lab reasoning models of `cotplan.connect`.)
    """
    name, _, rest = spec.strip().lower().partition(":")
    parts = [p for p in rest.split(":") if p]
    if name != "pe" or not parts:
        raise InputError(f"must look like 'pe:PE[:states][:quick]', got {spec!r}", field="backend")
    pe, options = parts[0], parts[1:]
    attend_to: AttendTo = "tokens"
    preset = "full"
    for option in options:
        if option in get_args(AttendTo):
            attend_to = option  # type: ignore[assignment]
        elif option in PE_LAB_PRESETS:
            preset = option
        else:
            raise InputError(
                f"unknown option {option!r} in {spec!r}: use states, tokens, quick or full",
                field="backend",
            )
    if pe not in POSITIONAL_ENCODINGS:
        raise InputError(
            f"unknown encoding {pe!r} in {spec!r}; choose from {', '.join(POSITIONAL_ENCODINGS)}",
            field="backend",
        )
    return train(pe, attend_to=attend_to, preset=preset, threads=threads, progress=progress)
