"""llama.cpp's own thinking cap against cotplan's two-phase budget forcing, on the real embedded
thinking model and the same items.

The one-request path is asked for as a user would: ``connect("local:thinking",
provider="llama.cpp-thinking")`` (here `serve_under` on the shared server, which is what that
option does). It sends `thinking_budget_tokens` = k with room for the answer; llama.cpp's
reasoning parser counts the thinking, writes `</think>` at k, and the model answers in the same
request. The default, template mode, cuts the thinking at k itself, closes it with the protocol's
`\\n</think>\\n\\n`, and asks for the answer after "Answer:" (two requests).

What the comparison shows on these items (greedy decoding, so the numbers are the test's):

- the cap held (slack 0) and reads as a cut; two phases count exactly k thinking tokens, one
  request k - 2 to k: cotplan counts the thinking the server returns, from which the parser
  stripped the line break after `<think>` and, where the budget fell on one, the last;
- the thinking is the same text, one token shorter on the server: its budget also counts the
  line break after `<think>`, which the model writes there and template mode prefills;
- the answers are the same, though the close is not: llama.cpp writes `</think>` right after the
  last thinking token (its budget message is empty), and the model then writes the blank line
  and "Answer:" itself; cotplan writes a line break before `</think>` and prefills the marker;
- the tokens are spent differently: one request bills the opener, the server's closer, the
  line breaks and the marker as output (`answer_tokens`), and sends the question once; two
  phases send the question twice and the closer and marker as prompt.
"""

from __future__ import annotations

import openai
import pytest

from cotplan.backends.budgets import request_fields
from cotplan.backends.local import LocalBackend, LocalModel
from cotplan.backends.registry import serve_under
from cotplan.errors import InputError
from cotplan.generate import budgeted_answer
from cotplan.generate.budget_setup import driven_as
from cotplan.tasks import make_tasks

pytestmark = pytest.mark.model

ITEMS = make_tasks("count", n=4, count=3, seed=11)
#: Thinking tokens allowed over k: none, the server's cap is exact. Under it the count may fall
#: short by the line breaks llama.cpp's parser strips from both ends of a cut thought (the one
#: after `<think>`, and the cut's last token when it is one), which its budget counted.
SLACK = 0
STRIPPED = 2


@pytest.fixture(scope="module")
def capped(thinking_model: LocalModel) -> LocalBackend:
    """A second client of the shared thinking server, under the server-side cap."""
    return serve_under(thinking_model.backend(cache=None), "llama.cpp-thinking")


def test_the_server_cap_is_one_chat_request_and_template_mode_stays_the_default(
    capped: LocalBackend, thinking_backend: LocalBackend
) -> None:
    assert capped.budget_rule == "llama.cpp-thinking"
    assert driven_as(capped) == "mode chat, protocol think"
    assert driven_as(thinking_backend) == "mode template, protocol think"
    with pytest.raises(InputError, match="caps the thinking on chat requests only"):
        budgeted_answer(capped, ITEMS[0], 16, mode="template")


@pytest.mark.slow
@pytest.mark.parametrize("k", [16, 32, 64])
def test_the_server_cap_against_two_phase_forcing(
    capped: LocalBackend, thinking_backend: LocalBackend, k: int
) -> None:
    for item in ITEMS:
        one = budgeted_answer(capped, item, k)
        two = budgeted_answer(thinking_backend, item, k)
        assert (one.mode, one.path, one.calls) == ("chat", "one-request", 1)
        assert (two.mode, two.path, two.calls) == ("template", "two-phase", 2)
        # The cap held, and was read as a cut.
        assert k - STRIPPED <= one.reasoning_tokens <= k + SLACK
        assert one.cap_held
        assert one.truncated
        assert one.forced
        assert two.reasoning_tokens == k
        assert two.truncated
        assert two.forced
        # The answer arrived after the forced close, in the same request.
        assert not one.answer_lost
        assert one.answer_text.startswith("Answer: ")
        # The same thinking, one token shorter: the server's budget spent one on the line
        # break after <think> (the model writes it; cotplan's template mode prefills it), and
        # its parser strips a line break the budget ended on.
        assert two.reasoning.startswith(one.reasoning)
        assert k - 1 <= len(capped.tokenize("\n" + one.reasoning)) <= k
        assert one.extracted == two.extracted
        assert one.correct == two.correct
        # Where the tokens go: markers as output in one request, as prompt in two.
        assert one.answer_tokens > two.answer_tokens
        assert one.prompt_tokens < two.prompt_tokens
        assert one.prompt_tokens == one.question_tokens


@pytest.mark.slow
def test_llama_cpp_writes_its_own_close_at_the_budget(
    thinking_model: LocalModel, capped: LocalBackend
) -> None:
    item, k = ITEMS[0], 16
    one = budgeted_answer(capped, item, k)
    fields = request_fields("llama.cpp-thinking", capped.model, k)
    assert fields.params == {"thinking_budget_tokens": 16, "max_tokens": 16 + 8 + 16}
    # The same request with the parser off: the text as the model and the server wrote it.
    raw = openai.OpenAI(base_url=thinking_model.base_url, api_key="x", max_retries=0)
    reply = raw.chat.completions.create(
        model="thinking",
        messages=[{"role": "user", "content": str(item.prompt)}],
        temperature=0,
        max_tokens=fields.params["max_tokens"],
        extra_body={"thinking_budget_tokens": k, "reasoning_format": "none"},
    )
    assert reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content == (
        f"<think>\n{one.reasoning}</think>\n\n{one.answer_text}"
    )
