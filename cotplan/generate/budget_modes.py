"""The requests of one budgeted answer, by mode: template, chat (two-phase or one request) and
hidden reasoning. Each function ends in one `Exchange`, turned into the `BudgetedAnswer` by
`Exchange.to_answer` (`cotplan.generate.answer_record`).

The request under the reasoning cap always carries the fields `BudgetSetup.fields(k)` gives,
which are `cotplan.backends.budgets.request_fields`'s for the backend: a plain `max_tokens` of
k where cotplan cuts the thinking itself (two-phase), the server's or provider's own cap with
room for the answer where it caps the thinking inside one request.
"""

from __future__ import annotations

import re
from typing import Any

from cotplan.backends.base import Completion, Message, Prompt
from cotplan.backends.budgets import BudgetParams, prefill_fields
from cotplan.errors import InputError
from cotplan.generate.answer_record import BudgetedAnswer, Exchange
from cotplan.generate.budget_setup import BudgetSetup, item_messages, joiner
from cotplan.generate.protocols import split_reasoning

__all__ = ["chat_answer", "chat_run", "hidden_answer", "reasoning_call", "template_answer"]


def _send(
    s: BudgetSetup,
    prompt: Prompt,
    fields: BudgetParams,
    *,
    stop: list[str] | None = None,
    logprobs: int = 0,
) -> Completion:
    """The request under the reasoning cap, with exactly `fields` (the generation cap and every
    other field). A rule that caps no total (Gemini's budget or level) still needs a cap for
    `Backend.generate`: the budget plus the answer's room."""
    cap = fields.max_tokens if fields.max_tokens is not None else fields.cap + s.answer_tokens
    return s.backend.generate(
        prompt,
        max_tokens=max(cap, 1),
        stop=stop,
        logprobs=logprobs,
        extra=fields.extra or None,
        **s.sampling(),
    )


def _ask(s: BudgetSetup, prompt: Prompt, **options: Any) -> Completion:
    """A request for the answer alone, under `answer_tokens`."""
    return s.backend.generate(prompt, max_tokens=s.answer_tokens, **s.sampling(), **options)


# -- template mode ------------------------------------------------------------------------------


def reasoning_call(s: BudgetSetup, k: int) -> Completion:
    """The template mode's reasoning request: the written-out template and the protocol's lead,
    capped at k, stopped where the model ends its thinking."""
    return _send(
        s, s.reasoning_prefix, s.fields(k), stop=s.reasoning_stop, logprobs=s.reasoning_top
    )


def template_answer(s: BudgetSetup, k: int, reasoning: Completion | None) -> BudgetedAnswer:
    """Close the reasoning (if any) with the protocol's closer and the marker, and ask for the
    answer alone in the same assistant turn."""
    words = s.prompt
    if reasoning is None:
        # A native thinker at k = 0 gets an empty thinking block, as Qwen3 writes one when
        # thinking is off.
        empty = words.lead + words.close if words.close else ""
        prompt = s.direct_prefix + empty + words.marker
    else:
        prompt = s.reasoning_prefix + _closed(s, reasoning.text, cut=reasoning.truncated)
    answer = _ask(s, prompt, stop=s.answer_stop, logprobs=s.top)
    used = reasoning.usage.completion_tokens if reasoning is not None else 0
    exchange = Exchange(reasoning, answer, answer.text, used, prefilled=True, answer_prompt=prompt)
    return exchange.to_answer(s, k)


def _closed(s: BudgetSetup, text: str, *, cut: bool) -> str:
    """The thinking, closed the protocol's way, and the answer marker after it."""
    words = s.prompt
    cut_note = words.cut_note if cut else ""
    if cut_note:  # Qwen's sentence brings its own line breaks
        closing = cut_note + words.close
    elif words.close and not words.break_before_close:
        closing = words.close
    else:
        closing = joiner(text) + words.close
    return text + closing + words.marker


# -- chat mode ------------------------------------------------------------------------------------


def chat_run(s: BudgetSetup, k: int) -> Completion:
    """The chat mode's reasoning request (two-phase): the question with the protocol's
    instruction, capped at k, with token strings where the backend has them (so that one run
    can be cut at every shorter budget, `cotplan.generate.budgeted.cut_chat_run`)."""
    messages = item_messages(s.item, s.prompt.instruction)
    return _send(s, messages, s.fields(k), logprobs=max(s.top, s.reasoning_top))


