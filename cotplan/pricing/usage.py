"""Price the usage object a provider returns, read with that provider's own rules.

The same three numbers mean different things per provider, so `cost_of` reads each provider's
usage block by its own rule and converts it into cotplan's one meaning, that of
`cotplan.backends.Usage` (the OpenAI convention): `prompt_tokens` holds every prompt token,
cached and cache-written ones included; `completion_tokens` holds every output token, hidden
reasoning included; `reasoning_tokens`, `cached_tokens` and `cache_write_tokens` are parts of
those. The call is then priced by `cotplan.pricing.cost` like any other, from the same rows.

What each provider reports (read 2026-12-01 in genai-prices 0.2.3's usage extractors,
``genai_prices/data.py``, `Provider.extractors`, https://github.com/pydantic/genai-prices, which
follow each provider's API reference; `tests/test_pricing_usage.py` checks every rule against
`genai_prices.extract_usage` and `calc_price`):

- OpenAI Chat Completions (and Azure, and OpenAI-compatible endpoints): ``usage.prompt_tokens``
  includes ``prompt_tokens_details.cached_tokens``; ``completion_tokens`` includes
  ``completion_tokens_details.reasoning_tokens``. Already cotplan's meaning.
- OpenAI Responses: ``usage.input_tokens`` includes ``input_tokens_details.cached_tokens``;
  ``output_tokens`` includes ``output_tokens_details.reasoning_tokens``.
- Anthropic Messages: ``usage.input_tokens`` EXCLUDES cache reads and writes:
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` come on top of it, so the
  prompt is their sum. ``output_tokens`` includes extended-thinking tokens.
- Gemini (``usageMetadata``, or ``usage_metadata`` from the Python SDK): ``promptTokenCount``
  includes ``cachedContentTokenCount``; ``toolUsePromptTokenCount`` comes on top of the
  prompt; ``thoughtsTokenCount`` comes on top of ``candidatesTokenCount`` (reported apart).
- xAI chat completions: ``completion_tokens_details.reasoning_tokens`` (or a top-level
  ``reasoning_tokens``) comes on top of ``completion_tokens``; cached prompt tokens are
  ``prompt_tokens_details.cached_tokens`` (older bodies: ``cached_prompt_text_tokens``).
  xAI's Responses API follows OpenAI's Responses rule.
- DeepSeek: OpenAI's chat rule; ``prompt_cache_hit_tokens`` (DeepSeek's own field, also given
  as ``prompt_tokens_details.cached_tokens``) are inside ``prompt_tokens``.

What cotplan's rows cannot price is refused rather than priced wrong: audio tokens are an
`InputError` naming their field. Anthropic's 1-hour cache writes are priced at the 5-minute
write rate and web searches are not priced; both are said in `CallCost.notes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Any

from cotplan.errors import InputError
from cotplan.pricing.cost import REASONING_APART, CallCost, unit_price, usage_count, usage_moment
from cotplan.pricing.makers import maker_of
from cotplan.pricing.rows import SERVICE_TIERS
from cotplan.pricing.table import PriceTable, price_table

__all__ = ["USAGE_APIS", "ProviderUsage", "cost_of", "read_usage"]

#: The usage shapes `read_usage` knows, by the name `ProviderUsage.api` gives them.
USAGE_APIS = ("openai-chat", "openai-responses", "anthropic", "gemini", "xai-chat")
_GEMINI_DETAILS = (
    ("promptTokensDetails", "prompt_tokens_details"),
    ("cacheTokensDetails", "cache_tokens_details"),
    ("candidatesTokensDetails", "candidates_tokens_details"),
    ("toolUsePromptTokensDetails", "tool_use_prompt_tokens_details"),
)
# Providers whose chat completions report reasoning apart from `completion_tokens`.
_REASONING_APART = REASONING_APART


@dataclass(frozen=True)
class ProviderUsage:
    """One call's tokens in cotplan's one meaning (see the module docstring).

    `api` names the shape read (one of `USAGE_APIS`); `provider` is the provider named by the
    caller (None: the model's maker is priced); `created` is when the provider says the call was
    made (None when the body does not say); `notes` are what the price will leave out.
    """

    api: str
    model: str | None
    provider: str | None
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    created: datetime | None = None
    notes: tuple[str, ...] = ()


def _as_mapping(response: Any) -> Mapping[str, Any]:
    """The response as a mapping: a dict as is, an SDK object through its own serializer."""
    if isinstance(response, Mapping):
        return response
    dump = getattr(response, "model_dump", None)
    if callable(dump):
        # Pydantic SDK objects (openai, anthropic, google-genai); aliases give the wire names.
        dumped = dump(by_alias=True)
        if isinstance(dumped, Mapping):
            return dumped
    to_dict = getattr(response, "to_dict", None)
    if callable(to_dict):
        dumped = to_dict()
        if isinstance(dumped, Mapping):
            return dumped
    raise InputError(
        f"must be a provider's response or its dict, got {type(response).__name__}",
        field="response",
    )


class _Block:
    """A usage block with its path, to read counts whose errors name the exact field."""

    def __init__(self, data: Mapping[str, Any], path: str) -> None:
        self.data = data
        self.path = path

    def child(self, *names: str) -> _Block:
        for name in names:
            value = self.data.get(name)
            if isinstance(value, Mapping):
                return _Block(value, f"{self.path}.{name}")
        return _Block({}, f"{self.path}.{names[0]}")

    def has(self, *names: str) -> bool:
        return any(self.data.get(n) is not None for n in names)

    def count(self, *names: str, required: bool = False) -> int:
        """The first of `names` present (camelCase and snake_case spellings of one field)."""
        for name in names:
            value = self.data.get(name)
            if value is not None:
                return usage_count(value, f"{self.path}.{name}")
        if required:
            raise InputError("is missing from the usage block", field=f"{self.path}.{names[0]}")
        return 0

    def modality(self, details: tuple[str, str], modality: str) -> int:
        """Tokens of one modality in a Gemini ``*TokensDetails`` list."""
        for name in details:
            items = self.data.get(name)
            if isinstance(items, Sequence) and not isinstance(items, str):
                counts = [
                    usage_count(
                        item.get("tokenCount", item.get("token_count", 0)),
                        f"{self.path}.{name}[{i}].tokenCount",
                    )
                    for i, item in enumerate(items)
                    if isinstance(item, Mapping)
                    and str(item.get("modality", "")).upper() == modality
                ]
                return sum(counts)
        return 0


def _no_audio(block: _Block, *paths: tuple[str, str]) -> None:
    # cotplan's rows hold text rates only; audio priced at the text rate would be wrong money.
    for parent, name in paths:
        inner = block.child(parent) if parent else block
        if inner.count(name):
            raise InputError(
                "audio tokens are not priced by cotplan (its rows hold text rates only)",
                field=f"{inner.path}.{name}",
            )


def _created(body: Mapping[str, Any]) -> datetime | None:
    for name in ("created_at", "created", "createTime", "create_time"):
        value = body.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                return datetime.fromtimestamp(value, tz=UTC)
            except (ValueError, OverflowError, OSError):  # NaN, or a year past 1..9999
                raise InputError(
                    f"{value!r} is not a time in the years 1 to 9999 (Unix seconds)", field=name
                ) from None
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, str) and value:
            try:
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise InputError(f"{value!r} is not an ISO date and time", field=name) from None
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _chat(usage: _Block, model: str | None, provider: str | None) -> dict[str, Any]:
    _no_audio(
        usage,
        ("prompt_tokens_details", "audio_tokens"),
        ("completion_tokens_details", "audio_tokens"),
    )
    prompt_details = usage.child("prompt_tokens_details")
    completion_details = usage.child("completion_tokens_details")
    cached = (
        usage.count("prompt_cache_hit_tokens")
        if usage.has("prompt_cache_hit_tokens")
        else prompt_details.count("cached_tokens")
        if prompt_details.has("cached_tokens")
        else usage.count("cached_prompt_text_tokens")
    )
    reasoning = (
        completion_details.count("reasoning_tokens")
        if completion_details.has("reasoning_tokens")
        else usage.count("reasoning_tokens")
    )
    completion = usage.count("completion_tokens", required=True)
    seller = (provider or maker_of(model or "") or "").lower()
    apart = seller in _REASONING_APART
    if not apart and reasoning > completion:
        where = completion_details if completion_details.has("reasoning_tokens") else usage
        raise InputError(
            f"{reasoning} reasoning tokens exceed `completion_tokens` ({completion}); a provider "
            f"that reports them apart (xAI) needs `provider=` naming it",
            field=f"{where.path}.reasoning_tokens",
        )
    return {
        "api": "xai-chat" if apart else "openai-chat",
        "prompt_tokens": usage.count("prompt_tokens", required=True),
        "completion_tokens": completion + reasoning if apart else completion,
        "reasoning_tokens": reasoning,
        "cached_tokens": cached,
        "cache_write_tokens": prompt_details.count("cache_write_tokens"),
    }


def _responses(usage: _Block) -> dict[str, Any]:
    inputs = usage.child("input_tokens_details")
    return {
        "api": "openai-responses",
        "prompt_tokens": usage.count("input_tokens", required=True),
        "completion_tokens": usage.count("output_tokens", required=True),
        "reasoning_tokens": usage.child("output_tokens_details").count("reasoning_tokens"),
        "cached_tokens": inputs.count("cached_tokens"),
        "cache_write_tokens": inputs.count("cache_write_tokens"),
    }


def _anthropic(usage: _Block) -> dict[str, Any]:
    read = usage.count("cache_read_input_tokens")
    written = usage.count("cache_creation_input_tokens")
    notes = []
    hour = usage.child("cache_creation").count("ephemeral_1h_input_tokens")
    if hour:
        notes.append(f"{hour} tokens written to the 1-hour cache are priced at the 5-minute rate")
    searches = usage.child("server_tool_use").count("web_search_requests")
    if searches:
        notes.append(f"{searches} web searches are not priced")
    return {
        "api": "anthropic",
        # Anthropic's input_tokens are only the tokens after the last cache breakpoint.
        "prompt_tokens": usage.count("input_tokens", required=True) + read + written,
        "completion_tokens": usage.count("output_tokens", required=True),
        "reasoning_tokens": usage.child("output_tokens_details").count("thinking_tokens"),
        "cached_tokens": read,
        "cache_write_tokens": written,
        "notes": tuple(notes),
    }


def _gemini(meta: _Block) -> dict[str, Any]:
    for details in _GEMINI_DETAILS:
        if meta.modality(details, "AUDIO"):
            raise InputError(
                "audio tokens are not priced by cotplan (its rows hold text rates only)",
                field=f"{meta.path}.{details[0]}",
            )
    thoughts = meta.count("thoughtsTokenCount", "thoughts_token_count")
    return {
        "api": "gemini",
        "prompt_tokens": meta.count("promptTokenCount", "prompt_token_count")
        + meta.count("toolUsePromptTokenCount", "tool_use_prompt_token_count"),
        "completion_tokens": meta.count("candidatesTokenCount", "candidates_token_count")
        + thoughts,
        "reasoning_tokens": thoughts,
        "cached_tokens": meta.count("cachedContentTokenCount", "cached_content_token_count"),
    }


def _is_anthropic(body: Mapping[str, Any], usage: Mapping[str, Any], provider: str | None) -> bool:
    if body.get("object") == "response" or "input_tokens_details" in usage:
        return False
    # Without cache fields both meanings agree, so a bare {input_tokens, output_tokens} is safe.
    return (
        body.get("type") == "message"
        or provider == "anthropic"
        or any(k in usage for k in ("cache_read_input_tokens", "cache_creation_input_tokens"))
    )


def _read(body: Mapping[str, Any], model: str | None, provider: str | None) -> dict[str, Any]:
    for key in ("usageMetadata", "usage_metadata"):
        if isinstance(body.get(key), Mapping):
            return _gemini(_Block(body[key], key))
    if any(k in body for k in ("promptTokenCount", "prompt_token_count")):
        return _gemini(_Block(body, "usageMetadata"))  # a bare usage block, as a log keeps it
    usage = body.get("usage")
    block = _Block(usage, "usage") if isinstance(usage, Mapping) else _Block(body, "usage")
    if "prompt_tokens" in block.data:
        return _chat(block, model, provider)
    if _is_anthropic(body, block.data, provider):
        return _anthropic(block)
    if "input_tokens" in block.data:
        return _responses(block)
    raise InputError(
        "no usage block: expected `usage` with `prompt_tokens` or `input_tokens` (OpenAI, "
        "Anthropic, xAI, DeepSeek) or `usageMetadata` (Gemini)",
        field="response.usage",
    )


def read_usage(
    response: Any, provider: str | None = None, *, model: str | None = None
) -> ProviderUsage:
    """A provider's response (or its dict, or its bare usage block) in cotplan's one meaning.

    The shape is told by its fields: ``usageMetadata`` (Gemini), ``prompt_tokens`` (chat
    completions: OpenAI, Azure, DeepSeek, xAI and every OpenAI-compatible endpoint),
    ``input_tokens`` (OpenAI Responses, or Anthropic when the body is a ``message`` or carries
    Anthropic's cache fields). `provider` names the seller; for chat completions it also picks
    the rule (xAI reports reasoning apart), else the model's maker does. `model` overrides the
    body's model name.
    """
    if provider is not None and (not isinstance(provider, str) or not provider.strip()):
        raise InputError("must be a non-empty provider name", field="provider")
    wanted = provider.strip().lower() if provider else None
    body = _as_mapping(response)
    name = model if model is not None else body.get("model", body.get("modelVersion"))
    if name is None:
        name = body.get("model_version")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InputError(f"must be a model name, got {name!r}", field="model")
    read = _read(body, name, wanted)
    return ProviderUsage(model=name, provider=wanted, created=_created(body), **read)


def _when(
    at: datetime | date | None, created: datetime | None
) -> tuple[date | None, datetime | None]:
    """The call's date and moment: `at` (a datetime or a date), else the body's own time."""
    if at is None:
        return usage_moment(None, created)
    if isinstance(at, datetime):
        return usage_moment(None, at)
    if isinstance(at, date):
        return at, None
    raise InputError(f"must be a datetime or a date, got {type(at).__name__}", field="at")


def _served_tier(response: Any, *, batch: bool) -> str | None:
    """The service tier a body says served the call, when it is one priced apart."""
    tier = _as_mapping(response).get("service_tier")
    if batch or not isinstance(tier, str) or tier.lower() not in SERVICE_TIERS:
        return None  # "default", "auto", "standard", "scale": the standard rates
    return tier.lower()


def cost_of(
    response: Any,
    provider: str | None = None,
    at: datetime | date | None = None,
    *,
    model: str | None = None,
    batch: bool = False,
    table: PriceTable | None = None,
    tier: str | None = None,
) -> CallCost:
    """The USD cost of a call from the usage object its provider returned.

    `response` is an OpenAI chat completion or Responses object, an Anthropic message, a Gemini
    response, an xAI or DeepSeek chat completion, any of their dicts, or a bare usage block
    (then pass `model`). Each is read by its provider's own rule (`read_usage`) and priced like
    `call_cost`. `provider` names the seller (default: the model's maker). `at` is when the
    call was made: a datetime (naive means UTC; it picks the hour's price where prices change
    with the hour) or a date; by default the body's own timestamp (OpenAI's ``created``), else
    today. A price older than `STALE_AFTER_DAYS` warns and never fails: this records a cost, it
    does not quote one. `batch` applies the model's batch prices, as in `call_cost`. `tier`
    ("flex" or "priority") is the service tier the call ran in; by default the body's own
    ``service_tier`` (OpenAI reports the tier that served the call); a tier without a price
    that day costs the standard price, said in `notes`.
    """
    read = read_usage(response, provider, model=model)
    if read.model is None:
        raise InputError("the response names no model; pass `model=`", field="model")
    day, moment = _when(at, read.created)
    row = (table or price_table()).lookup(
        read.model, on=day, warn=False, provider=read.provider, at=moment
    )
    row.warn_if_stale(day, soft=True, stacklevel=2)
    cost = unit_price(
        row,
        prompt_tokens=read.prompt_tokens,
        completion_tokens=read.completion_tokens,
        reasoning_tokens=read.reasoning_tokens,
        cached_tokens=read.cached_tokens,
        cache_write_tokens=read.cache_write_tokens,
        batch=bool(batch),
        reasoning_in_completion=True,
        on=day,
        tier=tier if tier is not None else _served_tier(response, batch=bool(batch)),
        strict=False,
    )
    if read.notes:
        cost = replace(cost, notes="; ".join(n for n in (*read.notes, cost.notes) if n))
    return cost
