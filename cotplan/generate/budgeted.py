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
request at the largest budget (or at `run_tokens`, the cap of an uncapped run) and cuts it at
each k by its token strings; the answer-phase requests are then exactly the ones
`budgeted_answer` would make (and share its cache entries). This holds in template mode and in
two-phase chat mode alike: in chat mode the thinking at k is the first k tokens of the run
(the raw tokens, split as the server splits them), and the answer at k is forced by continuing
the assistant turn after that prefix, so the thinking is generated once per item and every
other request generates an answer only. The reasoning latency of each shorter budget is the
long run's, pro-rated by tokens. A run whose token count the server did not send (or sent
unbelievably) serves no other budget: each budget is then asked on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from cotplan.backends.base import Backend, Completion
from cotplan.generate.answer_record import BudgetedAnswer, answer_probability, answers_frame
from cotplan.generate.budget_modes import (
    chat_answer,
    chat_run,
    hidden_answer,
    reasoning_call,
    template_answer,
)
from cotplan.generate.budget_setup import (
    BudgetSetup,
    Mode,
    budget_setup,
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
from cotplan.generate.protocols import split_reasoning
from cotplan.tasks.item import TaskItem
from cotplan.validation import BUDGET, BUDGETS, validate_params

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
    "cut_chat_run",
    "cut_run",
    "driven_as",
    "resolve_mode",
    "shares_one_run",
    "template_for",
    "thinking_length",
    "thinking_run",
]


@validate_params(k=BUDGET, answer_tokens=BUDGET)
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
    if tokens is None or "".join(t.token for t in tokens) != run.text:
        return None
    fraction = k / used if used else 0.0
    if len(tokens) <= k:
        # The cap falls inside the stop string (generated, never returned): the thinking is
        # whole, and only its own close was cut.
        return replace(
            run,
            finish_reason="length",
            usage=replace(run.usage, completion_tokens=k),
            latency_s=run.latency_s * fraction,
        )
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


def cut_chat_run(run: Completion, k: int, s: BudgetSetup) -> Completion | None:
    """The chat reply capped at `k` tokens, from a greedy chat run capped higher (None: its
    token strings do not spell what the server returned, so the cut cannot be trusted).

    The token strings are the raw output (a native thinker's opener, thinking, closer and
    answer; a reasoning parser splits them only in the reply's fields), so the first k of them
    are split the way the server splits a reply cut at k: before the closer all of it is
    thinking, after it the rest is answer text."""
    if not s.native or not run.reasoning:
        return cut_run(run, k)
    used = run.usage.completion_tokens
    if k >= used:
        return run
    tokens = run.logprobs
    if tokens is None or len(tokens) < k:
        return None
    whole = _split_raw("".join(t.token for t in tokens), s)
    if whole != (run.reasoning.strip(), run.text.strip()):
        return None
    thinking, text = _split_raw("".join(t.token for t in tokens[:k]), s)
    return replace(
        run,
        text=text,
        reasoning=thinking,
        finish_reason="length",
        usage=replace(
            run.usage,
            completion_tokens=k,
            reasoning_tokens=min(run.usage.reasoning_tokens, k),
        ),
        logprobs=tuple(tokens[:k]),
        latency_s=run.latency_s * (k / used if used else 0.0),
    )


def _split_raw(raw: str, s: BudgetSetup) -> tuple[str, str]:
    """(thinking, answer) of a native thinker's raw output: up to the closer all of it is
    thinking (the opener dropped), as a reasoning parser files a reply cut mid-thought."""
    if s.prompt.thinking_stop in raw:
        return split_reasoning(raw, s.prompt)
    opener = s.prompt.lead.strip()
    return raw.strip().removeprefix(opener).strip(), ""


def shares_one_run(s: BudgetSetup) -> bool:
    """Whether one greedy run can serve every budget of the item: template mode, or two-phase
    chat mode (cotplan cuts the thinking, not the server), with token strings to cut by."""
    if s.temperature != 0.0 or s.reasoning_top == 0:
        return False
    if s.mode == "template":
        return True
    return s.mode == "chat" and s.fields(1).visible_reasoning


def thinking_run(s: BudgetSetup, tokens: int) -> Completion:
    """The item's one reasoning run, capped at `tokens` (the mode's own reasoning request)."""
    return reasoning_call(s, tokens) if s.mode == "template" else chat_run(s, tokens)


def thinking_length(run: Completion, s: BudgetSetup) -> int:
    """How many tokens the run thought before it ended its thinking (or was cut): the
    server's reasoning count where it reports one, else the token strings up to the closer,
    else every generated token (template mode stops at the closer)."""
    if run.usage.reasoning_tokens:
        return run.usage.reasoning_tokens
    if s.mode == "template" or not s.native:
        # Not the stop string's tokens, which the server generated but does not return.
        spelled = run.logprobs is not None and "".join(t.token for t in run.logprobs) == run.text
        return len(run.logprobs or ()) if spelled else run.usage.completion_tokens
    tokens = run.logprobs or ()
    closer = s.prompt.thinking_stop
    text = ""
    for i, token in enumerate(tokens):
        text += token.token
        if closer in text:
            return i
    return run.usage.completion_tokens if not run.text.strip() else len(tokens)


@validate_params(budgets=BUDGETS, answer_tokens=BUDGET, run_tokens=BUDGET)
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
    run_tokens: int | None = None,
    run: Completion | None = None,
) -> list[BudgetedAnswer]:
    """`budgeted_answer` at every budget, in the order given.

    With greedy decoding (temperature 0), token strings available, and cotplan cutting the
    thinking (template mode, or two-phase chat), one reasoning request serves every budget (see
    the module docstring): at `run_tokens` (default: the largest budget; give the cap of an
    uncapped run to make that run the one), or `run`, that request's reply already in hand.
    Otherwise each budget is answered on its own.
    """
    ks = list(budgets)  # declared BUDGETS: checked, as ints
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

    top = max(ks) if run_tokens is None else max(max(ks), run_tokens)
    if not shares_one_run(s) or top == 0:
        return [alone(k, s.mode) for k in ks]
    if run is None:
        run = thinking_run(s, top)
    out: list[BudgetedAnswer] = []
    for k in ks:
        if s.mode == "template":
            if k == 0:
                out.append(template_answer(s, 0, None))
                continue
            cut = cut_run(run, k)
            # Token strings that do not spell the text: make the capped call itself.
            out.append(alone(k, "template") if cut is None else template_answer(s, k, cut))
            continue
        if k == 0:
            out.append(chat_answer(s, 0))
            continue
        piece = cut_chat_run(run, k, s)
        out.append(alone(k, "chat") if piece is None else chat_answer(s, k, piece))
    return out
