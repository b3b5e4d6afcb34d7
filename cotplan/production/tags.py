"""A call's tags (team, feature, cost centre): who made it, for spend by tag at month end.

Tags come from the call itself: the request's ``metadata`` (OpenAI's own field for the
caller's labels; string values, cotplan's ``cotplan_*`` keys left out), a ``tags={...}``
argument to a capped client's ``create`` (not forwarded), and at the gateway an
``X-Cotplan-Tags`` header (``team=search, feature=autocomplete``, or a JSON object). Later
sources win: metadata, then the header, then ``tags``. They are written into the call log's
``tags`` column as a JSON object (`encode_tags`) and read back by `decode_tags`, which
`cotplan cost actuals --by team,feature` uses when actuals come from the call log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from cotplan.errors import InputError

__all__ = [
    "TAGS_HEADER",
    "call_tags",
    "decode_tags",
    "encode_tags",
    "parse_tag_header",
    "with_header_tags",
]

TAGS_HEADER = "X-Cotplan-Tags"
#: A tag's name and value are labels, not documents.
_MAX_CHARS = 200


def _check(name: object, value: object, field: str) -> tuple[str, str]:
    if not isinstance(name, str) or not isinstance(value, str):
        raise InputError(f"tags are text, got {name!r}: {value!r}", field=field)
    name, value = name.strip(), value.strip()
    if not name or len(name) > _MAX_CHARS or len(value) > _MAX_CHARS:
        raise InputError(
            f"a tag needs a name, and name and value of at most {_MAX_CHARS} characters; "
            f"got {name!r}: {value[:40]!r}",
            field=field,
        )
    return name, value


def parse_tag_header(text: str) -> dict[str, str]:
    """The gateway header's tags: ``team=search, feature=autocomplete`` or a JSON object."""
    stripped = text.strip()
    if stripped.startswith("{"):
        from cotplan.io import parse_json

        given = parse_json(stripped, source=TAGS_HEADER)
        if not isinstance(given, dict):
            raise InputError("must be a JSON object of text values", field=TAGS_HEADER)
        pairs = list(given.items())
    else:
        pairs = []
        for part in filter(None, (p.strip() for p in stripped.split(","))):
            name, sep, value = part.partition("=")
            if not sep:
                raise InputError(
                    f"must be name=value pairs, e.g. team=search, got {part!r}",
                    field=TAGS_HEADER,
                )
            pairs.append((name, value))
    return dict(_check(name, value, TAGS_HEADER) for name, value in pairs)


def with_header_tags(arguments: dict[str, Any], header: str | None) -> dict[str, Any]:
    """The gateway's `create` arguments with the header's tags under ``tags`` (the body's own
    ``tags`` win; one that is not an object is left for the wrapper to refuse, naming it)."""
    if header is None:
        return arguments
    given = arguments.get("tags")
    tagged = parse_tag_header(header)
    merged = {**tagged, **given} if isinstance(given, dict) else given or tagged
    return {**arguments, "tags": merged}


def call_tags(metadata: object, given: object = None, header: str | None = None) -> dict[str, str]:
    """One call's tags: its `metadata`'s text values (``cotplan_*`` keys are cotplan's own
    settings, not tags), then the gateway's `header`, then `given` (the ``tags`` argument)."""
    out: dict[str, str] = {}
    if isinstance(metadata, Mapping):
        for name, value in metadata.items():
            if isinstance(value, str) and not str(name).startswith("cotplan_") and value.strip():
                key, text = _check(name, value, "metadata")
                out[key] = text
    if header:
        out.update(parse_tag_header(header))
    if given is not None:
        if not isinstance(given, Mapping):
            raise InputError(f"must be a mapping of tag names to text, got {given!r}", field="tags")
        out.update(_check(name, value, "tags") for name, value in given.items())
    return {k: v for k, v in out.items() if v}


def encode_tags(tags: Mapping[str, str]) -> str:
    """The log column's text: a JSON object with sorted keys ("" for no tags)."""
    return json.dumps(dict(sorted(tags.items())), ensure_ascii=False) if tags else ""


def decode_tags(text: str | None) -> dict[str, str]:
    """The tags of a log row ("" or NULL: none; a row someone edited into something else than
    an object of text reads as untagged rather than failing the month's report)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}
