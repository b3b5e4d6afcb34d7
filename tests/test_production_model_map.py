"""The team's own model names: `cotplan.register_model` and the model map file declare how a
name cotplan does not know thinks, which template writes it and what serves it; a known name
never takes another family's format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from production_support import Upstream, make_plan, text_reply

import cotplan
from cotplan.backends.known_models import REGISTERED, family_of
from cotplan.errors import InputError
from cotplan.production import capped, report_of
from cotplan.production.model_map import load_model_map

ACME = "acme-reasoner-v2"


@pytest.fixture(autouse=True)
def forget() -> Iterator[None]:
    before = dict(REGISTERED)
    yield
    REGISTERED.clear()
    REGISTERED.update(before)


def ask() -> dict[str, Any]:
    return {"model": ACME, "messages": [{"role": "user", "content": "What is 1 + 4 + 8?"}]}


def test_an_unknown_name_is_refused_until_declared_then_capped_its_way() -> None:
    with pytest.raises(InputError, match="cannot cap 'acme-reasoner-v2'"):
        capped(Upstream().client(), make_plan(ACME), log=False).chat.completions.create(
            **ask(), size=3
        )
    cotplan.register_model(ACME, protocol="think", template="chatml")
    upstream = Upstream(text_reply("Let me add", "length", 6), text_reply(" 13", "stop", 2))
    reply = capped(upstream.client(), make_plan(ACME), log=False).chat.completions.create(
        **ask(), size=3
    )
    first = upstream.requests[0][1]["prompt"]
    assert first.endswith("<|im_start|>assistant\n<think>\n")  # chatml, opened the think way
    assert "SmolLM" not in first
    report = report_of(reply)
    assert (report.mode, report.protocol) == ("template", "think")


def test_a_declared_server_caps_in_one_request() -> None:
    cotplan.register_model(ACME, protocol="think", server="llama.cpp-thinking")
    answer = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": ACME,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": "Answer: 13",
                    "reasoning_content": "add",
                },
            }
        ],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": 5,
            "total_tokens": 25,
            "completion_tokens_details": {"reasoning_tokens": 2},
        },
    }
    upstream = Upstream(answer)
    reply = capped(upstream.client(), make_plan(ACME), log=False).chat.completions.create(
        **ask(), size=3
    )
    ((path, body),) = upstream.requests
    assert path == "/v1/chat/completions"
    assert body["thinking_budget_tokens"] == 6
    assert report_of(reply).mode == "server"


def test_a_known_name_never_takes_another_familys_format() -> None:
    with pytest.raises(InputError, match="name of its own") as info:
        cotplan.register_model("qwen3-8b", protocol="think", template="smollm2")
    assert info.value.field == "name"
    assert family_of("qwen3-8b").chat_template == "chatml"  # type: ignore[union-attr]
    # Declaring what cotplan knows of it (to name its server) is fine.
    family = cotplan.register_model(
        "qwen3-8b", protocol="qwen3", template="chatml", server="vllm-thinking"
    )
    assert family.server == "vllm-thinking"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"protocol": "dream"}, "protocol"),
        ({"template": "jinja"}, "template"),
        ({"server": "nowhere"}, "provider"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        cotplan.register_model(ACME, **options)
    assert info.value.field == field
    assert ACME not in REGISTERED


def test_a_model_map_file_declares_every_name(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[models.acme-reasoner-v2]\nprotocol = "think"\ntemplate = "chatml"\n'
        '[models."team/acme-small"]\nprotocol = "plain"\ntemplate = "smollm2"\n'
    )
    declared = load_model_map(path)
    assert [f.prefix for f in declared] == [ACME, "acme-small"]
    assert family_of("ACME-Reasoner-v2").protocol == "think"  # type: ignore[union-attr]
    path.write_text('[models.acme-reasoner-v2]\nprotocol = "think"\ncolour = "red"\n')
    with pytest.raises(InputError) as info:
        load_model_map(path)
    assert info.value.field == "models.acme-reasoner-v2.colour"
    assert info.value.source == str(path)
    path.write_text('[models.acme-reasoner-v2]\nprotocol = "dream"\n')
    with pytest.raises(InputError) as info:
        load_model_map(path)
    assert info.value.field == "models.acme-reasoner-v2.protocol"
