"""Every provider export cotplan reads, by its kind: `read_export(kind, path)`."""

from __future__ import annotations

import os
from collections.abc import Callable

from cotplan.errors import InputError
from cotplan.pricing.exports import (
    ExportLine,
    read_anthropic_costs,
    read_anthropic_usage,
    read_openai_costs,
    read_openai_costs_csv,
    read_openai_usage,
)
from cotplan.pricing.exports_gcp import read_gcp_billing_csv

__all__ = ["EXPORT_KINDS", "read_export"]

_READERS: dict[str, Callable[[str | os.PathLike[str]], list[ExportLine]]] = {
    "openai-usage": read_openai_usage,
    "openai-costs": read_openai_costs,
    "openai-costs-csv": read_openai_costs_csv,
    "anthropic-usage": read_anthropic_usage,
    "anthropic-costs": read_anthropic_costs,
    "gcp-billing": read_gcp_billing_csv,
}


#: The kinds `read_export` takes.
EXPORT_KINDS = tuple(_READERS)


def read_export(kind: str, path: str | os.PathLike[str]) -> list[ExportLine]:
    """One export by its kind: ``openai-usage``, ``openai-costs``, ``openai-costs-csv``,
    ``anthropic-usage``, ``anthropic-costs`` or ``gcp-billing``."""
    if kind not in _READERS:
        raise InputError(f"must be one of {', '.join(_READERS)}, got {kind!r}", field="kind")
    lines = _READERS[kind](path)
    if not lines:
        raise InputError("the export holds no results", source=str(path))
    return lines