def chat_answer(s: BudgetSetup, k: int, reasoning: Completion | None = None) -> BudgetedAnswer:
    """Chat requests: one request where the server or provider caps the thinking itself,
    else the thinking capped at k as text and the answer forced after it (two-phase).

    `reasoning`: the thinking at k already in hand (a longer run cut at k), so only the
    answer is asked for."""
    fields = s.fields(k)
    if not fields.visible_reasoning:
        return _one_request(s, k, fields)
    if k == 0:
        answer = _ask(s, item_messages(s.item, s.prompt.direct), logprobs=s.top)
        return Exchange(None, answer, answer.text, 0, notes=fields.notes).to_answer(s, k)
    messages = item_messages(s.item, s.prompt.instruction)
    if reasoning is None:
        reasoning = chat_run(s, k)
    if s.native:
        return _native_chat(s, k, messages, reasoning, notes=fields.notes)
    marker = re.search(re.escape(s.prompt.marker), reasoning.text, re.IGNORECASE)
    used = reasoning.usage.completion_tokens
    if not reasoning.truncated and marker is not None:
        # The model answered inside its budget: no second request.
        answered = reasoning.text[marker.start() :]
        return Exchange(reasoning, None, answered, used, notes=fields.notes).to_answer(s, k)
    follow_up: list[Message] = [
        *messages,
        {"role": "assistant", "content": reasoning.text},
        {"role": "user", "content": s.prompt.force},
    ]
    answer = _ask(s, follow_up, logprobs=s.top)
    return Exchange(reasoning, answer, answer.text, used, notes=fields.notes).to_answer(s, k)


def _native_chat(
    s: BudgetSetup,
    k: int,
    messages: list[Message],
    reasoning: Completion,
    *,
    notes: tuple[str, ...],
) -> BudgetedAnswer:
    """A native thinker over chat requests, its thinking cut by cotplan at k.

    Its thinking comes back apart (a reasoning parser) or in the text. Finished inside the
    budget, the text after the closer is its answer. Cut, the thinking is closed the protocol's
    way and the answer forced in the same assistant turn, where the server continues a final
    assistant message (`prefill_fields`); elsewhere one user turn carries the question, the
    thinking so far and the request for the answer, since chat templates of thinking models
    drop earlier thinking from assistant turns (the empty answer an assistant turn plus a user
    turn gave on a vLLM-like server).
    """
    thinking, answer_text = reasoning.reasoning, reasoning.text
    if not thinking:
        thinking, answer_text = split_reasoning(reasoning.text, s.prompt)
    used = reasoning.usage.completion_tokens
    if not reasoning.truncated:
        finished = Exchange(reasoning, None, answer_text, used, thinking=thinking, notes=notes)
        return finished.to_answer(s, k)
    if not thinking:  # cut before the closer: all the text so far is thinking
        thinking = reasoning.text.removeprefix(s.prompt.lead.strip()).lstrip()
    prefill = prefill_fields(s.rule)
    if prefill is not None:
        # The thinking goes in `reasoning_content`, where thinking models' chat templates read
        # an assistant turn's thinking: they write it inside their own opener and closer
        # (llama.cpp renders exactly `<think>\n{thinking}\n</think>\n\n{content}`), while
        # a `<think>` block written into the content gets an empty block put before it.
        cut_note = s.prompt.cut_note.rstrip("\n")
        turn: Message = {
            "role": "assistant",
            "reasoning_content": thinking.rstrip() + cut_note,
            "content": s.prompt.marker,
        }
        answer = _ask(s, [*messages, turn], stop=["\n"], logprobs=s.top, extra=prefill)
        text = _continuation(s, answer)
        exchange = Exchange(
            reasoning, answer, text, used, prefilled=True, thinking=thinking, notes=notes
        )
        return exchange.to_answer(s, k)
    asked = f"{_question(s)}\n\nYour reasoning so far:\n{thinking}\n\n{s.prompt.force}"
    answer = _ask(s, [*messages[:-1], {"role": "user", "content": asked}], logprobs=s.top)
    forced = Exchange(reasoning, answer, answer.text, used, thinking=thinking, notes=notes)
    return forced.to_answer(s, k)


