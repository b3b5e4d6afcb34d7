"""One path from k to request fields: what budgeted CoT sends under the reasoning cap is what
`request_fields` returns, in every mode; and how a native thinker's cut is forced in chat mode.

The double records each request's prompt and keyword fields (prompt shape and fields only); the
real embedded server is exercised in test_generate_budget_paths_model.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt, Usage
from cotplan.backends.budgets import prefill_fields, request_fields, resolve_rule, rule_for_model
from cotplan.generate import budgeted_answer
from cotplan.generate.budget_setup import resolve_mode
from cotplan.tasks import TaskItem

ITEM = TaskItem(id="q1", prompt="What is 3 + 4?", answer="7", kind="integer", n=2)


class _Recorder(Backend):
    """A model behind some provider: replies from a script, records every request."""

    supports_logprobs = False

    def __init__(
        self,
        model: str,
        provider: str,
        replies: Sequence[tuple[str, str] | Completion],
        *,
        text_completions: bool = False,
    ) -> None:
        self.model = model
        self.budget_rule = rule_for_model(provider, model).name
        self.text_completions = text_completions
        self.replies = list(replies)
        self.sent: list[tuple[Prompt, dict[str, Any]]] = []

    def generate(self, prompt: Prompt, *, max_tokens: int, **kw: Any) -> Completion:
        self.sent.append((prompt, {"max_tokens": max_tokens, **kw}))
        reply = self.replies.pop(0)
        if isinstance(reply, Completion):
            return reply
        text, finish = reply
        usage = Usage(prompt_tokens=10, completion_tokens=min(max_tokens, len(text.split()) + 1))
        return Completion(text, finish, usage, self.model)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


def _fields_sent(backend: _Recorder, request: int = 0) -> dict[str, Any]:
    """The fields a request carried, as an OpenAI-compatible client puts them on the wire:
    `max_tokens` under the rule's own cap field, the `extra` fields as they are."""
    _, kw = backend.sent[request]
    cap = resolve_rule(backend.budget_rule, backend.model).cap_parameter
    return {cap: kw["max_tokens"], **(kw.get("extra") or {})}


@pytest.mark.parametrize(
    ("model", "provider", "text_completions", "k", "mode", "replies"),
    [
        # template: the embedded model and vLLM serving a known template (two-phase).
        ("smollm2-135m-instruct", "llama.cpp", True, 24, "template", [("a b", "length")] * 2),
        ("Qwen/Qwen3-8B", "vllm", True, 24, "template", [("a b", "length")] * 2),
        # chat: OpenAI's chat models (two-phase), Claude under its budget floor (thinking off,
        # reasoning written out) and above it (one request, the budget and room for the answer).
        ("gpt-4o-mini", "openai", False, 24, "chat", [("a b", "length")] * 2),
        ("claude-3-7-sonnet", "anthropic", False, 300, "chat", [("a b", "length")] * 2),
        ("claude-3-7-sonnet", "anthropic", False, 2048, "chat", [("Answer: 7", "stop")]),
        # chat, one request under a server-side cap (vLLM, llama.cpp, SGLang, OpenRouter).
        ("Qwen/Qwen3-8B", "vllm-thinking", True, 64, "chat", [("Answer: 7", "stop")]),
        ("Qwen/Qwen3-8B", "llama.cpp-thinking", True, 64, "chat", [("Answer: 7", "stop")]),
        ("Qwen/Qwen3-8B", "sglang-thinking", False, 64, "chat", [("Answer: 7", "stop")]),
        ("deepseek/deepseek-r1", "openrouter", False, 64, "chat", [("Answer: 7", "stop")]),
        # hidden: OpenAI's reasoning models, xAI, DeepSeek's API.
        ("o4-mini", "openai", False, 500, "hidden", [("Answer: 7", "stop")]),
        ("gpt-5.1", "openai", False, 0, "hidden", [("Answer: 7", "stop")]),
        ("grok-4.5", "xai", False, 500, "hidden", [("Answer: 7", "stop")]),
        ("deepseek-reasoner", "deepseek", False, 500, "hidden", [("Answer: 7", "stop")]),
    ],
)
def test_the_reasoning_request_is_what_request_fields_returns(
    model: str,
    provider: str,
    *,
    text_completions: bool,
    k: int,
    mode: str,
    replies: list[tuple[str, str]],
) -> None:
    backend = _Recorder(model, provider, replies, text_completions=text_completions)
    assert resolve_mode(backend) == mode
    answer = budgeted_answer(backend, ITEM, k, answer_tokens=16, logprobs=False)
    expected = request_fields(provider, model, k, answer_tokens=16).params
    sent = _fields_sent(backend)
    assert set(sent) == set(expected)
    for name, value in expected.items():
        assert sent[name] == value, name
    assert answer.mode == mode
    # Every departure from k the request fields note is carried by the answer.
    for note in request_fields(provider, model, k, answer_tokens=16).notes:
        assert note in answer.budget_note


