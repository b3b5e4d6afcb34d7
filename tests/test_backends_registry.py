"""One model registry read by every part; one place where a budget becomes request fields;
`connect` through a registry of providers."""

from __future__ import annotations

import csv
import importlib
import importlib.metadata
import importlib.resources
import inspect
from typing import Any

import pytest

from cotplan.backends.base import Backend
from cotplan.backends.budgets import (
    BUDGET_RULES,
    budget_params,
    cap_fields,
    request_fields,
    rule_for_model,
)
from cotplan.backends.known_models import MODEL_FAMILIES, family_of
from cotplan.backends.openai_compat import OpenAICompatibleBackend, is_reasoning_model
from cotplan.backends.registry import ConnectRequest, connect, providers, register_provider
from cotplan.backends.tokens import encoding_name_for
from cotplan.errors import InputError, UnknownModelError
from cotplan.generate.budgeted import CHAT_TEMPLATES, budgeted_answer, template_for
from cotplan.tasks import TaskItem

ITEM = TaskItem(id="q1", prompt="What is 3 + 4 + 8?", answer="15", kind="integer", n=3)


def _priced_models() -> list[dict[str, str]]:
    """Every (provider, name) row of cotplan's own price table, aliases included."""
    path = importlib.resources.files("cotplan.pricing") / "prices.csv"
    rows = []
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for name in [row["model"], *filter(None, (row["aliases"] or "").split(";"))]:
                rows.append({**row, "model": name})
    return rows


API_ROWS = [r for r in _priced_models() if r["provider"] in {"openai", "anthropic", "google"}]


def test_the_price_table_has_api_models_to_check() -> None:
    providers_seen = {r["provider"] for r in API_ROWS}
    assert providers_seen == {"openai", "anthropic", "google"}
    assert len(API_ROWS) >= 15


@pytest.mark.parametrize("row", API_ROWS, ids=lambda r: r["model"])
def test_every_priced_api_model_resolves_to_a_budget_rule(row: dict[str, str]) -> None:
    family = family_of(row["model"])
    assert family is not None, f"{row['model']} has no family in cotplan.backends.known_models"
    assert family.vendor == row["provider"]
    assert family.budget_rule in BUDGET_RULES
    assert rule_for_model(row["provider"], row["model"]).name == family.budget_rule
    if row["provider"] == "openai" and row["reasoning_billing"] == "in_completion":
        # The table bills hidden reasoning: the client must treat the model as reasoning.
        assert family.reasoning
        assert is_reasoning_model(row["model"])


@pytest.mark.parametrize(
    ("model", "reasoning", "encoding"),
    [
        ("gpt-5", True, "o200k_base"),
        ("gpt-5-chat-latest", False, "o200k_base"),
        ("openai/o3-mini", True, "o200k_base"),
        ("GPT-4o-2024-08-06", False, "o200k_base"),
        ("gpt-4-turbo", False, "cl100k_base"),
        ("gpt-6.2-sol", True, None),
        ("claude-sonnet-5", False, None),
    ],
)
def test_one_family_answers_reasoning_and_tokenizer(
    model: str, reasoning: bool, encoding: str | None
) -> None:
    assert is_reasoning_model(model) is reasoning
    if encoding is None:
        with pytest.raises(UnknownModelError):
            encoding_name_for(model)
    else:
        assert encoding_name_for(model) == encoding


def test_chat_templates_come_from_the_registry() -> None:
    named = {f.chat_template for f in MODEL_FAMILIES if f.chat_template is not None}
    assert named <= set(CHAT_TEMPLATES)
    assert template_for("smollm2-135m-instruct@b179c9523d0e") is CHAT_TEMPLATES["smollm2"]
    assert template_for("Qwen/Qwen3-8B") is CHAT_TEMPLATES["chatml"]
    assert template_for("gpt-4o") is None


def test_every_family_rule_is_a_known_rule() -> None:
    assert {f.budget_rule for f in MODEL_FAMILIES} - {None} <= set(BUDGET_RULES)


# -- where k becomes request fields, and what the client sends -------------------------------


class _Sent(OpenAICompatibleBackend):
    """The real client with the wire cut: records each request, answers with `reply`."""

    def __init__(self, model: str, reply: str = "Answer: 15", **kw: Any) -> None:
        super().__init__(model, api_key="test-key", cache=None, **kw)
        self.sent: list[dict[str, Any]] = []
        self.reply = reply

    def _send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        self.sent.append({"operation": operation, **params})
        usage = {"prompt_tokens": 20, "completion_tokens": 30}
        usage["completion_tokens_details"] = {"reasoning_tokens": 24}  # type: ignore[assignment]
        message = {"role": "assistant", "content": self.reply}
        return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}


def _fields(sent: dict[str, Any]) -> dict[str, Any]:
    """The request fields of one call as the provider receives them (extra_body merged)."""
    skip = {"operation", "model", "messages", "prompt", "extra_body", "temperature", "stop"}
    body: dict[str, Any] = sent.get("extra_body", {})
    return {k: v for k, v in sent.items() if k not in skip} | body


@pytest.mark.parametrize("model", ["gpt-6.2-sol", "gpt-6.1-terra", "o4-mini", "gpt-5"])
def test_a_reasoning_model_gets_max_completion_tokens_and_reasoning_effort(model: str) -> None:
    backend = _Sent(model)
    try:
        answer = budgeted_answer(backend, ITEM, 64, answer_tokens=16)
    finally:
        backend.close()
    assert answer.mode == "hidden"
    (sent,) = backend.sent
    assert "max_tokens" not in sent
    assert "temperature" not in sent
    assert _fields(sent) == {"max_completion_tokens": 80, "reasoning_effort": "low"}
    # The client sent exactly what the one function returns for (provider, model, k).
    assert _fields(sent) == request_fields("openai", model, 64, answer_tokens=16).params


