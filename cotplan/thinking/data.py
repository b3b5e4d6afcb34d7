"""The training set of the embedded thinking model: chat prompts and thinking traces.

`training_examples(settings)` draws items from the built-in families at the sizes a
`ThinkingSettings` names, writes each as the prompt the model is served with (SmolLM2's chat
template and default system message, exactly what the server's own template writes) and the
assistant turn it should learn (`cotplan.thinking.traces`). The same settings and seed give the
same examples, so the adapter can be trained again bit for bit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from cotplan.errors import InputError
from cotplan.generate.prompts import CHAT_TEMPLATES
from cotplan.tasks import make_tasks
from cotplan.thinking.traces import make_trace
from cotplan.validation import require_int, require_positive

__all__ = [
    "CURRICULUM_RAMP",
    "DEFAULT_MIX",
    "LONG_MIX",
    "PRESETS",
    "RESUMING_PRESETS",
    "Example",
    "ThinkingSettings",
    "render_prompt",
    "training_examples",
]

#: Families, their share of the examples, and the sizes drawn (inclusive range). Count carries
#: the most weight: it is the demo's family.
DEFAULT_MIX: dict[str, tuple[float, int, int]] = {
    "count": (0.45, 1, 12),
    "coin_flip": (0.15, 1, 8),
    "parity": (0.12, 1, 10),
    "addition": (0.13, 2, 6),
    "arithmetic": (0.10, 1, 5),
    "last_letter": (0.05, 1, 5),
}

#: The long thinker's mix (`local:thinking-long`): lists of 10-80 words and sums of 10-40
#: numbers, one step a line, so that uncapped thinking runs to hundreds and thousands of tokens
#: as real reasoning models' does. `find` settles where its word stands (item to item within a
#: size) and `count` where the last occurrence stands; the others settle at the end.
LONG_MIX: dict[str, tuple[float, int, int]] = {
    "count": (0.35, 10, 80),
    "find": (0.35, 10, 80),
    "addition": (0.15, 10, 40),
    "parity": (0.15, 10, 60),
}


@dataclass(frozen=True)
class ThinkingSettings:
    """Everything that shapes the adapter: data, LoRA shape and optimiser.

    `truncated_share` of the examples stop their thinking part-way and answer from the state
    reached (what a forced answer should do); `instruction_share` of the prompts carry cotplan's
    plain "Think step by step" wording after the question, so the model thinks in `<think>` with
    or without it.
    """

    examples: int = 1400
    seed: int = 0
    mix: dict[str, tuple[float, int, int]] = field(default_factory=lambda: dict(DEFAULT_MIX))
    truncated_share: float = 0.2
    instruction_share: float = 0.25
    #: Re-checks after the settled answer, fewest and most. Greedy decoding follows the likelier
    #: continuation, so with 1-3 the model settled on one re-check (about 1.9 times the thinking
    #: its answer needs); the second stage trains 2-3 to reach the 2-4 times reasoning models show.
    rechecks: tuple[int, int] = (1, 3)
    #: Every re-check reads at least to where the answer settled (the long thinker's traces).
    recheck_to_settled: bool = False
    #: Sizes grow over the run instead of being drawn from the whole range from the start: the
    #: largest size allowed rises from the family's smallest to its largest over the first
    #: `CURRICULUM_RAMP` of the examples, which are then trained in that order (not shuffled).
    curriculum: bool = False
    rank: int = 16
    alpha: float = 32.0
    targets: tuple[str, ...] = ("v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    learning_rate: float = 1e-3
    batch_size: int = 8
    epochs: int = 1
    warmup_steps: int = 10
    # One thread: on a 2-core machine shared with anything else, a second torch thread waits
    # at every barrier for its descheduled twin (training ran 4x slower that way).
    threads: int = 1

    def __post_init__(self) -> None:
        require_int(self.examples, "examples", low=1)
        require_int(self.rank, "rank", low=1)
        require_int(self.batch_size, "batch_size", low=1)
        require_int(self.epochs, "epochs", low=1)
        require_int(self.threads, "threads", low=1)
        # AdamW on LoRA weights diverges far below 1; 0, a negative, NaN or inf trains nothing.
        if require_positive(self.learning_rate, "learning_rate") > 1.0:
            raise InputError(
                f"must be more than 0 and at most 1, got {self.learning_rate!r}",
                field="learning_rate",
            )

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["mix"] = {k: list(v) for k, v in self.mix.items()}
        out["targets"] = list(self.targets)
        out["rechecks"] = list(self.rechecks)
        return out


@dataclass(frozen=True)
class Example:
    """One training pair: the rendered prompt (loss-free) and the assistant turn (learned)."""

    family: str
    n: int
    prompt: str
    completion: str
    truncated: bool


_INSTRUCTION = 'Think step by step, then give the final answer after "Answer:".'


def render_prompt(question: str) -> str:
    """The prompt the server writes for one user question (SmolLM2 template, default system)."""
    return CHAT_TEMPLATES["smollm2"].render([{"role": "user", "content": question}])


#: Share of a curriculum run over which the largest size drawn rises to the family's largest;
#: the rest of the run draws from the whole range, so no size is seen only at the very end.
CURRICULUM_RAMP = 0.6


def _size_ceiling(low: int, high: int, index: int, settings: ThinkingSettings) -> int:
    """The largest size example `index` may draw: `high`, or less early in a curriculum."""
    if not settings.curriculum:
        return high
    reached = min(1.0, (index + 1) / (CURRICULUM_RAMP * settings.examples))
    return low + round((high - low) * reached)


def training_examples(settings: ThinkingSettings) -> list[Example]:
    """The examples `settings` describe, in a seeded random order (in a curriculum, sizes
    grow along the list)."""
    rng = np.random.default_rng(settings.seed)
    names = list(settings.mix)
    shares = np.array([settings.mix[name][0] for name in names], dtype=float)
    picks = rng.choice(len(names), size=settings.examples, p=shares / shares.sum())
    out: list[Example] = []
    for index, pick in enumerate(picks):
        family = names[int(pick)]
        low, high = settings.mix[family][1], settings.mix[family][2]
        n = int(rng.integers(low, _size_ceiling(low, high, index, settings) + 1))
        # Training items come from their own seed range, far from the seeds evaluations use.
        item = make_tasks(family, n=n, count=1, seed=1_000_000 + settings.seed * 100_000 + index)[0]
        truncated = bool(rng.random() < settings.truncated_share)
        trace = make_trace(
            item,
            rng,
            truncate=truncated,
            rechecks=settings.rechecks,
            recheck_to_settled=settings.recheck_to_settled,
        )
        question = item.prompt if isinstance(item.prompt, str) else str(item.prompt)
        if rng.random() < settings.instruction_share:
            question = f"{question}\n{_INSTRUCTION}"
        out.append(
            Example(family, n, render_prompt(question), trace.text + "<|im_end|>", truncated)
        )
    return out


#: Named starting points for `cotplan models train-thinking --preset`: "short" is the shipped
#: `local:thinking` (stage 1); "long" the long thinker. Its traces are 5-10 times longer, so
#: one trace a step already carries about as many tokens as the short preset's eight; and a
#: batch of one needs no padding mask, which keeps torch on its memory-saving attention kernel
#: (four padded traces of 2,700 tokens took over 22 GB and were killed).
PRESETS: dict[str, dict[str, object]] = {
    "short": {},
    "long": {
        "mix": dict(LONG_MIX),
        "recheck_to_settled": True,
        "examples": 700,
        "batch_size": 1,
        "learning_rate": 5e-4,
        "warmup_steps": 20,
    },
    # A second stage on top of "long" (with --resume): the first stage's uncapped accuracy was
    # lowest on addition and parity (benchmarks/results/long_thinker_count_3_families_addition_
    # parity.txt), so they get most of the fresh examples; count and find keep a share so the
    # stage does not forget them.
    "long-focus": {
        "mix": {
            "count": (0.15, 10, 80),
            "find": (0.15, 10, 80),
            "addition": (0.35, 10, 40),
            "parity": (0.35, 10, 60),
        },
        "recheck_to_settled": True,
        "examples": 600,
        "batch_size": 1,
        "learning_rate": 3e-4,
        "warmup_steps": 10,
    },
    # A third stage on top of "long-focus" (with --resume): long sums and long bit strings were
    # still the long thinker's misses (addition at n = 40 right 0 of 5 times, parity at n = 60
    # 2 of 5: benchmarks/results/long_thinker_count_5.txt). Their traces locate each next
    # number or bit by position among few distinct symbols, so this stage climbs to the longest
    # sizes gradually, on five times the examples of the stage before.
    "long-curriculum": {
        "mix": {
            "count": (0.1, 10, 80),
            "find": (0.1, 10, 80),
            "addition": (0.4, 10, 40),
            "parity": (0.4, 10, 60),
        },
        "recheck_to_settled": True,
        "curriculum": True,
        "examples": 3000,
        "batch_size": 1,
        "learning_rate": 3e-4,
        "warmup_steps": 20,
    },
}

#: Presets that train further an earlier stage's adapter and refuse to start without it.
RESUMING_PRESETS = ("long-focus", "long-curriculum")
