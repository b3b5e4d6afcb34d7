"""Token counts as a line says them: the counts when they are a measurement, "unknown" when
any call's could not be trusted (`Usage.known`), never placeholder 0s read as counts."""

from __future__ import annotations

from cotplan.backends.base import Usage

__all__ = ["usage_phrase"]


def usage_phrase(usage: Usage) -> str:
    """``"120 prompt + 8 completion tokens"``, or the counts unknown and why."""
    prompt, completion = usage.known("prompt_tokens"), usage.known("completion_tokens")
    if prompt is None or completion is None:
        return "token counts unknown (the server's could not be trusted)"
    return f"{prompt} prompt + {completion} completion tokens"
