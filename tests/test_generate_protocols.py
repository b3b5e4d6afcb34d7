"""Reasoning protocols: which words budgeted CoT writes around the thinking, and how it closes it.

The double records the prompts and stops it is sent (prompt shape only); the real thinking model
is exercised in test_thinking_model.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cotplan.backends import connect
from cotplan.backends.base import Backend, Completion, NextTokenProbs, Prompt, Usage
from cotplan.backends.known_models import PROTOCOL_NAMES
from cotplan.backends.openai_compat import parse_completion
from cotplan.errors import InputError
from cotplan.generate import budgeted_answer
from cotplan.generate.budgeted import driven_as
from cotplan.generate.protocols import PROTOCOLS, protocol_for, resolve_protocol, split_reasoning
from cotplan.tasks import TaskItem

ITEM = TaskItem(id="q1", prompt="What is 3 + 4?", answer="7", kind="integer", n=2)


class _Recorder(Backend):
    """A text-completion endpoint that replies from a script and records each request."""

    text_completions = True
    supports_logprobs = False

    def __init__(self, model: str, replies: list[tuple[str, str]]) -> None:
        self.model = model
        self.replies = list(replies)
        self.sent: list[tuple[Prompt, list[str]]] = []

    def generate(self, prompt: Prompt, *, max_tokens: int, **kw: Any) -> Completion:
        self.sent.append((prompt, list(kw.get("stop") or [])))
        text, finish = self.replies.pop(0)
        usage = Usage(prompt_tokens=10, completion_tokens=min(max_tokens, len(text.split())))
        return Completion(text, finish, usage, self.model)

    def next_token_probs(self, prompt: Prompt, candidates: Sequence[str]) -> NextTokenProbs:
        raise NotImplementedError


def test_the_registry_names_each_familys_protocol() -> None:
    assert protocol_for("smollm2-135m-instruct") == "plain"
    assert protocol_for("smollm2-135m-thinking@0123456789ab") == "think"
    assert protocol_for("Qwen/Qwen3-8B") == "qwen3"
    assert protocol_for("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B") == "think"
    assert protocol_for("my-team-model") == "plain"


def test_an_unknown_protocol_is_refused_by_field() -> None:
    with pytest.raises(InputError, match="protocol"):
        resolve_protocol("smollm2", "harmonica")


def test_a_cut_thought_is_closed_before_the_forced_answer() -> None:
    backend = _Recorder("smollm2-135m-thinking@x", [("I add 3 and", "length"), (" 7", "stop")])
    answer = budgeted_answer(backend, ITEM, 3, logprobs=False)
    (reasoning_prompt, reasoning_stops), (answer_prompt, _) = backend.sent
    assert isinstance(reasoning_prompt, str)
    assert isinstance(answer_prompt, str)
    assert reasoning_prompt.endswith("<|im_start|>assistant\n<think>\n")
    # The model ends its thinking with </think>; "Answer:" inside a thought must not stop it.
    assert reasoning_stops[0] == "</think>"
    assert "Answer:" not in reasoning_stops
    assert answer_prompt.endswith("I add 3 and\n</think>\n\nAnswer:")
    assert answer.protocol == "think"
    assert answer.forced
    assert answer.correct


def test_qwen3_writes_its_own_early_stop_sentence_only_at_a_cut() -> None:
    cut = _Recorder("qwen3-8b", [("Let me think", "length"), (" 7", "stop")])
    budgeted_answer(cut, ITEM, 3, logprobs=False)
    assert cut.sent[1][0].endswith(  # type: ignore[union-attr]
        "Let me think" + PROTOCOLS["qwen3"].cut_note + "</think>\n\nAnswer:"
    )
    finished = _Recorder("qwen3-8b", [("3 + 4 = 7.\n", "stop"), (" 7", "stop")])
    budgeted_answer(finished, ITEM, 30, logprobs=False)
    assert finished.sent[1][0].endswith("3 + 4 = 7.\n</think>\n\nAnswer:")  # type: ignore[union-attr]


def test_no_thinking_is_an_empty_think_block() -> None:
    backend = _Recorder("smollm2-135m-thinking@x", [(" 7", "stop")])
    budgeted_answer(backend, ITEM, 0, logprobs=False)
    assert backend.sent[0][0].endswith("<|im_start|>assistant\n<think>\n</think>\n\nAnswer:")  # type: ignore[union-attr]


def test_plain_protocol_is_unchanged() -> None:
    backend = _Recorder("smollm2-135m-instruct@x", [("3 + 4 = 7", "length"), (" 7", "stop")])
    answer = budgeted_answer(backend, ITEM, 3, logprobs=False)
    assert backend.sent[0][1][0] == "Answer:"
    assert backend.sent[1][0].endswith("3 + 4 = 7\nAnswer:")  # type: ignore[union-attr]
    assert answer.protocol == "plain"


def test_the_protocol_can_be_overridden() -> None:
    backend = _Recorder("my-team-model", [("hmm", "length"), (" 7", "stop")])
    with pytest.raises(InputError, match="template"):
        budgeted_answer(backend, ITEM, 3, protocol="think", mode="template", logprobs=False)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # vLLM >= 0.10 (docs/features/reasoning_outputs.md): message.reasoning
        ({"role": "assistant", "content": "7", "reasoning": "3+4"}, "3+4"),
        # llama.cpp server, SGLang and the DeepSeek API: reasoning_content
        ({"role": "assistant", "content": "7", "reasoning_content": "3+4"}, "3+4"),
        # Ollama's chat API: message.thinking
        ({"role": "assistant", "content": "7", "thinking": "3+4"}, "3+4"),
        ({"role": "assistant", "content": "7"}, ""),
    ],
)
def test_every_servers_reasoning_field_is_read(message: dict[str, str], expected: str) -> None:
    raw = {"choices": [{"message": message, "finish_reason": "stop"}], "usage": {}}
    completion = parse_completion(raw, model="m")
    assert completion.reasoning == expected
    assert completion.text == "7"


def test_every_protocol_the_registry_may_name_is_defined() -> None:
    assert set(PROTOCOLS) == set(PROTOCOL_NAMES)


def test_connect_sets_the_protocol_of_a_model_the_registry_does_not_know() -> None:
    backend = connect(
        "openai:my-team-model", base_url="http://127.0.0.1:9/v1", cache=None, protocol="think"
    )
    assert protocol_for(backend) == "think"
    # "my-team-model" has no known chat template, so it is driven in chat turns.
    assert driven_as(backend) == "mode chat, protocol think"
    with pytest.raises(InputError, match="protocol"):
        connect("openai:m", base_url="http://127.0.0.1:9/v1", cache=None, protocol="thunk")


@pytest.mark.parametrize(
    ("content", "thinking", "answer"),
    [
        ("<think>\n3 + 4 = 7\n</think>\n\nAnswer: 7", "3 + 4 = 7", "Answer: 7"),
        ("\n<think>a</think>b", "a", "b"),
        ("Answer: 7", "", "Answer: 7"),
        # An unclosed block is not split: the server cut the thinking, there is no answer.
        ("<think>\nstill going", "", "<think>\nstill going"),
    ],
)
def test_a_think_block_left_in_the_content_is_split_off(
    content: str, thinking: str, answer: str
) -> None:
    raw = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    completion = parse_completion(raw, model="m")
    assert completion.reasoning == thinking
    assert completion.text == answer


# -- harmony (gpt-oss) and Magistral ---------------------------------------------------------
# Sources, read 2026-12-01: openai/harmony docs/format.md (message format, the analysis and
# final channels, `<|end|>` between messages, `<|return|>` at the end, the system message);
# the model card of mistralai/Magistral-Small-2507 ([THINK] and [/THINK] special tokens) and
# its chat template (`[SYSTEM_PROMPT]...[/SYSTEM_PROMPT][INST]...[/INST]`).

_HARMONY_SYSTEM = (
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, "
    "final. Channel must be included for every message.<|end|>"
)


def test_gpt_oss_and_magistral_are_known_by_name() -> None:
    assert protocol_for("openai/gpt-oss-20b") == "harmony"
    assert protocol_for("gpt-oss-120b") == "harmony"
    assert protocol_for("mistralai/Magistral-Small-2507") == "magistral"
    assert protocol_for("magistral-medium-latest") == "magistral"


def test_harmony_thinks_in_the_analysis_channel_and_answers_in_the_final_one() -> None:
    backend = _Recorder(
        "openai/gpt-oss-20b", [("User asks 3 + 4. That is", "length"), (" 7", "stop")]
    )
    answer = budgeted_answer(backend, ITEM, 6, logprobs=False)
    (reasoning_prompt, reasoning_stops), (answer_prompt, answer_stops) = backend.sent
    assert reasoning_prompt == (
        _HARMONY_SYSTEM
        + "<|start|>user<|message|>What is 3 + 4?<|end|><|start|>assistant"
        + "<|channel|>analysis<|message|>"
    )
    # The model ends a thought with <|end|>; "Answer:" inside it must not stop the thinking.
    assert reasoning_stops == ["<|end|>", "<|return|>"]
    # At the cut: the thought ends as the model ends one, the final channel opens, "Answer:".
    assert answer_prompt == (
        reasoning_prompt
        + "User asks 3 + 4. That is<|end|><|start|>assistant<|channel|>final<|message|>Answer:"
    )
    assert answer_stops == ["\n", "<|return|>"]
    assert answer.protocol == "harmony"
    assert answer.forced
    assert answer.correct


def test_harmony_at_k_0_is_an_empty_analysis_message() -> None:
    backend = _Recorder("gpt-oss-20b", [(" 7", "stop")])
    budgeted_answer(backend, ITEM, 0, logprobs=False)
    assert backend.sent[0][0] == (
        _HARMONY_SYSTEM
        + "<|start|>user<|message|>What is 3 + 4?<|end|><|start|>assistant"
        + "<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>final<|message|>"
        + "Answer:"
    )


def test_magistral_thinks_between_think_tokens() -> None:
    backend = _Recorder("mistralai/Magistral-Small-2507", [("3 + 4 is 7.", "stop"), (" 7", "stop")])
    answer = budgeted_answer(backend, ITEM, 40, logprobs=False)
    (reasoning_prompt, reasoning_stops), (answer_prompt, answer_stops) = backend.sent
    assert reasoning_prompt == "[INST]What is 3 + 4?[/INST][THINK]"
    assert reasoning_stops == ["[/THINK]", "</s>"]
    assert answer_prompt == "[INST]What is 3 + 4?[/INST][THINK]3 + 4 is 7.[/THINK]Answer:"
    assert answer_stops == ["\n", "</s>"]
    assert answer.protocol == "magistral"
    assert not answer.forced
    system = TaskItem(
        id="q2",
        prompt=(
            {"role": "system", "content": "First draft your thinking process."},
            {"role": "user", "content": "What is 3 + 4?"},
        ),
        answer="7",
        kind="integer",
        n=2,
    )
    again = _Recorder("magistral-small-2509", [("", "length"), (" 7", "stop")])
    budgeted_answer(again, system, 1, logprobs=False)
    assert again.sent[1][0] == (
        "[SYSTEM_PROMPT]First draft your thinking process.[/SYSTEM_PROMPT]"
        "[INST]What is 3 + 4?[/INST][THINK][/THINK]Answer:"
    )


@pytest.mark.parametrize(
    ("protocol", "text", "thinking", "answer"),
    [
        # openai/harmony docs/format.md, "Example output" (what a server without vLLM's
        # openai_gptoss parser hands back).
        (
            "harmony",
            '<|channel|>analysis<|message|>User asks: "What is 2 + 2?" Simple arithmetic. '
            "Provide answer.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4."
            "<|return|>",
            'User asks: "What is 2 + 2?" Simple arithmetic. Provide answer.',
            "2 + 2 = 4.",
        ),
        (
            "magistral",
            "[THINK]2 + 2 is 4.[/THINK]The answer is 4.",
            "2 + 2 is 4.",
            "The answer is 4.",
        ),
        ("think", "so 4\n</think>\n\nAnswer: 4", "so 4", "Answer: 4"),
        ("think", "Answer: 4", "", "Answer: 4"),
        ("plain", "Answer: 4", "", "Answer: 4"),
    ],
)
def test_raw_output_is_split_by_its_protocol(
    protocol: str, text: str, thinking: str, answer: str
) -> None:
    assert split_reasoning(text, protocol) == (thinking, answer)


def test_an_r1_distill_is_written_out_in_its_own_template() -> None:
    # deepseek-ai/DeepSeek-R1: its chat template (tokenizer_config.json) and the README's
    # advice to open the turn with "<think>\n"; the cut is closed as DEER closes it
    # (BugSmith/DEER vllm-deer.py: "\n</think>\n\n"); read 2026-12-01.
    backend = _Recorder(
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", [("3 plus 4 is", "length"), (" 7", "stop")]
    )
    answer = budgeted_answer(backend, ITEM, 4, logprobs=False)
    assert backend.sent[0] == (
        "<｜User｜>What is 3 + 4?<｜Assistant｜><think>\n",
        ["</think>", "<｜end▁of▁sentence｜>"],
    )
    assert backend.sent[1][0] == (
        "<｜User｜>What is 3 + 4?<｜Assistant｜><think>\n3 plus 4 is\n</think>\n\nAnswer:"
    )
    assert answer.mode == "template"
    assert answer.correct
