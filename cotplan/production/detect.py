"""What the upstream can cap, asked once: `detect_provider(client)`.

An OpenAI-compatible address says nothing of the server behind it, and whether it can end a
model's thinking at a budget inside one request depends on the server, its version and how it
was started. Each server says so at an endpoint of its own (read once, when the capped client
or the gateway is built; never per call):

- llama.cpp: ``GET /props`` (``default_generation_settings``). Its reasoning parser, which
  `thinking_budget_tokens` needs, is on where the chat template writes an assistant turn's
  `reasoning_content` back (``chat_template_caps.supports_preserve_reasoning``; how llama.cpp
  finds the reasoning markers, docs/thinking-model.md): ``llama.cpp-thinking``.
- vLLM: ``GET /version``; `thinking_token_budget` from release `VLLM_BUDGET_SINCE` (it also
  needs ``--reasoning-parser``, which no endpoint shows: declare ``vllm`` where it is off).
- SGLang: ``GET /get_server_info``, whose server arguments show ``enable_strict_thinking`` and
  the ``reasoning_parser``: ``sglang-thinking``.
- NVIDIA NIM for LLMs: ``GET /v1/version`` (``release`` and ``api``), which takes
  ``nvext.max_thinking_tokens`` per request: ``nim-thinking`` (asked before vLLM's
  ``/version``, since a NIM may run vLLM inside).

Anything else (or a server that answers none of these) is ``openai-compatible``: two-phase
forcing, and the call's report says so. A declared provider (``capped(provider=...)``,
``cotplan serve --provider``) skips the questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import openai

from cotplan.production.upstream import root_of

__all__ = ["VLLM_BUDGET_SINCE", "Detected", "detect_provider"]

#: The first vLLM release taken to honour `thinking_token_budget` (merged 2026-03-25, PR
#: #20859; 0.19 or 0.20 by the notes read 2026-12-05: the later one, to be safe).
VLLM_BUDGET_SINCE = (0, 20)

#: Seconds each question may take: a server that does not answer quickly is not asked twice.
_TIMEOUT = 5.0


@dataclass(frozen=True)
class Detected:
    """The provider (a `cotplan.backends.budgets.PROVIDER_RULES` name) and how it was found."""

    provider: str
    note: str


def _ask(client: openai.OpenAI, path: str) -> Any:
    try:
        return client.get(
            root_of(client.base_url) + path,
            cast_to=object,
            options={"max_retries": 0, "timeout": _TIMEOUT},
        )
    except (openai.APIError, ValueError):
        return None


def _version(text: object) -> tuple[int, ...]:
    parts = []
    for piece in str(text).split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def detect_provider(client: openai.OpenAI) -> Detected:
    """Ask the server behind `client` what it is and whether it caps thinking (see the
    module). Never raises for a server that does not answer: that is ``openai-compatible``."""
    props = _ask(client, "/props")
    if isinstance(props, dict) and "default_generation_settings" in props:
        caps = props.get("chat_template_caps") or {}
        if isinstance(caps, dict) and caps.get("supports_preserve_reasoning"):
            return Detected("llama.cpp-thinking", "llama.cpp with its reasoning parser (/props)")
        return Detected(
            "openai-compatible",
            "llama.cpp without a reasoning parser (/props): cotplan forces the answer itself",
        )
    info = _ask(client, "/get_server_info")
    if isinstance(info, dict) and ("enable_strict_thinking" in info or "tp_size" in info):
        if info.get("enable_strict_thinking") and info.get("reasoning_parser"):
            return Detected("sglang-thinking", "SGLang with strict thinking (/get_server_info)")
        return Detected(
            "openai-compatible",
            "SGLang without strict thinking (/get_server_info): cotplan forces the answer",
        )
    nim = _ask(client, "/v1/version")
    if isinstance(nim, dict) and isinstance(nim.get("release"), str) and "api" in nim:
        return Detected("nim-thinking", f"NVIDIA NIM {nim['release']} (/v1/version)")
    version = _ask(client, "/version")
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        found = version["version"]
        if _version(found) >= VLLM_BUDGET_SINCE:
            return Detected("vllm-thinking", f"vLLM {found} (/version)")
        return Detected(
            "openai-compatible",
            f"vLLM {found} (/version) predates thinking_token_budget: cotplan forces the answer",
        )
    return Detected("openai-compatible", "the server did not say what it is")
