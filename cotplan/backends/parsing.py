"""Reading an OpenAI-compatible response dict into cotplan's records.

Responses are plain dicts (`model_dump()` of the SDK's objects), because llama.cpp's
/v1/completions logprobs come in its own shape that the SDK's typed objects drop. Token counts
a server reports are read as they are, and flagged, not trusted, when they cannot be right
(`read_usage`): a cost computed from them would be wrong without saying so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from cotplan.backends.base import Completion, TokenLogprob, Usage
from cotplan.backends.known_models import family_of
from cotplan.errors import ResponseFormatError

__all__ = [
    "ABSURD_TOKENS",
    "REASONING_FIELDS",
    "is_reasoning_model",
    "parse_completion",
    "parse_prompt_logprobs",
    "parse_top_logprobs",
    "read_usage",
    "reasoning_text",
    "request_cap",
    "split_thinking",
]


def is_reasoning_model(model: str) -> bool:
    """Whether `model` reasons in hidden tokens (`cotplan.backends.known_models`): such models take
    `max_completion_tokens` and `reasoning_effort`, and refuse logprobs and temperature."""
    family = family_of(model)
    return family is not None and family.reasoning


# -- usage ------------------------------------------------------------------------------------

#: More tokens than any model reads or writes in one call (the longest contexts are ~10^7):
#: a count above it is a server's bug, not a bill.
ABSURD_TOKENS = 100_000_000

#: Where each `Usage` count is read from, in the response's `usage` object.
_COUNTS = (
    ("prompt_tokens", ("prompt_tokens",)),
    ("completion_tokens", ("completion_tokens",)),
    ("reasoning_tokens", ("completion_tokens_details", "reasoning_tokens")),
    ("cached_tokens", ("prompt_tokens_details", "cached_tokens")),
)

#: Request fields that cap what a call may generate (`cotplan.backends.budgets.cap_fields`).
_CAP_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def _count(usage: Mapping[str, Any], path: tuple[str, ...], notes: list[str]) -> int:
    value: object = usage
    for name in path:
        if not isinstance(value, Mapping):
            if value is not None:
                notes.append(f"`usage.{'.'.join(path[:-1])}` is not an object")
            return 0  # servers leave out the details objects they do not fill
        value = value.get(name)
    field = "usage." + ".".join(path)
    if value is None:
        if len(path) == 1:  # the two counts every OpenAI-compatible server must send
            notes.append(f"`{field}` is missing")
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        notes.append(f"`{field}` = {value!r:.40} is not a whole number")
        return 0
    if value < 0:
        notes.append(f"`{field}` = {value} is negative")
        return 0
    if value > ABSURD_TOKENS:
        notes.append(f"`{field}` = {value} is more than any call can use")
        return 0
    return value


def read_usage(raw: object, *, cap: int | None = None) -> tuple[Usage, tuple[str, ...]]:
    """The call's `Usage`, and why it cannot be trusted (empty when it can).

    A count that is missing, negative, not a whole number or absurd (more completion tokens
    than twice the request's cap `cap`, reasoning inside completion larger than completion)
    makes a Usage marked ``trusted=False``, with a note naming the field: its counts are
    unknown (`Usage.known` gives None; the 0 in the fields is a placeholder), so that costs,
    savings and budget sharing leave the call out rather than count it as free.
    """
    if raw is None:
        return Usage(trusted=False), ("the server sent no `usage`",)
    if not isinstance(raw, Mapping):
        return Usage(trusted=False), (f"`usage` is not an object: {raw!r:.60}",)
    notes: list[str] = []
    counts = {name: _count(raw, path, notes) for name, path in _COUNTS}
    if raw.get("total_tokens") is not None:
        _count(raw, ("total_tokens",), notes)  # not used, but a bad one says the rest are
    completion = counts["completion_tokens"]
    # Servers overshoot a cap by a token or two (a stop sequence, an end token); more than
    # twice the cap is no overshoot.
    if cap is not None and completion > 2 * cap + 16:
        notes.append(f"`usage.completion_tokens` = {completion} is far above the cap of {cap}")
    if counts["reasoning_tokens"] > completion:
        notes.append(
            f"`usage.completion_tokens_details.reasoning_tokens` = {counts['reasoning_tokens']}"
            f" is more than `usage.completion_tokens` = {completion}"
        )
    if counts["cached_tokens"] > counts["prompt_tokens"]:
        notes.append(
            f"`usage.prompt_tokens_details.cached_tokens` = {counts['cached_tokens']}"
            f" is more than `usage.prompt_tokens` = {counts['prompt_tokens']}"
        )
    return Usage(**counts, trusted=not notes), tuple(notes)


def request_cap(params: Mapping[str, Any] | None) -> int | None:
    """The most tokens the request `params` lets the call generate (None: no cap given)."""
    if not params:
        return None
    for name in _CAP_FIELDS:
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


# -- logprobs ---------------------------------------------------------------------------------


def parse_top_logprobs(logprobs: dict[str, Any] | None) -> list[TokenLogprob]:
    """Per-token logprobs from any of the three shapes servers use.

    - chat (OpenAI, vLLM, llama.cpp): ``{"content": [{"token", "logprob", "top_logprobs": [...]}]}``
    - llama.cpp /v1/completions: the same ``content`` list (its own shape)
    - legacy /v1/completions (OpenAI, vLLM):
      ``{"tokens", "token_logprobs", "top_logprobs": [{token: logprob}]}``
    """
    if not logprobs:
        return []
    content = logprobs.get("content")
    if content:
        return [
            TokenLogprob(
                token=str(entry["token"]),
                logprob=float(entry["logprob"]),
                top=tuple(
                    (str(alt["token"]), float(alt["logprob"]))
                    for alt in entry.get("top_logprobs") or ()
                ),
            )
            for entry in content
        ]
    tokens = logprobs.get("tokens")
    if tokens:
        token_logprobs = logprobs.get("token_logprobs") or [None] * len(tokens)
        tops = logprobs.get("top_logprobs") or [None] * len(tokens)
        return [
            TokenLogprob(
                token=str(token),
                logprob=float(lp) if lp is not None else float("nan"),
                top=tuple((str(t), float(v)) for t, v in (top or {}).items()),
            )
            for token, lp, top in zip(tokens, token_logprobs, tops, strict=False)
        ]
    return []


def parse_prompt_logprobs(raw: dict[str, Any], prompt: str) -> list[tuple[str, dict[str, float]]]:
    """vLLM's ``prompt_logprobs`` answer as ``(token text, {alternative: logprob})`` per token.

    vLLM lists, per prompt position, ``{token id: {logprob, rank, decoded_token}}`` holding the
    top alternatives and the prompt's own token (None at the first position); the prompt's
    token ids come with ``return_token_ids``. The first token's text is what the prompt holds
    before the other tokens' texts (empty for a BOS token).
    """
    try:
        choice = raw["choices"][0]
        entries = choice["prompt_logprobs"]
        token_ids = choice.get("prompt_token_ids")
    except (KeyError, IndexError, TypeError) as exc:
        raise ResponseFormatError("the endpoint returned no prompt_logprobs (is it vLLM?)") from exc
    if not isinstance(entries, list) or not entries:
        raise ResponseFormatError("the endpoint returned no prompt_logprobs (is it vLLM?)")
    if not isinstance(token_ids, list) or len(token_ids) != len(entries):
        raise ResponseFormatError(
            "the endpoint returned no prompt_token_ids matching its prompt_logprobs "
            "(vLLM needs return_token_ids support)"
        )
    rows: list[tuple[str, dict[str, float]]] = []
    for position, (token_id, entry) in enumerate(zip(token_ids, entries, strict=True)):
        if entry is None:
            rows.append(("", {}))
            continue
        try:
            chosen = entry[str(token_id)]
            alternatives: dict[str, float] = {}
            for info in entry.values():
                text, logprob = str(info["decoded_token"]), float(info["logprob"])
                # Two ids can decode to the same text; the likelier one stands for it.
                alternatives[text] = max(alternatives.get(text, -math.inf), logprob)
            rows.append((str(chosen["decoded_token"]), alternatives))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResponseFormatError(
                f"prompt_logprobs at position {position} are malformed: {exc!r}"
            ) from exc
    rest = "".join(text for text, _ in rows[1:])
    if rows[0] == ("", {}) and prompt.endswith(rest):
        rows[0] = (prompt[: len(prompt) - len(rest)], {})
    return rows


# -- the thinking and the answer --------------------------------------------------------------

#: Where servers put the thinking they split from the answer, in the order they are read:
#: vLLM `message.reasoning` (and `reasoning_content` before v0.10), llama.cpp, SGLang and the
#: DeepSeek API `reasoning_content`, Ollama `thinking`, OpenRouter `reasoning`
#: (../shared/reasoning-protocols.md lists the sources).
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")


def reasoning_text(message: dict[str, Any] | None) -> str:
    """The thinking a chat message carries apart from its content ("" when none)."""
    if not message:
        return ""
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            # Servers keep the line breaks around the thinking (llama.cpp the one before
            # `</think>`); `split_thinking` drops them, and a record must not depend on which
            # way the server returned the thinking.
            return value.strip("\n")
    return ""


_THINK_BLOCK = re.compile(r"\A\s*<think>(.*?)</think>\s*", re.DOTALL)


def split_thinking(content: str) -> tuple[str, str]:
    """`(thinking, answer)` of chat content that still holds its `<think>` block: what a server
    without a reasoning parser returns (vLLM without `--reasoning-parser`, or llama.cpp with a
    chat template its parser does not recognise). Content without one is all answer."""
    match = _THINK_BLOCK.match(content)
    if match is None:
        return "", content
    return match.group(1).strip("\n"), content[match.end() :]


def parse_completion(
    raw: dict[str, Any],
    *,
    model: str,
    latency_s: float = 0.0,
    from_cache: bool = False,
    params: Mapping[str, Any] | None = None,
) -> Completion:
    """A `Completion` from a chat or text completion response dict.

    `params` (the request) lets the token counts be judged against the request's cap. A
    ``content: null`` answer is ``no_answer`` (the model said nothing, which is not a wrong
    answer); usage that cannot be trusted is ``usage.trusted = False``, with `notes` saying why.
    """
    try:
        choice = raw["choices"][0]
        message = choice.get("message")
        text = message.get("content") if message is not None else choice.get("text")
        if text is not None and not isinstance(text, str):
            raise TypeError(f"the answer is {type(text).__name__}, not text")
        reasoning = reasoning_text(message)
        if message is not None and not reasoning and text:
            reasoning, text = split_thinking(text)
        parsed = parse_top_logprobs(choice.get("logprobs"))
        usage, notes = read_usage(raw.get("usage"), cap=request_cap(params))
        if text is None:
            notes += ("the server sent no answer (`content: null`)",)
        return Completion(
            reasoning=reasoning,
            text=text or "",
            finish_reason=str(choice.get("finish_reason") or "stop"),
            usage=usage,
            model=model,
            logprobs=tuple(parsed) if parsed else None,
            latency_s=latency_s,
            from_cache=from_cache,
            no_answer=text is None,
            notes=notes,
        )
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise ResponseFormatError(f"unexpected response shape from {model}: {exc!r}") from exc
