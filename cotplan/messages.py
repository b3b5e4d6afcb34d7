"""What a prompt is: text, or a list of chat messages, and the one check every entry point uses.

This sits below both the task sets and the backends, which both speak in prompts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from cotplan.errors import InputError

__all__ = ["ROLES", "Message", "Prompt", "validate_prompt"]

Message = dict[str, str]
Prompt = str | Sequence[Message]

#: The chat roles a message may take.
ROLES = frozenset({"system", "user", "assistant", "developer"})


def validate_prompt(prompt: Prompt, *, field_name: str = "prompt") -> Prompt:
    """Reject empty prompts and malformed message lists before any request is made."""
    if isinstance(prompt, str):
        if not prompt.strip():
            raise InputError("must not be empty", field=field_name)
        return prompt
    if not isinstance(prompt, Sequence) or len(prompt) == 0:
        raise InputError("must be a non-empty string or list of messages", field=field_name)
    for i, message in enumerate(prompt):
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise InputError(
                "each message must be a dict with `role` and `content`",
                field=f"{field_name}[{i}]",
            )
        if message["role"] not in ROLES:
            raise InputError(f"unknown role {message['role']!r}", field=f"{field_name}[{i}].role")
    messages = cast(Sequence[Mapping[str, Any]], prompt)
    if not any(str(m["content"]).strip() for m in messages):
        raise InputError("all messages are empty", field=field_name)
    return prompt
