"""Streamed two-phase calls with n > 1 and with logprobs, on doubles of the upstream: each
choice's two phases streamed under its own index, the same requests and the same report as
the unstreamed call, and the answer's log-probabilities on the chunks that carry its text."""

from __future__ import annotations

from typing import Any

from openai.types.chat import ChatCompletionChunk
from production_support import THINKER, Upstream, ask, make_plan, text_chunks, text_reply

from cotplan.production import capped, report_of


def with_logprobs(chunks: list[dict[str, Any]], values: list[float]) -> list[dict[str, Any]]:
    """`text_chunks` whose text pieces carry llama.cpp's chat-shaped logprobs."""
    out = [dict(c) for c in chunks]
    for chunk, value in zip(out, values, strict=False):
        [choice] = chunk["choices"]
        token = {"token": choice["text"], "logprob": value, "bytes": None, "top_logprobs": []}
        chunk["choices"] = [{**choice, "logprobs": {"content": [token]}}]
    return out


def by_index(chunks: list[ChatCompletionChunk], field: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            text = choice.delta.model_dump().get(field) or ""
            out[choice.index] = out.get(choice.index, "") + text
    return out


def test_n_choices_are_streamed_each_under_its_index_with_the_unstreamed_report() -> None:
    plain = Upstream(
        text_reply("Let me add", "length", 6),
        text_reply(" 13", "stop", 2),
        text_reply("I add", "stop", 3),
        text_reply(" 12", "stop", 2),
    )
    upstream = Upstream(
        text_chunks(["Let", " me", " add"], "length", completion=6),
        text_chunks([" 1", "3"], "stop"),
        text_chunks(["I", " add"], "stop", completion=3),
        text_chunks([" 12"], "stop", completion=2),
    )
    expected = capped(plain.client(), make_plan(THINKER), log=False).chat.completions.create(
        **ask(), size=3, n=2
    )
    stream = capped(upstream.client(), make_plan(THINKER), log=False).chat.completions.create(
        **ask(), size=3, n=2, stream=True
    )
    chunks = list(stream)
    assert len(upstream.requests) == 4  # both phases, for each choice
    assert by_index(chunks, "content") == {
        i: choice.message.content for i, choice in enumerate(expected.choices)
    }
    assert by_index(chunks, "reasoning_content") == {0: "Let me add", 1: "I add"}
    finishes = [(c.index, c.finish_reason) for ch in chunks for c in ch.choices if c.finish_reason]
    assert finishes == [(0, "stop"), (1, "stop")]
    report = report_of(chunks[-1])
    assert report == report_of(expected)
    assert (report.requests, report.reasoning_tokens, report.answer_tokens) == (4, 9, 4)


def test_a_streamed_answer_carries_its_logprobs() -> None:
    upstream = Upstream(
        text_chunks(["Let", " me", " add"], "length", completion=6),
        with_logprobs(text_chunks([" 1", "3", " "], "stop"), [-0.5, -0.25, -1.0]),
    )
    stream = capped(upstream.client(), make_plan(THINKER), log=False).chat.completions.create(
        **ask(), size=3, logprobs=True, stream=True
    )
    chunks = list(stream)
    assert upstream.requests[1][1]["logprobs"] == 1  # the answer phase asks for them
    assert "logprobs" not in upstream.requests[0][1]  # the thinking's are not the client's
    carried = [
        (token.token, token.logprob)
        for chunk in chunks
        for choice in chunk.choices
        if choice.logprobs is not None and choice.logprobs.content
        for token in choice.logprobs.content
    ]
    # Every answer token, the held-back trailing space's too, in order.
    assert carried == [(" 1", -0.5), ("3", -0.25), (" ", -1.0)]
    assert by_index(chunks, "content") == {0: "Answer: 13"}
