"""Chat mode for a native thinker on the real embedded llama.cpp server (the thinking model):
under the default rule (`llama.cpp`) cotplan cuts the thinking at k, and the forced answer
continues the model's own assistant turn through the server's `continue_final_message`, not an
empty assistant turn and a user turn. The server's own cap (`thinking_budget_tokens`, asked for
with ``provider="llama.cpp-thinking"``) is compared with this in
test_generate_server_cap_model.py.
"""

from __future__ import annotations

import pytest

from cotplan.backends.budgets import request_fields
from cotplan.backends.local import LocalBackend
from cotplan.generate import CHAT_TEMPLATES, budgeted_answer
from cotplan.tasks import make_tasks

pytestmark = pytest.mark.model

ITEMS = make_tasks("count", n=4, count=3, seed=11)


def test_a_cut_thought_is_answered_in_the_same_turn_over_chat(
    thinking_backend: LocalBackend,
) -> None:
    assert thinking_backend.budget_rule == "llama.cpp"
    assert request_fields("llama.cpp", thinking_backend.model, 6).params == {"max_tokens": 6}
    template = CHAT_TEMPLATES["smollm2"]
    for item in ITEMS:
        chat = budgeted_answer(thinking_backend, item, 6, mode="chat")
        assert (chat.mode, chat.protocol, chat.path) == ("chat", "think", "two-phase")
        assert chat.truncated
        assert chat.forced
        assert chat.reasoning_tokens == 6
        assert chat.calls == 2
        # The server continued the assistant turn: its answer is exactly what the model writes
        # after the same turn written out by hand (a new turn would open a new thought).
        assert isinstance(item.prompt, str)
        written = (
            template.render([{"role": "user", "content": item.prompt}])
            + f"<think>\n{chat.reasoning}\n</think>\n\nAnswer:"
        )
        same = thinking_backend.generate(written, max_tokens=16, stop=["\n", template.end])
        assert chat.answer_text == same.text
        assert "<think>" not in chat.answer_text


@pytest.mark.slow
def test_uncapped_over_chat_it_answers_in_one_request(thinking_backend: LocalBackend) -> None:
    item = ITEMS[0]
    chat = budgeted_answer(thinking_backend, item, 400, mode="chat")
    template = budgeted_answer(thinking_backend, item, 400)
    assert template.mode == "template"
    assert not chat.truncated
    assert chat.calls == 1  # it closed its thinking and answered under the cap
    assert chat.reasoning.strip() != ""
    assert chat.extracted == template.extracted