def test_a_server_side_cap_is_one_request_with_room_for_the_answer() -> None:
    backend = _Recorder("Qwen/Qwen3-8B", "vllm-thinking", [("Answer: 7", "stop")])
    answer = budgeted_answer(backend, ITEM, 64, answer_tokens=16, logprobs=False)
    assert _fields_sent(backend) == {"thinking_token_budget": 64, "max_tokens": 64 + 8 + 16}
    assert answer.path == "one-request"
    assert answer.calls == 1
    assert answer.correct


def test_a_native_thinkers_cut_is_forced_in_its_own_turn_where_the_server_continues_it() -> None:
    # vLLM and llama.cpp continue a final assistant message (continue_final_message).
    backend = _Recorder("my-r1", "vllm", [("I add 3 and", "length"), (" 7", "stop")])
    backend.protocol = "think"
    answer = budgeted_answer(backend, ITEM, 3, logprobs=False)
    forced, kw = backend.sent[1]
    # The thinking where thinking models' templates read it; the marker as the turn's content.
    assert forced == [
        {"role": "user", "content": "What is 3 + 4?"},
        {"role": "assistant", "reasoning_content": "I add 3 and", "content": "Answer:"},
    ]
    assert kw["extra"] == {"continue_final_message": True, "add_generation_prompt": False}
    assert kw["extra"] == prefill_fields("vllm")
    assert answer.forced
    assert answer.correct
    assert answer.reasoning == "I add 3 and"


def test_qwen3s_sentence_ends_a_cut_thought_in_a_continued_turn() -> None:
    backend = _Recorder("Qwen/Qwen3-8B", "vllm", [("Let me think", "length"), (" 7", "stop")])
    answer = budgeted_answer(backend, ITEM, 3, mode="chat", logprobs=False)
    turn = backend.sent[1][0][-1]
    assert turn == {
        "role": "assistant",
        "reasoning_content": "Let me think\n\nConsidering the limited time by the user, I have to "
        "give the solution based on the thinking directly now.",
        "content": "Answer:",
    }
    assert answer.correct


def test_where_no_server_continues_a_turn_one_user_turn_carries_the_thinking() -> None:
    # OpenAI's chat API has no prefill: no empty assistant turn plus a user turn (a thinking
    # model's template drops earlier thinking, and the answer came back empty).
    backend = _Recorder("gpt-4o-mini", "openai", [("I add 3 and", "length"), ("Answer: 7", "stop")])
    backend.protocol = "think"
    answer = budgeted_answer(backend, ITEM, 3, logprobs=False)
    forced, kw = backend.sent[1]
    assert forced == [
        {
            "role": "user",
            "content": "What is 3 + 4?\n\nYour reasoning so far:\nI add 3 and\n\n"
            'Stop reasoning now. Give only the final answer, after "Answer:".',
        }
    ]
    assert not kw.get("extra")
    assert answer.correct


def test_a_native_thinker_that_finished_in_time_is_not_asked_again() -> None:
    # A server with a reasoning parser returns the thinking apart; one without leaves it in.
    parsed = Completion(
        "Answer: 7", "stop", Usage(10, 9), "my-r1", reasoning="3 + 4 = 7", latency_s=0.5
    )
    for reply in (parsed, ("3 + 4 = 7\n</think>\n\nAnswer: 7", "stop")):
        backend = _Recorder("my-r1", "vllm", [reply])
        backend.protocol = "think"
        answer = budgeted_answer(backend, ITEM, 30, logprobs=False)
        assert answer.calls == 1
        assert answer.reasoning == "3 + 4 = 7"
        assert answer.answer_text == "Answer: 7"
        assert answer.correct


def test_the_plain_chat_path_is_unchanged() -> None:
    backend = _Recorder("gpt-4o-mini", "openai", [("3 + 4", "length"), ("Answer: 7", "stop")])
    budgeted_answer(backend, ITEM, 3, logprobs=False)
    forced, _ = backend.sent[1]
    assert forced == [
        {
            "role": "user",
            "content": "What is 3 + 4?\n"
            'Think step by step, then give the final answer after "Answer:".',
        },
        {"role": "assistant", "content": "3 + 4"},
        {
            "role": "user",
            "content": 'Stop reasoning now. Give only the final answer, after "Answer:".',
        },
    ]
