"""The thinking model behind llama.cpp's reasoning parser: what the raw openai client sees, what
`thinking_budget_tokens` does, and that cotplan reads the same answers and token counts as from
a server that leaves the thinking in the content (the base model's own template)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import pytest

from cotplan.backends.adapters import KNOWN_ADAPTERS, adapter_dir
from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.generate import budgeted_answer
from cotplan.generate.budget_setup import Mode
from cotplan.tasks import make_tasks

SPEC = KNOWN_ADAPTERS["smollm2-135m-thinking"]
ITEMS = make_tasks("count", n=3, count=2, seed=5)


def _raw(model: LocalModel) -> openai.OpenAI:
    return openai.OpenAI(base_url=model.base_url, api_key="x", max_retries=0)


def _ask(model: LocalModel, prompt: str, **options: Any) -> Any:
    return _raw(model).chat.completions.create(
        model="thinking",
        messages=[{"role": "user", "content": prompt}],
        temperature=0,
        **options,
    )


# -- without a server -------------------------------------------------------------------------


@pytest.mark.model  # finds the base GGUF
def test_the_shipped_adapter_is_served_with_its_reasoning_template() -> None:
    model = LocalModel("thinking")
    args = model._model_args()
    template = args[args.index("--chat-template-file") + 1]
    assert Path(template) == adapter_dir() / "smollm2-thinking.jinja"
    assert args[args.index("--reasoning-format") + 1] == "deepseek"
    # The template does not change the tokens, so the id is the weights' alone.
    assert model.model_id == SPEC.model_id


def test_the_template_writes_back_reasoning_and_nothing_else() -> None:
    source = (adapter_dir() / SPEC.chat_template).read_text()
    # What llama.cpp's template analysis diffs on: the assistant's reasoning rendered in tags.
    assert "message['reasoning_content']" in source
    assert "'<|im_start|>assistant\\n<think>\\n'" in source
    # The generation prompt leaves `<think>` to the model, as the adapter was trained.
    assert source.rstrip().endswith(
        "{%- if add_generation_prompt -%}\n{{- '<|im_start|>assistant\\n' -}}\n{%- endif -%}"
    )


@pytest.mark.model  # finds the base GGUF
def test_a_plain_model_gets_no_template() -> None:
    args = LocalModel()._model_args()
    assert "--chat-template-file" not in args
    assert "--reasoning-format" not in args


# -- with the real servers --------------------------------------------------------------------


@pytest.fixture(scope="module")
def unsplit_model(cotplan_home: Path) -> Iterator[LocalModel]:
    """The same weights under SmolLM2's own template: llama.cpp leaves `<think>` in the content
    (how `local:thinking` was served before), the reference for what cotplan must still read."""
    with LocalModel(SPEC.base, adapter=adapter_dir() / SPEC.file_name) as model:
        yield model


@pytest.mark.slow
def test_the_raw_client_gets_reasoning_content_as_from_an_r1_distill(
    thinking_model: LocalModel,
) -> None:
    reply = _ask(thinking_model, str(ITEMS[0].prompt), max_tokens=400)
    message = reply.choices[0].message
    thinking = message.model_dump().get("reasoning_content")
    assert reply.choices[0].finish_reason == "stop"
    assert isinstance(thinking, str)
    assert thinking.startswith('I count "')
    assert "appears" in thinking
    assert "<think>" not in thinking
    assert "</think>" not in thinking
    assert (message.content or "").startswith("Answer: ")


@pytest.mark.slow
def test_a_cut_thought_comes_back_as_reasoning_with_no_content(
    thinking_model: LocalModel,
) -> None:
    reply = _ask(thinking_model, str(ITEMS[0].prompt), max_tokens=12)
    message = reply.choices[0].message.model_dump()
    assert reply.choices[0].finish_reason == "length"
    assert message["content"] == ""
    assert message["reasoning_content"].startswith("I count")


@pytest.mark.slow
@pytest.mark.parametrize("budget", [10, 24])
def test_thinking_budget_tokens_caps_the_thinking_and_the_answer_follows(
    thinking_model: LocalModel, budget: int
) -> None:
    reply = _ask(
        thinking_model,
        str(ITEMS[1].prompt),
        max_tokens=budget + 40,
        extra_body={"thinking_budget_tokens": budget},
    )
    message = reply.choices[0].message.model_dump()
    assert reply.choices[0].finish_reason == "stop"  # closed by the server, not cut by max_tokens
    # The budget counts the tokens after `<think>`: its line break, then the thinking returned.
    assert len(thinking_model.tokenize("\n" + message["reasoning_content"])) == budget
    assert message["content"].startswith("Answer: ")
    # Unsplit, the same request shows the closer the server forced at the budget.
    raw = _ask(
        thinking_model,
        str(ITEMS[1].prompt),
        max_tokens=budget + 40,
        extra_body={"thinking_budget_tokens": budget, "reasoning_format": "none"},
    )
    content = raw.choices[0].message.content or ""
    assert (
        content
        == "<think>\n" + message["reasoning_content"] + "</think>\n\n" + (message["content"])
    )


@pytest.mark.slow
def test_cotplan_reads_the_same_answers_and_counts_as_from_the_unsplit_server(
    thinking_backend: LocalBackend, unsplit_model: LocalModel
) -> None:
    unsplit = unsplit_model.backend(cache=None)
    unsplit.protocol = "think"  # its model id names the base, whose protocol is cotplan's plain
    for item in ITEMS:
        messages = [{"role": "user", "content": str(item.prompt)}]
        split = thinking_backend.generate(messages, max_tokens=400)
        inline = unsplit.generate(messages, max_tokens=400)
        assert split.text == inline.text
        assert split.text.startswith("Answer: ")
        # (cached_tokens only says what each server's prompt cache held from earlier requests)
        counts = ("prompt_tokens", "completion_tokens", "reasoning_tokens")
        assert [getattr(split.usage, c) for c in counts] == [
            getattr(inline.usage, c) for c in counts
        ]
        assert split.finish_reason == inline.finish_reason == "stop"
        # llama.cpp keeps the line break before `</think>`; cotplan drops it either way.
        assert split.reasoning == inline.reasoning
        runs: tuple[tuple[Mode, int], ...] = (("chat", 400), ("template", 400), ("template", 20))
        for mode, k in runs:
            a = budgeted_answer(thinking_backend, item, k, mode=mode)
            b = budgeted_answer(unsplit, item, k, mode=mode)
            assert (a.extracted, a.correct, a.truncated) == (b.extracted, b.correct, b.truncated)
            assert (a.prompt_tokens, a.reasoning_tokens, a.answer_tokens) == (
                b.prompt_tokens,
                b.reasoning_tokens,
                b.answer_tokens,
            )


def _rendered(model: LocalModel, messages: list[dict[str, str]]) -> str:
    body = {"messages": messages, "continue_final_message": True, "add_generation_prompt": False}
    response = httpx.post(f"{model.base_url.removesuffix('/v1')}/apply-template", json=body)
    return str(response.json()["prompt"])


@pytest.mark.slow
def test_a_prefilled_answer_needs_its_thinking_in_reasoning_content(
    thinking_model: LocalModel, unsplit_model: LocalModel
) -> None:
    """Continuing an assistant turn: with reasoning markers known, llama.cpp puts an empty
    closed block before a prefill that carries no `reasoning_content`, so the thinking written
    inline comes after `<think>\n\n</think>\n\n`; sent as `reasoning_content` it renders as
    the inline prefill did under SmolLM2's own template."""
    question = {"role": "user", "content": "Q"}
    inline = {"role": "assistant", "content": "<think>\nA\n</think>\n\nAnswer:"}
    apart = {"role": "assistant", "content": "Answer:", "reasoning_content": "A"}
    before = _rendered(unsplit_model, [question, inline])
    assert before.endswith("<|im_start|>assistant\n<think>\nA\n</think>\n\nAnswer:")
    assert _rendered(thinking_model, [question, apart]) == before
    assert _rendered(thinking_model, [question, inline]) == before.replace(
        "assistant\n<think>", "assistant\n<think>\n\n</think>\n\n<think>"
    )
