"""An item's size `n`: the item's own when it has one, else the prompt's token count.

What `n` means is the task author's call (examples in context, items to track, words); the
built-in families always set it. For a user's item without `n` the fallback is the number of
prompt tokens, which is the paper's reading of n for in-context examples and the one quantity
every prompt has. Callers that fall back should say so in their output; `size_source` tells them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from cotplan.errors import InputError
from cotplan.tasks.item import TaskItem

__all__ = ["item_size", "size_source"]


def size_source(item: TaskItem) -> Literal["n", "prompt tokens"]:
    """Where `item_size` takes the size of `item` from."""
    return "n" if item.n is not None else "prompt tokens"


def item_size(
    item: TaskItem,
    *,
    model: str | None = None,
    counter: Callable[[str], int] | None = None,
) -> int:
    """`item.n`, or the prompt's token count by `counter` (e.g. `backend.count_tokens`) or by
    the tokenizer of `model`. Message prompts count the text of all their messages."""
    if item.n is not None:
        return item.n
    text = (
        item.prompt
        if isinstance(item.prompt, str)
        else "\n".join(m["content"] for m in item.prompt)
    )
    if counter is not None:
        size = int(counter(text))
    elif model is not None:
        from cotplan.backends.tokens import count_tokens  # lazy: tokenizers load slowly

        size = int(count_tokens(text, model))
    else:
        raise InputError(
            f"item {item.id!r} has no `n`; pass `model` or `counter` to use its prompt's "
            "token count",
            field="n",
        )
    return max(size, 1)
