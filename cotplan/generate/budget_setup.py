"""How budgeted CoT drives one backend: the mode, the protocol's words, and the request fields.

`resolve_mode` picks the mode (template, chat or hidden; see `cotplan.generate.budgeted`);
`BudgetSetup` holds everything one item's requests share, built once by `budget_setup`. The
request fields for a budget k come from `cotplan.backends.budgets.budget_params` and nowhere
else (`BudgetSetup.fields`), so what budgeted CoT sends is what `request_fields` says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cotplan.backends.base import Backend, Message
from cotplan.backends.budgets import BudgetParams, BudgetRule, budget_params, rule_for
from cotplan.errors import InputError
from cotplan.generate.prompts import ChatTemplate, CoTPrompt, template_for
from cotplan.generate.protocols import protocol_for, resolve_protocol
from cotplan.tasks.item import TaskItem
from cotplan.tasks.size import item_size
from cotplan.validation import BUDGET, validate_params

__all__ = [
    "BudgetSetup",
    "Mode",
    "budget_setup",
    "driven_as",
    "item_messages",
    "joiner",
    "resolve_mode",
]

Mode = Literal["template", "chat", "hidden"]


def _server_caps(rule: BudgetRule) -> bool:
    """The rule caps the thinking inside the request (a server-side cap, a provider's thinking
    budget or level), so the answer comes in the same reply: only over chat requests, since
    servers split the thinking from the answer only there."""
    return rule.covers == "reasoning" and rule.shape != "output"


def resolve_mode(backend: Backend, mode: Mode | Literal["auto"] = "auto") -> Mode:
    """The way `backend` is driven: an explicit `mode`, else hidden reasoning for reasoning
    models, chat requests where the server caps the thinking itself, the written-out template
    for text-completion endpoints with a known template, and chat turns otherwise."""
    if mode != "auto":
        if mode not in ("template", "chat", "hidden"):
            raise InputError(
                f"must be 'auto', 'template', 'chat' or 'hidden', got {mode!r}", field="mode"
            )
        if mode == "template" and template_for(backend.model) is None:
            raise InputError(
                f"no chat template known for {backend.model!r}; use mode='chat'", field="mode"
            )
        if mode == "template" and _server_caps(rule_for(backend)):
            raise InputError(
                f"{backend.budget_rule!r} caps the thinking on chat requests only; use mode='chat'",
                field="mode",
            )
        return mode
    rule = rule_for(backend)
    if rule.covers == "reasoning+output":
        return "hidden"
    if _server_caps(rule):
        return "chat"
    if backend.text_completions and template_for(backend.model) is not None:
        return "template"
    return "chat"


def driven_as(backend: Backend) -> str:
    """How budgeted CoT drives `backend`, in words for a report line: the mode and protocol
    chosen for it (``mode template, protocol think``)."""
    return f"mode {resolve_mode(backend)}, protocol {protocol_for(backend)}"


def item_messages(item: TaskItem, text: str) -> list[Message]:
    """The item's prompt with `text` added to its last user message (if any text)."""
    if not text:
        if isinstance(item.prompt, str):
            return [{"role": "user", "content": item.prompt}]
        return [dict(m) for m in item.prompt]
    if isinstance(item.prompt, str):
        return [{"role": "user", "content": f"{item.prompt}\n{text}"}]
    messages = [dict(m) for m in item.prompt]
    for message in reversed(messages):
        if message["role"] == "user":
            message["content"] = f"{message['content']}\n{text}"
            return messages
    return [*messages, {"role": "user", "content": text}]


def joiner(reasoning: str) -> str:
    """What goes between the reasoning and the answer marker: nothing after whitespace (where
    the model itself stopped to write the marker), else a line break."""
    return "" if not reasoning or reasoning[-1].isspace() else "\n"


@dataclass(frozen=True)
class BudgetSetup:
    """What every request for one item shares (built once by `budget_setup`)."""

    backend: Backend
    item: TaskItem
    mode: Mode
    protocol: str
    prompt: CoTPrompt
    template: ChatTemplate | None
    rule: BudgetRule
    answer_tokens: int
    temperature: float
    seed: int | None
    logprobs: bool
    n: int

    def fields(self, k: int) -> BudgetParams:
        """The request fields for budget `k`: `budget_params` under the backend's rule (its
        variant for this model), the same as `request_fields` for the backend's provider."""
        return budget_params(
            self.rule, k, answer_tokens=self.answer_tokens, model=self.backend.model
        )

    def sampling(self) -> dict[str, Any]:
        """The sampling fields every request of this item sends."""
        return {"temperature": self.temperature, "seed": self.seed}

    @property
    def native(self) -> bool:
        """The protocol is a model's own way of thinking (it has a closer), not cotplan's
        "think step by step" wording."""
        return bool(self.prompt.close)

    @property
    def direct_prefix(self) -> str:
        assert self.template is not None
        return self.template.render(item_messages(self.item, self.prompt.instruction))

    @property
    def reasoning_prefix(self) -> str:
        return self.direct_prefix + self.prompt.lead

    @property
    def reasoning_stop(self) -> list[str]:
        # A native thinker says it has finished by closing its thinking; it may well write
        # "Answer:" inside its thoughts, so only the close ends the phase.
        stops = [self.prompt.thinking_stop]
        if self.template is not None:
            stops.append(self.template.end)
        return stops

    @property
    def answer_stop(self) -> list[str]:
        stops = ["\n"]
        if self.template is not None:
            stops.append(self.template.end)
        return stops

    @property
    def top(self) -> int:
        """Alternatives asked for in the answer phase (for `answer_prob`)."""
        return 1 if self.logprobs and self.backend.supports_logprobs else 0

    @property
    def reasoning_top(self) -> int:
        """The reasoning phase always asks for token strings where it can: they let one run
        serve several budgets, and one cache entry serve `budgeted_answer` and
        `budgeted_answers` alike."""
        return 1 if self.backend.supports_logprobs else 0


@validate_params(answer_tokens=BUDGET)
def budget_setup(
    backend: Backend,
    item: TaskItem,
    *,
    mode: Mode | Literal["auto"],
    protocol: str,
    prompt: CoTPrompt | None,
    answer_tokens: int,
    temperature: float,
    seed: int | None,
    logprobs: bool,
) -> BudgetSetup:
    """Check the arguments once and build the `BudgetSetup` of one item."""
    if not isinstance(item, TaskItem):
        raise InputError(f"must be a TaskItem, got {type(item).__name__}", field="item")
    if answer_tokens < 1:
        raise InputError("must be at least 1", field="answer_tokens")
    chosen = resolve_mode(backend, mode)
    protocol_name, protocol_prompt = resolve_protocol(backend, protocol)
    return BudgetSetup(
        backend=backend,
        item=item,
        mode=chosen,
        protocol=protocol_name if prompt is None else "custom",
        prompt=prompt or protocol_prompt,
        template=template_for(backend.model) if chosen == "template" else None,
        rule=rule_for(backend),
        answer_tokens=answer_tokens,
        temperature=temperature,
        seed=seed,
        logprobs=logprobs,
        n=item_size(item, counter=backend.count_tokens),
    )