@pytest.mark.parametrize(
    ("model", "base_url", "rule"),
    [
        ("gpt-4o-mini", None, "openai"),
        ("o3", None, "openai-reasoning"),
        ("qwen3-8b", "http://127.0.0.1:9/v1", "vllm"),
        ("claude-sonnet-5", "http://127.0.0.1:9/v1", "anthropic"),
    ],
)
def test_every_cap_the_client_sends_is_named_by_the_budget_rule(
    model: str, base_url: str | None, rule: str
) -> None:
    backend = _Sent(model, base_url=base_url, text_completions=False)
    try:
        backend.generate([{"role": "user", "content": "hi"}], max_tokens=37)
    finally:
        backend.close()
    assert backend.budget_rule == rule
    assert _fields(backend.sent[0]) == cap_fields(rule, 37)


def test_budget_params_split_into_the_cap_and_the_rest() -> None:
    hidden = budget_params("openai-reasoning", 900, answer_tokens=16)
    assert hidden.max_tokens == 916
    assert hidden.extra == {"reasoning_effort": "low"}
    thinking = budget_params("anthropic", 2048, answer_tokens=16)
    assert thinking.max_tokens == 2064
    assert thinking.extra == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert budget_params("gemini", 500).max_tokens is None
    assert cap_fields("openai-reasoning", 5, operation="completions") == {"max_tokens": 5}


def test_request_fields_refuses_an_unknown_provider() -> None:
    with pytest.raises(InputError, match="`provider`: unknown provider 'bard'"):
        request_fields("bard", "gpt-4o", 10)
    assert request_fields("vllm", "qwen3-8b", 10).params == {"max_tokens": 10}
    assert request_fields("google", "gemini-4-neon", 10).rule == "gemini"


# -- connect through a registry of providers -------------------------------------------------


def test_connect_resolves_a_registered_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    # The package's `connect` attribute is the function; the module holds the registry.
    module = importlib.import_module("cotplan.backends.registry")

    seen: list[ConnectRequest] = []

    def factory(request: ConnectRequest) -> Backend:
        seen.append(request)
        return OpenAICompatibleBackend(request.name, base_url="http://127.0.0.1:9/v1")

    monkeypatch.setitem(module._REGISTRY, "mine", module.Provider("mine", factory, "mine:X"))
    with connect("mine:tiny", cache=None, flavour="x") as backend:
        assert backend.model == "tiny"
    assert seen[0].provider == "mine"
    assert seen[0].options == {"flavour": "x"}
    with pytest.raises(InputError, match=r"`backend`: unknown backend 'nope:x'.*mine:X"):
        connect("nope:x")


def test_the_lab_registers_itself_and_bare_names_go_to_the_openai_client() -> None:
    assert {"local", "openai", "lab"} <= {p.name for p in providers()}
    with connect("qwen3-8b", base_url="http://127.0.0.1:9/v1", cache=None) as backend:
        assert isinstance(backend, OpenAICompatibleBackend)
        assert backend.model == "qwen3-8b"
        assert backend.budget_rule == "vllm"
    with pytest.raises(InputError, match="`name`: must be a non-empty name without ':'"):
        register_provider("a:b", lambda request: Backend())  # type: ignore[abstract]


def test_plugins_are_found_by_their_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module("cotplan.backends.registry")
    declared = importlib.metadata.entry_points(group="cotplan.backends")
    assert {entry.name: entry.value for entry in declared}["lab"] == "cotplan.research.lab"
    # The lab is found through its entry point, not by a name written into connect.
    assert '"cotplan.research.lab"' not in inspect.getsource(module)
    plugin = importlib.metadata.EntryPoint(
        name="plug", value="cotplan.backends.registry:_openai", group="cotplan.backends"
    )
    monkeypatch.setattr(module, "_REGISTRY", dict(module._REGISTRY))
    monkeypatch.setattr(module, "_entry_points", lambda name=None: [plugin])
    with connect("plug:tiny", base_url="http://127.0.0.1:9/v1", cache=None) as backend:
        assert isinstance(backend, OpenAICompatibleBackend)
        assert backend.model == "tiny"
    assert "plug" in module._REGISTRY
    broken = importlib.metadata.EntryPoint(
        name="gone", value="cotplan.no_such_module", group="cotplan.backends"
    )
    monkeypatch.setattr(module, "_entry_points", lambda name=None: [broken])
    with pytest.raises(InputError, match="`backend`: the backend plugin 'gone'"):
        connect("gone:x")


def test_the_embedded_model_takes_only_llama_cpps_rules() -> None:
    # Checked before the server starts: a wrong option costs no model load.
    with pytest.raises(InputError, match=r"must be one of llama\.cpp, llama\.cpp-thinking"):
        connect("local:thinking", provider="vllm-thinking", cache=None)


def test_the_server_side_cap_needs_a_model_served_with_the_reasoning_parser() -> None:
    # The plain model has no reasoning parser to split its output: the server cannot cap a
    # thinking it does not see, so cotplan's two-phase forcing is the way.
    with pytest.raises(InputError, match=r"needs a model served with llama\.cpp's reasoning"):
        connect("local", provider="llama.cpp-thinking", cache=None)
