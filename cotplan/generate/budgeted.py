"""Budgeted chain of thought: reason for at most k tokens, then answer.

`budgeted_answer(backend, item, k)` asks the question with a "think step by step" instruction,
lets the model reason for at most `k` tokens, and then gets the final answer:

1. Reasoning phase: one request capped at `k` tokens that stops where the model writes its
   answer marker ("Answer:").
2. Answer phase: the reasoning so far, closed with the marker, and a short request (at most
   `answer_tokens`) for the answer alone. When the cap cut the reasoning, this is the forced
   answer: the model must answer with what it has.

k = 0 skips the reasoning phase: the answer marker follows the question directly.

How the answer phase continues the reasoning depends on the backend:

- ``"template"``: a text-completion endpoint (the embedded llama.cpp model, vLLM) with a known
  chat template. The template is written out and the assistant turn is continued exactly, so the
  answer phase sees the reasoning verbatim and ends in the same turn.
- ``"chat"``: chat-only APIs (OpenAI's chat models) and servers that cap the thinking
  themselves. Where the server or provider caps the thinking inside the request (vLLM's
  `thinking_token_budget`, llama.cpp's `thinking_budget_tokens`, SGLang's `thinking_budget`,
  OpenRouter's `reasoning.max_tokens`, Claude's and Gemini's thinking fields), one request
  carries the cap and room for the answer, and the reply is checked: did the cap hold, did the
  answer survive it (a reply cut at its cap with no answer is `answer_lost`, reported, never
  scored as a wrong answer). Elsewhere the reasoning phase is one assistant turn; if the model
  did not answer within it, the answer is forced: for a native thinker by continuing its own
  assistant turn after the closed thinking where the server allows (vLLM's and llama.cpp's
  `continue_final_message`), else by one user turn that carries the thinking so far; for
  cotplan's plain wording by a second user turn.
- ``"hidden"``: reasoning models whose thinking is hidden (OpenAI's o-series): one request whose
  cap covers reasoning and answer, and the reasoning tokens come from the usage.

In every mode the request under the reasoning cap carries exactly the fields
`cotplan.backends.budgets.request_fields` gives for the backend's rule and model (the one place
where k becomes request fields); the modes live in `cotplan.generate.budget_modes`, the record
of an answer in `cotplan.generate.answer_record`.

Token accounting. `reasoning_tokens` are the tokens generated under the reasoning cap (so never
more than k when the provider keeps to it: `cap_held`); `answer_tokens` those of the answer
phase; `prompt_tokens` the prompt tokens of every request (the answer phase sends the reasoning
back as prompt); `question_tokens` the prompt of the first request alone. `cost_usd` is the list
price of all requests by `cotplan.pricing` (NaN, with `cost_note`, when the model has no price),
also for answers the call cache replayed (`from_cache` says those cost nothing this time).

Several budgets from one run. With greedy decoding the first k tokens of a run capped at K > k
ARE the run capped at k, so `budgeted_answers(backend, item, budgets)` makes one reasoning
request at the largest budget and cuts it at each k by its token strings; the answer-phase
requests are then exactly the ones `budgeted_answer` would make (and share its cache entries).
The reasoning latency of each shorter budget is the long run's, pro-rated by tokens. A run
whose token count the server did not send (or sent unbelievably) serves no other budget: each
budget is then asked on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from cotplan.backends.base import Backend, Completion
from cotplan.errors import InputError
from cotplan.generate.answer_record import BudgetedAnswer, answer_probability, answers_frame
from cotplan.generate.budget_modes import (
    chat_answer,
    hidden_answer,
    reasoning_call,
    template_answer,
)
from cotplan.generate.budget_setup import (
    Mode,
    budget_setup,
    check_budget,
    driven_as,
    item_messages,
    joiner,
    resolve_mode,
)
from cotplan.generate.prompts import (
    CHAT_TEMPLATES,
    DEFAULT_PROMPT,
    ChatTemplate,
    CoTPrompt,
    template_for,
)
from cotplan.tasks.item import TaskItem

# The old private names, for code written before the split (generate/probing.py reads them);
# new code imports them from their modules under their public names.
_answer_probability = answer_probability
_messages = item_messages
_joiner = joiner

__all__ = [
    "CHAT_TEMPLATES",
    "DEFAULT_PROMPT",
    "BudgetedAnswer",
    "ChatTemplate",
    "CoTPrompt",
    "Mode",
    "answers_frame",
    "budgeted_answer",
    "budgeted_answers",
    "driven_as",
    "resolve_mode",
    "template_for",
]


def budgeted_answer(
    backend: Backend,
    item: TaskItem,
    k: int,
    *,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    protocol: str = "auto",
    prompt: CoTPrompt | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    logprobs: bool = True,
) -> BudgetedAnswer:
    """Answer `item` after at most `k` reasoning tokens (see the module docstring).

    `answer_tokens` caps the answer phase. `mode` is "auto" (chosen by `resolve_mode`),
    "template", "chat" or "hidden". `protocol` is how the thinking is opened and closed
    (`cotplan.generate.protocols`; "auto": the model registry's for the model); an explicit
    `prompt` replaces the protocol's words. `logprobs` asks for token probabilities where the
    backend has them (used for `answer_prob`).
    """
    k = check_budget(k)
    s = budget_setup(
        backend,
        item,
        mode=mode,
        protocol=protocol,
        prompt=prompt,
        answer_tokens=answer_tokens,
        temperature=temperature,
        seed=seed,
        logprobs=logprobs,
    )
    if s.mode == "chat":
        return chat_answer(s, k)
    if s.mode == "hidden":
        return hidden_answer(s, k)
    if k == 0:
        return template_answer(s, 0, None)
    return template_answer(s, k, reasoning_call(s, k))


def cut_run(run: Completion, k: int) -> Completion | None:
    """The run capped at `k` tokens, from a greedy run capped higher (None: cannot tell)."""
    used = run.usage.known("completion_tokens")
    if used is None:
        # A server that sent no (or no believable) count: whether the run is longer than k is
        # unknown, and taking its 0 as real would hand every budget the whole long thought.
        return None
    if k >= used:
        return run
    tokens = run.logprobs
    if tokens is None or len(tokens) < k or "".join(t.token for t in tokens) != run.text:
        return None
    fraction = k / used if used else 0.0
    # `replace` keeps what the cut does not change: whether the usage can be trusted, the
    # call's notes, `no_answer`, the model and `from_cache`.
    return replace(
        run,
        text="".join(t.token for t in tokens[:k]),
        finish_reason="length",
        usage=replace(
            run.usage,
            completion_tokens=k,
            reasoning_tokens=min(run.usage.reasoning_tokens, k),
        ),
        logprobs=tuple(tokens[:k]),
        latency_s=run.latency_s * fraction,
    )


def budgeted_answers(
    backend: Backend,
    item: TaskItem,
    budgets: Sequence[int],
    *,
    answer_tokens: int = 16,
    mode: Mode | Literal["auto"] = "auto",
    protocol: str = "auto",
    prompt: CoTPrompt | None = None,
    temperature: float = 0.0,
    seed: int | None = None,
    logprobs: bool = True,
) -> list[BudgetedAnswer]:
    """`budgeted_answer` at every budget, in the order given.

    In template mode with greedy decoding (temperature 0) and token strings available, one
    reasoning request at the largest budget serves every budget (see the module docstring);
    otherwise each budget is answered on its own.
    """
    ks = [check_budget(k, "budgets") for k in budgets]
    if not ks:
        raise InputError("must hold at least one budget", field="budgets")
    s = budget_setup(
        backend,
        item,
        mode=mode,
        protocol=protocol,
        prompt=prompt,
        answer_tokens=answer_tokens,
        temperature=temperature,
        seed=seed,
        logprobs=logprobs,
    )

    def alone(k: int, chosen: Mode) -> BudgetedAnswer:
        return budgeted_answer(
            backend,
            item,
            k,
            answer_tokens=answer_tokens,
            mode=chosen,
            protocol=protocol,
            prompt=prompt,
            temperature=temperature,
            seed=seed,
            logprobs=logprobs,
        )

    shared = s.mode == "template" and temperature == 0.0 and s.reasoning_top > 0 and max(ks) > 0
    if not shared:
        return [alone(k, s.mode) for k in ks]
    run = reasoning_call(s, max(ks))
    out: list[BudgetedAnswer] = []
    for k in ks:
        if k == 0:
            out.append(template_answer(s, 0, None))
            continue
        cut = cut_run(run, k)
        # Token strings that do not spell the text: make the capped call itself.
        out.append(alone(k, "template") if cut is None else template_answer(s, k, cut))
    return out
