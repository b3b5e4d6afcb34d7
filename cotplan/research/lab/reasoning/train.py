"""Train the lab reasoning model on one family, and keep it in the user folder.

`train_lab_model(settings)` trains a `TinyTransformer` on a mix of full traces, cut traces with
a forced answer, and direct answers (`cotplan.research.lab.reasoning.data`), then measures greedy
accuracy with the full trace and with no reasoning at a few sizes. `load_or_train(family,
preset)` loads the model trained with exactly these settings from the user folder
(`cotplan.research.lab.store`, kind ``"reasoning"``), and trains and saves it when there is none.

Presets (`PRESETS`): ``"tiny"`` (n = 2..5, a few hundred steps: seconds, for tests),
``"quick"`` (n up to 8, about a minute), ``"standard"`` (n up to 16, what the study uses),
``"wide"`` (n up to 64, for the families that allow it: the theorem's domain; it solves
n ≤ 32), ``"long"`` (the lamp solved to n = 64, through the stages ``"wide-late"`` and
``"wide-top"``).
Training is seeded (`TrainSettings.seed`; ``load_or_train(family, preset, seed=1)``) and uses
the threads torch is allowed; call `torch.set_num_threads(1)` first on a shared machine. The
seed is part of the store key, a curriculum stage starts from its start stage trained with the
same seed, and the shipped weights are seed 0's only.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from cotplan.errors import InputError
from cotplan.research.lab._torch import require_torch
from cotplan.research.lab.reasoning.data import IGNORE, make_batch
from cotplan.research.lab.reasoning.settings import (
    DATA_FORMAT,
    FAMILY_PRESETS,
    PRESETS,
    TrainSettings,
    settings_for,
)
from cotplan.research.lab.reasoning.tasks import LabExample, get_lab_family, lab_example
from cotplan.research.lab.reasoning.tokenizer import (
    ANSWER,
    REASONING,
    LabTokenizer,
    default_tokenizer,
)
from cotplan.research.lab.schedule import warmup_cosine
from cotplan.validation import require_int

__all__ = [
    "DATA_FORMAT",
    "FAMILY_PRESETS",
    "PRESETS",
    "LabReasoningModel",
    "TrainSettings",
    "is_trained",
    "load_or_train",
    "preset_name",
    "settings_for",
    "time_training",
    "train_lab_model",
]

_STORE_KIND = "reasoning"


def _optimise(torch: Any, network: Any, optimiser: Any, ids: Any, targets: Any) -> Any:
    """One optimiser step on a batch (the training loop and its timing estimate run the same)."""
    logits = network(torch.from_numpy(ids))
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        torch.from_numpy(targets).reshape(-1),
        ignore_index=IGNORE,
    )
    optimiser.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
    optimiser.step()
    return loss


class LabReasoningModel:
    """A trained lab model: the network, its tokenizer, its settings and what training measured.

    `continuation(ids, max_new)` is the model's one primitive: greedy (or sampled) next tokens
    after a prompt of ids, with their log-probabilities, stopping at the end token.
    """

    def __init__(
        self,
        network: Any,
        settings: TrainSettings,
        meta: Mapping[str, Any] | None = None,
        tokenizer: LabTokenizer | None = None,
    ) -> None:
        self.network = network.eval()
        self.settings = settings
        self.meta = dict(meta or {})
        self.tokenizer = tokenizer or default_tokenizer()

    @property
    def family(self) -> str:
        return self.settings.family

    @property
    def key(self) -> str:
        from cotplan.research.lab.store import model_key

        return model_key(self.settings.to_dict())

    @property
    def max_len(self) -> int:
        return self.settings.max_len

    def logits(self, ids: Sequence[int]) -> Any:
        """Next-token logits (vocab,) after `ids` (float64 numpy array)."""
        torch = require_torch()
        if len(ids) > self.max_len:
            raise InputError(
                f"the sequence has {len(ids)} tokens, more than this model's {self.max_len}",
                field="prompt",
            )
        with one_thread(), torch.no_grad():
            out = self.network(torch.tensor([list(ids)], dtype=torch.long))[0, -1]
        return out.double().numpy()

    def continuation(
        self,
        ids: Sequence[int],
        max_new: int,
        *,
        temperature: float = 0.0,
        rng: np.random.Generator | None = None,
        stop: Callable[[list[int]], bool] | None = None,
    ) -> tuple[list[int], list[float], list[np.ndarray], bool]:
        """(new ids, their log-probabilities, each step's log-probabilities, ended).

        `ended` is True when the model wrote its end token (not included) or `stop` said so;
        False when `max_new` tokens ran out first. A sequence may not outgrow `max_len`: the
        model stops there as if the cap had been reached.
        """
        sequence = list(ids)
        new: list[int] = []
        logps: list[float] = []
        dists: list[np.ndarray] = []
        eos = self.tokenizer.eos_id
        pad, bos = self.tokenizer.pad_id, self.tokenizer.bos_id
        while len(new) < max_new and len(sequence) < self.max_len:
            logits = self.logits(sequence)
            logits[[pad, bos]] = -np.inf  # never written, only given
            logp = logits - np.logaddexp.reduce(logits)
            if temperature > 0:
                scaled = logits / temperature
                p = np.exp(scaled - np.logaddexp.reduce(scaled))
                token = int((rng or np.random.default_rng()).choice(len(p), p=p / p.sum()))
            else:
                token = int(np.argmax(logp))
            if token == eos:
                return new, logps, dists, True
            sequence.append(token)
            new.append(token)
            logps.append(float(logp[token]))
            dists.append(logp)
            if stop is not None and stop(new):
                return new, logps, dists, True
        return new, logps, dists, False

    def answer_prompt(self, question: str, *, reason: bool = True) -> list[int]:
        """The ids of a question followed by ``Reasoning:`` (or ``Answer:`` with `reason` off)."""
        marker = REASONING if reason else ANSWER
        return [self.tokenizer.bos_id, *self.tokenizer.encode([*question.split(), marker])]

    def accuracy(self, n: int, count: int = 64, *, reason: bool = True, seed: int = 7) -> float:
        """Greedy accuracy at size `n` with the full trace (or none): a quick check."""
        return self.check(n, count, reason=reason, seed=seed)[0]

    def check(
        self, n: int, count: int = 64, *, reason: bool = True, seed: int = 7
    ) -> tuple[float, float]:
        """(greedy accuracy, share of traces written exactly) at size `n`.

        A trace is exact when its tokens up to the settling step match the family's trace
        token for token; it tells a model that answers wrong from a right trace apart from one
        that wrote a wrong trace (at n = 64 the wide lamp did the latter). With `reason` off
        there is no trace and the second value is 0.
        """
        right = exact = 0
        for example, words in self._greedy_runs(n, count, seed, reason):
            settled = example.settling_tokens
            exact += reason and words[:settled] == list(example.trace[:settled])
            if ANSWER in words:
                words = words[words.index(ANSWER) + 1 :]
            elif reason:
                words = []
            right += bool(words) and words[0] == example.answer
        return right / count, exact / count

    def first_wrong_steps(self, n: int, count: int = 64, *, seed: int = 7) -> list[int | None]:
        """Per item (the same items as `check`), the step whose trace tokens are the first to
        differ from the family's trace (1-based; three tokens a step), or None where the
        trace is exact up to the settling step: where a model that does not solve a size
        goes wrong."""
        steps: list[int | None] = []
        for example, words in self._greedy_runs(n, count, seed, True):
            settled = example.settling_tokens
            wrong = [i for i in range(settled) if i >= len(words) or words[i] != example.trace[i]]
            steps.append(wrong[0] // 3 + 1 if wrong else None)
        return steps

    def _greedy_runs(
        self, n: int, count: int, seed: int, reason: bool
    ) -> Iterator[tuple[LabExample, list[str]]]:
        """`count` examples at size `n` (seeded) and the words of each greedy answer."""
        rng = np.random.default_rng(seed)
        for _ in range(count):
            example = lab_example(self.family, rng, n)
            prompt = self.answer_prompt(example.prompt, reason=reason)
            # Room for the longest trace (an over-thinker's check pass has a random length).
            longest = get_lab_family(self.family).max_trace(n)
            new, _, _, _ = self.continuation(prompt, longest + 3)
            yield example, self.tokenizer.decode(new).split()


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread, restoring the count after. A lab model's matrices are too small
    to gain from more, and on a busy 2-core machine two threads made a forward pass about ten
    times slower than one."""
    torch = require_torch()
    previous = torch.get_num_threads()
    if previous == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _schedule(step: int, settings: TrainSettings) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    return warmup_cosine(step, warmup=settings.warmup, steps=settings.steps, floor=0.1)


def train_lab_model(
    settings: TrainSettings,
    *,
    progress: Callable[[int, float], None] | None = None,
    check_sizes: Sequence[int] | None = None,
) -> LabReasoningModel:
    """Train a model with `settings` (no store); `progress(step, loss)` every 50 steps.

    After training, greedy accuracy with the full trace and with no reasoning is measured at
    `check_sizes` (default: the smallest, middle and largest trained size) into `meta`.
    """
    torch = require_torch()
    from cotplan.research.lab.transformer import TinyTransformer

    tokenizer = default_tokenizer()
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(np.random.SeedSequence([settings.seed, 17]))
    network = TinyTransformer(settings.model_config(tokenizer))
    if settings.init:
        _start_from(network, settings)
    optimiser = torch.optim.AdamW(
        network.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: _schedule(step, settings))
    sizes = list(range(settings.n_min, settings.n_max + 1))
    started = time.perf_counter()
    losses: list[float] = []
    network.train()
    for step in range(settings.steps):
        ids, targets = make_batch(
            settings.family,
            rng,
            settings.batch_size,
            sizes=sizes,
            mix=settings.mix,
            tokenizer=tokenizer,
            one_size=settings.bucket,
        )
        loss = _optimise(torch, network, optimiser, ids, targets)
        scheduler.step()
        losses.append(loss.item())
        if progress is not None and (step % 50 == 0 or step == settings.steps - 1):
            progress(step, float(np.mean(losses[-50:])))
    seconds = time.perf_counter() - started
    model = LabReasoningModel(network, settings, tokenizer=tokenizer)
    checks = list(
        check_sizes
        or sorted({settings.n_min, (settings.n_min + settings.n_max) // 2, settings.n_max})
    )
    with_trace = {n: model.check(n) for n in checks}
    model.meta = {
        "train_seconds": round(seconds, 1),
        "final_loss": float(np.mean(losses[-50:])),
        "parameters": int(network.num_parameters()),
        "accuracy_full_trace": {str(n): full[0] for n, full in with_trace.items()},
        "trace_exact": {str(n): full[1] for n, full in with_trace.items()},
        "accuracy_no_reasoning": {str(n): model.accuracy(n, reason=False) for n in checks},
    }
    return model


def _start_from(network: Any, settings: TrainSettings) -> None:
    """Copy the weights of the model `settings.init` names (same family) into `network`.

    Rotary positions keep no table, so a model trained on shorter sequences loads into a longer
    one; any other difference in shape is an error.
    """
    if settings.init == preset_name(settings):
        raise InputError(f"a preset cannot start from itself ({settings.init!r})", field="init")
    # The start stage has this model's seed: another seed's curriculum never passes through
    # seed 0's (shipped or stored) weights, so its stages are as independent as its last one.
    base = load_or_train(settings.family, settings.init, seed=settings.seed)
    if (
        base.settings.d_model,
        base.settings.n_layers,
        base.settings.n_heads,
        base.settings.d_ff,
        base.settings.pe,
    ) != (settings.d_model, settings.n_layers, settings.n_heads, settings.d_ff, settings.pe):
        raise InputError(
            f"preset {settings.init!r} has another shape than this model's", field="init"
        )
    network.load_state_dict(base.network.state_dict())


def time_training(settings: TrainSettings, steps: int = 20) -> float:
    """Seconds per training step of `settings`, measured over `steps` steps (after one warm-up
    step) on this machine as it is now: `settings.steps` times it is how long training takes.
    Nothing is saved."""
    steps = require_int(steps, "steps", low=1, high=10_000)
    timed: list[float] = []

    def clock(step: int, loss: float) -> None:
        timed.append(time.perf_counter())

    short = settings.replace(steps=steps + 1, warmup=0)
    # Progress comes every 50 steps and at the last one: time steps 1..steps from step 0's call.
    torch = require_torch()
    from cotplan.research.lab.transformer import TinyTransformer

    tokenizer = default_tokenizer()
    torch.manual_seed(short.seed)
    rng = np.random.default_rng(np.random.SeedSequence([short.seed, 17]))
    network = TinyTransformer(short.model_config(tokenizer))
    optimiser = torch.optim.AdamW(network.parameters(), lr=short.lr)
    sizes = list(range(short.n_min, short.n_max + 1))
    for step in range(short.steps):
        if step == 1:
            clock(step, 0.0)
        ids, targets = make_batch(
            short.family,
            rng,
            short.batch_size,
            sizes=sizes,
            mix=short.mix,
            tokenizer=tokenizer,
            one_size=short.bucket,
        )
        _optimise(torch, network, optimiser, ids, targets)
    clock(short.steps, 0.0)
    return (timed[-1] - timed[0]) / steps


def preset_name(settings: TrainSettings) -> str | None:
    """The name of the preset whose settings these are (with any seed), or None."""
    for name in PRESETS:
        try:
            if settings_for(settings.family, name, seed=settings.seed) == settings:
                return name
        except InputError:  # a preset the family's sizes do not allow ("wide")
            continue
    return None


def _restore(
    settings: TrainSettings, state: Mapping[str, Any], meta: Mapping[str, Any]
) -> LabReasoningModel:
    from cotplan.research.lab.transformer import TinyTransformer

    tokenizer = default_tokenizer()
    network = TinyTransformer(settings.model_config(tokenizer))
    network.load_state_dict(dict(state))
    return LabReasoningModel(network, settings, meta, tokenizer)


def is_trained(
    family: str, preset: str | TrainSettings = "standard", *, seed: int | None = None
) -> bool:
    """Whether `load_or_train` would load this model (shipped, or in the user folder) rather
    than train it: a caller about to start hours of training can ask first."""
    from cotplan.research.lab import store
    from cotplan.research.lab.reasoning.shipped import shipped_state

    settings = settings_for(family, preset, seed=seed)
    name = preset_name(settings)
    if name is not None and shipped_state(settings, name) is not None:
        return True
    return store.load(_STORE_KIND, settings.to_dict()) is not None


def load_or_train(
    family: str,
    preset: str | TrainSettings = "standard",
    *,
    seed: int | None = None,
    retrain: bool = False,
    progress: Callable[[int, float], None] | None = None,
    check_sizes: Sequence[int] | None = None,
) -> LabReasoningModel:
    """The model for `family` trained with `preset`: the weights that ship with cotplan
    (`cotplan.research.lab.reasoning.shipped`), else the user folder's, else trained now (and saved
    in the user folder). `seed` is the training seed (None: the preset's, 0, or the settings'
    own); the shipped weights are seed 0's, so another seed is loaded from the user folder or
    trained, its curriculum stages too. `retrain` trains again whatever exists (shipped files
    stay as they are; a curriculum's start stages are loaded when they exist);
    `check_sizes` are the sizes training's accuracy check measures (`train_lab_model`).
    """
    from cotplan.research.lab import store
    from cotplan.research.lab.reasoning.shipped import shipped_state

    settings = settings_for(family, preset, seed=seed)
    key = settings.to_dict()
    if not retrain:
        name = preset_name(settings)
        shipped = shipped_state(settings, name) if name is not None else None
        if shipped is not None:
            return _restore(settings, *shipped)
        stored = store.load(_STORE_KIND, key)
        if stored is not None:
            return _restore(settings, stored.state, stored.meta)
    model = train_lab_model(settings, progress=progress, check_sizes=check_sizes)
    store.save(_STORE_KIND, key, model.network.state_dict(), model.meta)
    return model
