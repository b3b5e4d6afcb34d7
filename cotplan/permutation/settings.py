"""How a permutation-averaged answer is taken: `AveragingSettings`, one checked record.

`permutation_average` takes these as keyword arguments and builds the record;
`average_orderings` takes the record itself, so a caller that averages many queries the same way
builds it once. Every field is checked when the record is made, and a bad one is refused by name
before any request (see `cotplan.permutation.average.permutation_average` for what each means).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from cotplan.errors import InputError
from cotplan.generate.budgeted import CoTPrompt
from cotplan.permutation.fewshot import DEFAULT_TEMPLATE, FewShotTemplate
from cotplan.permutation.schedules import Schedule, check_schedule
from cotplan.validation import require_int, require_unit

__all__ = ["AveragingSettings"]

Method = Literal["auto", "logprobs", "sampled"]
IntervalChoice = Literal["auto", "orderings", "cycles"]


@dataclass(frozen=True)
class AveragingSettings:
    """Everything about an average except the backend, the examples, the query and the choices.

    Checked and normalised when made (`template` None becomes the default template, numbers
    become floats); the fields mean what `permutation_average`'s parameters of the same names
    do. `bands` is checked with the orderings, which need the number of examples.
    """

    m: int = 20
    schedule: Schedule = "balanced"
    seed: int = 0
    bands: int | tuple[int, ...] | None = None
    template: FewShotTemplate = DEFAULT_TEMPLATE
    method: Method = "auto"
    samples: int = 8
    temperature: float = 1.0
    smoothing: float = 1.0
    max_answer_tokens: int | None = None
    target_width: float | None = None
    stop_when_settled: bool = False
    min_m: int | None = None
    check_every: int | None = None
    confidence: float = 0.95
    interval: IntervalChoice = "auto"
    concurrency: int | None = None
    k: int | None = None
    answer_tokens: int = 16
    cot_prompt: CoTPrompt | None = None

    def __post_init__(self) -> None:
        # The checks run in the order the parameters are documented, so the first bad one is
        # the one named.
        self._set("m", require_int(self.m, "m", low=1))
        self._set("schedule", check_schedule(self.schedule))
        self._set("seed", int(require_int(self.seed, "seed", low=0)))
        template = DEFAULT_TEMPLATE if self.template is None else self.template
        if not isinstance(template, FewShotTemplate):
            raise InputError(f"must be a FewShotTemplate, got {template!r}", field="template")
        self._set("template", template)
        if self.method not in ("auto", "logprobs", "sampled"):
            raise InputError(
                f"must be auto, logprobs or sampled, got {self.method!r}", field="method"
            )
        self._check_sampling()
        self._set("confidence", require_unit(self.confidence, "confidence"))
        if self.target_width is not None:
            width = require_unit(self.target_width, "target_width", closed_high=True)
            self._set("target_width", width)
        if self.interval not in ("auto", "orderings", "cycles"):
            raise InputError(
                f"must be auto, orderings or cycles, got {self.interval!r}", field="interval"
            )
        if self.k is not None:
            self._set("k", require_int(self.k, "k", low=0))
            if self.method != "auto":
                raise InputError(
                    f"must be auto with budgeted reasoning (k = {self.k}): the backend decides "
                    f"how the answer after the reasoning is scored, not {self.method}",
                    field="method",
                )
        self._set("answer_tokens", require_int(self.answer_tokens, "answer_tokens", low=1))
        if self.check_every is not None:
            self._set("check_every", require_int(self.check_every, "check_every", low=1))
        if self.min_m is not None:
            self._set("min_m", require_int(self.min_m, "min_m", low=2))
        if isinstance(self.bands, list):
            self._set("bands", tuple(self.bands))

    def _check_sampling(self) -> None:
        self._set("samples", require_int(self.samples, "samples", low=1))
        temperature = self.temperature
        if not isinstance(temperature, int | float) or not 0.0 < temperature <= 2.0:
            raise InputError(
                f"must be in (0, 2] for sampling, got {temperature!r}", field="temperature"
            )
        self._set("temperature", float(temperature))
        smoothing = self.smoothing
        if not isinstance(smoothing, int | float) or not 0.0 <= smoothing < math.inf:
            raise InputError(f"must be a number >= 0, got {smoothing!r}", field="smoothing")
        self._set("smoothing", float(smoothing))
        if self.max_answer_tokens is not None:
            tokens = require_int(self.max_answer_tokens, "max_answer_tokens", low=1)
            self._set("max_answer_tokens", tokens)

    def _set(self, name: str, value: object) -> None:
        # A frozen record normalises its own fields once, while it is being made.
        object.__setattr__(self, name, value)

    @property
    def adaptive(self) -> bool:
        """Whether the average may stop before `m` orderings."""
        return self.target_width is not None or bool(self.stop_when_settled)
