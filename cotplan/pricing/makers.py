"""Whose model a name is: the seller a bare name means when several providers sell it.

``o3`` is sold by OpenAI and by Azure, ``claude-3-5-haiku`` by Anthropic and by Google's Vertex,
at prices that may differ. A bare name is priced at its maker's list price, as genai-prices'
`calc_price` and LiteLLM's `completion_cost` do without being told, and the cost says which
other providers sell it (`PriceRow.notes`). Only a name whose maker is unknown, or whose maker
does not sell it under that name (``deepseek-r1-distill-llama-70b`` at Groq and OVHcloud), still
needs the provider.

The maker comes from, in order: cotplan's model registry (`cotplan.backends.known_models`, the one
table of model families), the name prefixes below for makers that registry does not list, and
last genai-prices' own rule (the provider whose `model_match` claims the name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from cotplan.backends.known_models import bare_name, family_of
from cotplan.errors import InputError
from cotplan.pricing.rows import PriceRow

__all__ = ["maker_note", "maker_of", "maker_rows", "pick_maker"]

#: Makers the model registry does not list, by name prefix, as genai-prices' provider ids.
_PREFIX_MAKERS: tuple[tuple[str, str], ...] = (
    ("chatgpt", "openai"),
    ("codex", "openai"),
    ("gpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("grok", "x-ai"),
    ("deepseek", "deepseek"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("magistral", "mistral"),
    ("ministral", "mistral"),
    ("codestral", "mistral"),
    ("devstral", "mistral"),
    ("pixtral", "mistral"),
    ("command", "cohere"),
    ("kimi", "moonshotai"),
)


def maker_of(model: str) -> str | None:
    """The maker of `model` by name (genai-prices' provider id), or None when cotplan knows none."""
    family = family_of(model)
    if family is not None:
        return family.vendor
    name = bare_name(model)
    return next((maker for prefix, maker in _PREFIX_MAKERS if name.startswith(prefix)), None)


def pick_maker(model: str, sellers: Sequence[str]) -> str | None:
    """The seller among `sellers` that made `model`, or None when no maker is known."""
    maker = maker_of(model)
    if maker is not None:
        return maker if maker in sellers else None
    from cotplan.pricing.genai import is_home

    # genai-prices' own claim, trusted only when it names one seller: two claims are a guess.
    homes = [s for s in sellers if is_home(s, bare_name(model))]
    return homes[0] if len(homes) == 1 else None


def maker_note(model: str, maker: str, sellers: Sequence[str]) -> str:
    """The note a maker's price carries: who else sells the name, and how to price theirs."""
    others = ", ".join(s for s in sellers if s != maker)
    return (
        f"{model!r} is also sold by {others}; priced at its maker's ({maker}) list price "
        f"(name the provider for another seller's)"
    )


def maker_rows(model: str, by_seller: Mapping[str, Sequence[PriceRow]]) -> list[PriceRow]:
    """The maker's rows of `model` among several sellers' (each noted with the others), or an
    `InputError` on `provider` when no maker is known among them."""
    sellers = list(by_seller)
    maker = pick_maker(model, sellers)
    if maker is None:
        listed = ", ".join(sellers)
        raise InputError(
            f"{model!r} is priced for several providers ({listed}); name one, e.g. "
            f"'{sellers[0]}/{model}' (or pass the provider); none of them is a maker cotplan "
            f"knows for this name",
            field="provider",
        )
    note = maker_note(model, maker, sellers)
    return [replace(r, notes="; ".join(n for n in (note, r.notes) if n)) for r in by_seller[maker]]