def _continuation(s: BudgetSetup, answer: Completion) -> str:
    """What the model wrote after the prefilled turn. vLLM returns only that; the llama.cpp
    build behind the embedded model sends the whole turn back (which the client splits into
    thinking and text), so the marker in front is dropped."""
    text = answer.text.lstrip()
    if answer.reasoning and text.startswith(s.prompt.marker):
        return text[len(s.prompt.marker) :]
    return answer.text


def _question(s: BudgetSetup) -> str:
    last = item_messages(s.item, s.prompt.instruction)[-1]
    return str(last["content"])


def _one_request(s: BudgetSetup, k: int, fields: BudgetParams) -> BudgetedAnswer:
    """One chat request under the server's or provider's own thinking cap, with room for the
    answer; then whether the cap held and whether the answer survived it (`check_cap`)."""
    text = s.prompt.instruction if s.native else s.prompt.direct
    reply = _send(s, item_messages(s.item, text), fields)
    thinking, answer_text = reply.reasoning, reply.text
    if not thinking and s.native:
        thinking, answer_text = split_reasoning(reply.text, s.prompt)
    used, note = _thinking_tokens(s, reply, thinking, answer_text)
    exchange = Exchange(
        reply,
        None,
        answer_text,
        used,
        answer_tokens=max(0, reply.usage.completion_tokens - used),
        thinking=thinking,
        truncated=_cut_by_cap(used, fields.cap, counted=not reply.usage.reasoning_tokens),
        one_request=True,
        checked=True,
        notes=(*fields.notes, note) if note else fields.notes,
    )
    return exchange.to_answer(s, k)


#: Thinking tokens a server-side cap counts that the thinking it returns no longer holds: the
#: line breaks its reasoning parser strips from both ends (the one after ``<think>``, and one
#: where the cap fell). A thought cut at k and counted from its text holds k - 2 to k tokens
#: (llama.cpp's `thinking_budget_tokens`: tests/test_generate_server_cap_model.py).
_STRIPPED_TOKENS = 2


def _cut_by_cap(used: int, cap: int, *, counted: bool) -> bool:
    """Whether the server's cap ended the thinking: it used the whole budget, to within the
    stripped line breaks where the count comes from the text, not the server's usage."""
    if cap <= 0:
        return False
    return used >= cap - (_STRIPPED_TOKENS if counted else 0)


def _thinking_tokens(
    s: BudgetSetup, reply: Completion, thinking: str, answer_text: str
) -> tuple[int, str]:
    """The reply's thinking tokens: the server's count, else the model's tokenizer on the
    thinking text, else (no tokenizer known) the reply's tokens shared by characters, with a
    note that says it is an estimate."""
    if reply.usage.reasoning_tokens or not thinking:
        return reply.usage.reasoning_tokens, ""
    try:
        return s.backend.count_tokens(thinking), ""
    except InputError:
        share = len(thinking) / (len(thinking) + len(answer_text))
        estimate = round(reply.usage.completion_tokens * share)
        return estimate, (
            f"the server reported no reasoning tokens and {s.backend.model}'s tokenizer is not "
            f"known: {estimate} reasoning tokens is the reply's share by characters"
        )


# -- hidden reasoning ---------------------------------------------------------------------------


def hidden_answer(s: BudgetSetup, k: int) -> BudgetedAnswer:
    """One request whose cap covers hidden reasoning and the answer (`budget_params`: the cap
    under the rule's own field name, and the effort level, so the model also aims low, not
    only stops early); when the cap ran out inside the hidden reasoning, once more for the
    answer alone."""
    messages = item_messages(s.item, s.prompt.direct)
    fields = s.fields(k)
    reply = _send(s, messages, fields)
    hidden = reply.usage.reasoning_tokens
    if reply.text.strip():
        visible = reply.usage.completion_tokens - hidden
        exchange = Exchange(
            reply,
            None,
            reply.text,
            hidden,
            answer_tokens=visible,
            one_request=True,
            notes=fields.notes,
        )
        return exchange.to_answer(s, k)
    # The thinking is lost with the cut: ask for the answer alone, with the smallest cap.
    retry = _ask(s, [*messages, {"role": "user", "content": s.prompt.force}])
    spent = hidden + retry.usage.reasoning_tokens
    again = Exchange(reply, retry, retry.text, spent, one_request=True, notes=fields.notes)
    return again.to_answer(s, k)
