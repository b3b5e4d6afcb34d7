"""The plan's cap as a LiteLLM callback, for teams that already run LiteLLM (`cotplan[litellm]`).

    # proxy config.yaml                           # or, with the SDK:
    litellm_settings:                             litellm.callbacks = [
      callbacks: my_hooks.cap                         CotplanCallback("plan.json")]
    # my_hooks.py
    from cotplan.production.litellm_hook import CotplanCallback
    cap = CotplanCallback("plan.json")

`CotplanCallback(plan)` is a `litellm.integrations.custom_logger.CustomLogger`:

- its pre-call hook (`async_pre_call_hook`, the proxy's entry point; `capped_request` does the
  same for a direct SDK call) takes the call's item size n (the body's `size`, or
  `metadata["cotplan_size"]`), refuses a plan made for another model or protocol (unless
  `allow_other_model`), and sets the plan's request fields for that size
  (`SavedPlan.request_fields(n)`, room for the answer included where one field caps both),
  overriding the caller's own;
- its success hooks write the same row the wrapper and the gateway write to the call log
  (`cotplan.production.log`), with ``via = "litellm"``, ``mode = "fields"`` and the reply's id
  as `call_id`, so `cotplan monitor` reads all three alike.

What it cannot do: force an answer. A callback only shapes the request; where the provider
enforces the cap on hidden reasoning (OpenAI's o-series, Claude), or the server ends visible
thinking at a budget itself (``provider="llama.cpp-thinking"``, ``"vllm-thinking"``,
``"sglang-thinking"``, or ``api_base=`` to ask the server once, `cotplan.production.detect`),
that is all a cap needs, and the callback sets that field. A model that thinks in visible text
on a server without a thinking budget of its own would be cut mid-thought by a plain
`max_tokens`, with no answer: such a plan is refused when the callback is made (`InputError`
naming `provider`, with the fix), unless `allow_cut_answers=True`. For those models, point
LiteLLM's `api_base` at `cotplan serve` instead (docs/shipping.md), which forces the answer.

Nothing here downloads: importing this module sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless
it is already set) before LiteLLM is imported, since LiteLLM otherwise fetches its price map from
the network at import; LiteLLM then reads the copy it ships.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import openai
from litellm.integrations.custom_logger import CustomLogger

from cotplan.backends.budgets import rule_for_model
from cotplan.errors import InputError
from cotplan.generate.protocols import resolve_protocol
from cotplan.planner import SavedPlan
from cotplan.planner.binding import check_plan_model, check_plan_protocol
from cotplan.production.calls import (
    DEFAULT_ANSWER_TOKENS,
    cap_at,
    cost_of_requests,
    provider_of,
    usage_of,
)
from cotplan.production.detect import detect_provider
from cotplan.production.log import CallLog, LogRecord
from cotplan.production.server_cap import estimated_tokens, reasoning_of, server_capped

__all__ = ["CotplanCallback"]

#: LiteLLM's provider prefixes whose budget rules cotplan knows by another name; any other
#: prefix, or a custom `api_base`, is an OpenAI-compatible server.
_PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "deepseek": "deepseek",
    "xai": "xai",
    "openrouter": "openrouter",
}

#: Where the pre-call hook leaves what it applied, for the success hook to log.
_KEY = "cotplan"


def _refuse_visible_thinking(model: str | None, provider: str | None) -> None:
    """Refuse, at start-up, a plan whose model thinks in visible text when the upstream
    cannot end that thinking itself: a callback only sets request fields, and a plain
    `max_tokens` cuts such a model mid-thought with no answer."""
    if not model:
        return
    rule = rule_for_model(provider or "openai-compatible", model)
    if rule.covers == "reasoning+output" or server_capped(rule):
        return  # the provider caps hidden reasoning, or the server ends the thinking
    raise InputError(
        f"{model!r} thinks in visible text, and {provider or 'an OpenAI-compatible server'} "
        "cannot end that thinking at a budget: a max_tokens cap would cut it mid-thought "
        "with no answer. Fix: point LiteLLM's api_base at `cotplan serve` (it forces the "
        "answer) and leave this callback out; or, if the server caps thinking itself, say "
        "so (provider='llama.cpp-thinking', 'vllm-thinking', 'sglang-thinking' or "
        "'nim-thinking', or "
        "api_base=... to ask it); allow_cut_answers=True accepts cut answers",
        field="provider",
    )


class CotplanCallback(CustomLogger):
    """A plan's cap as a LiteLLM callback (see the module). `plan` is a `SavedPlan` or a
    plan.json path; `size` a default item size for calls that give none; `provider` the
    budget rule's provider (default: from the model's LiteLLM prefix and `api_base`); `log`
    the call log (None: the default file; False: none); `api_base` the server to ask once
    what it can cap; `allow_cut_answers` accepts a visible thinker on a server that cannot
    end its thinking (see the module)."""

    def __init__(
        self,
        plan: SavedPlan | str | Path,
        *,
        size: float | None = None,
        provider: str | None = None,
        allow_other_model: bool = False,
        log: CallLog | str | Path | bool | None = None,
        api_base: str | None = None,
        allow_cut_answers: bool = False,
    ) -> None:
        super().__init__()
        self.plan = SavedPlan.load(Path(plan)) if isinstance(plan, str | Path) else plan
        if not isinstance(self.plan, SavedPlan):
            raise InputError(f"must be a SavedPlan or a path, got {plan!r}", field="plan")
        if provider is None and api_base is not None:
            # Asked once, now: whether the server behind `api_base` caps thinking itself.
            asker = openai.OpenAI(base_url=api_base, api_key="no-key-needed", max_retries=0)
            provider = detect_provider(asker).provider
        if provider is not None:
            rule_for_model(provider, "")  # an unknown provider fails here, not at a call
        if not allow_cut_answers:
            _refuse_visible_thinking(self.plan.model, provider)
        self.size = size
        self.provider = provider
        self.allow_other_model = allow_other_model
        if log is False:
            self.log: CallLog | None = None
        elif log is None or log is True or isinstance(log, str | Path):
            self.log = CallLog(None if isinstance(log, bool) else log)
        else:
            self.log = log

    # -- before the call ------------------------------------------------------------------

    def capped_request(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` (the arguments of `litellm.completion`, or a proxy request body) with the
        plan's request fields set; raises `InputError` naming the field it cannot cap."""
        out = dict(data)
        served = out.get("model")
        if not isinstance(served, str) or not served:
            raise InputError(f"must be a model name, got {served!r}", field="model")
        prefix, _, bare = served.partition("/")
        model = bare if bare and prefix in {*_PROVIDERS, "hosted_vllm", "ollama"} else served
        if out.get("tools"):
            raise InputError(
                "tool calls are not capped by a plan calibrated on answers: call without "
                "tools, or route around the callback",
                field="tools",
            )
        note = self._check_binding(model)
        metadata = dict(out.get("metadata") or {})
        size = out.pop("size", None)
        size = metadata.pop("cotplan_size", None) if size is None else size
        size = self.size if size is None else size
        if isinstance(size, bool) or not isinstance(size, int | float) or not size > 0:
            raise InputError(
                f"give the call's item size n as `size` (or metadata cotplan_size), got {size!r}",
                field="size",
            )
        cap = cap_at(self.plan, float(size))
        provider = self.provider or self._provider(prefix if bare else "", out.get("api_base"))
        room = out.get("max_tokens") or out.get("max_completion_tokens") or DEFAULT_ANSWER_TOKENS
        fields = self.plan.request_fields(float(size), answer_tokens=int(room), provider=provider)
        for name in ("max_tokens", "max_completion_tokens"):
            out.pop(name, None)  # the plan's cap replaces the caller's
        out.update(fields)
        metadata[_KEY] = {
            "size": float(size),
            "cap": cap.tokens,
            "basis": cap.basis,
            "model": model,
            "note": "; ".join(p for p in (note, cap.note) if p),
        }
        out["metadata"] = metadata
        return out

    def _check_binding(self, model: str) -> str:
        try:
            note = check_plan_model(self.plan, model, allow_other_model=self.allow_other_model)
        except InputError as exc:
            raise InputError(
                f"the plan was made for model {self.plan.model!r}, not {model!r}: calibrate "
                "this one, or CotplanCallback(..., allow_other_model=True)",
                field="model",
            ) from exc
        protocol, _ = resolve_protocol(model)
        protocol_note = check_plan_protocol(
            self.plan, protocol, allow_other_model=self.allow_other_model
        )
        return "; ".join(p for p in (note, protocol_note) if p)

    @staticmethod
    def _provider(prefix: str, api_base: object) -> str:
        if api_base:
            return provider_of(api_base)
        return _PROVIDERS.get(prefix, "openai-compatible" if prefix else "openai")

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any]:
        """The proxy's pre-call hook: the request with the plan's fields (`capped_request`)."""
        if call_type not in ("completion", "acompletion"):
            return data
        return self.capped_request(data)

    # -- after the call ---------------------------------------------------------------------

    def log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._record(kwargs, response_obj)

    async def async_log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._record(kwargs, response_obj)

    def _record(self, kwargs: dict[str, Any], response: Any) -> None:
        params = kwargs.get("litellm_params") or {}
        applied = (params.get("metadata") or {}).get(_KEY)
        if self.log is None or not isinstance(applied, dict):
            return  # a call this callback did not cap (another route, an embedding ...)
        usage = usage_of(getattr(response, "usage", None))
        choices = getattr(response, "choices", None) or [None]
        finish = str(getattr(choices[0], "finish_reason", "") or "")
        cost, _ = cost_of_requests(applied["model"], [usage])
        reasoning = usage.reasoning_tokens
        if not reasoning:
            # llama.cpp leaves the thinking out of its usage; counted from the text it
            # returned (an estimate: a log callback cannot ask the server's tokenizer).
            thinking = "".join(reasoning_of(getattr(c, "message", None)) for c in choices)
            reasoning = min(estimated_tokens(thinking), usage.completion_tokens)
        self.log.append(
            LogRecord(
                time=datetime.now(UTC).isoformat(timespec="seconds"),
                model=applied["model"],
                size=applied["size"],
                cap=applied["cap"],
                basis=applied["basis"],
                mode="fields",
                # Counts the upstream never measured are unknown (NULL), not 0.
                reasoning_tokens=reasoning if usage.trusted else None,
                answer_tokens=usage.completion_tokens - reasoning if usage.trusted else None,
                prompt_tokens=usage.prompt_tokens if usage.trusted else None,
                cap_bitten=finish == "length" or reasoning >= applied["cap"] > 0,
                answer_forced=False,
                cost_usd=cost,
                via="litellm",
                call_id=str(getattr(response, "id", "") or ""),
                usage_trusted=usage.trusted,
            )
        )
