"""The gateway's Prometheus metrics (``GET /metrics``), by route and model.

What a platform team scrapes from a proxy: calls by status, the tokens the cap governs
(reasoning and answer), how often the cap bit and an answer was forced, errors by OpenAI error
type, and each call's latency. Each app has a registry of its own (`prometheus_client`), so
that several gateways in one process (tests, notebooks) do not share counts. Several worker
processes (`cotplan serve --workers N`) share theirs through prometheus-client's multiprocess
mode, and each reports the sum.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

__all__ = ["CONTENT_TYPE_LATEST", "MULTIPROC_ENV", "GatewayMetrics"]

#: prometheus-client reads its multiprocess folder from this variable (set by the parent of
#: several workers, before they start).
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

_LABELS = ("route", "model")
#: Latency buckets (seconds): a capped call runs from a fraction of a second to minutes.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class GatewayMetrics:
    """The counters and histograms of one gateway app (see the module)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "cotplan_requests", "Calls answered, by HTTP status", [*_LABELS, "status"], registry=r
        )
        self.reasoning = Counter(
            "cotplan_reasoning_tokens", "Reasoning tokens of capped calls", _LABELS, registry=r
        )
        self.answer = Counter(
            "cotplan_answer_tokens", "Answer tokens of capped calls", _LABELS, registry=r
        )
        self.prompt = Counter(
            "cotplan_prompt_tokens", "Prompt tokens of capped calls", _LABELS, registry=r
        )
        self.bites = Counter(
            "cotplan_cap_bites", "Calls whose thinking the cap stopped", _LABELS, registry=r
        )
        self.forced = Counter(
            "cotplan_forced_answers", "Answers forced after a cut thought", _LABELS, registry=r
        )
        self.missing = Counter(
            "cotplan_missing_answers",
            "Completions that ended before any answer",
            _LABELS,
            registry=r,
        )
        self.errors = Counter(
            "cotplan_errors", "Failed calls, by OpenAI error type", [*_LABELS, "type"], registry=r
        )
        self.latency = Histogram(
            "cotplan_request_seconds",
            "Seconds from the request to the end of the reply",
            _LABELS,
            buckets=_BUCKETS,
            registry=r,
        )
        #: Each metric by the report field (or "latency") it counts, and their children by
        #: route and model (and status), made on first use (a bounded set: routes and models
        #: are the plans', or a name a client sent, which `labels` would keep as well).
        self._per_call: dict[str, Any] = {
            "latency": self.latency,
            "reasoning_tokens": self.reasoning,
            "answer_tokens": self.answer,
            "prompt_tokens": self.prompt,
            "cap_bitten": self.bites,
            "answer_forced": self.forced,
            "answer_missing": self.missing,
        }
        self._children: dict[tuple[str, str], dict[str, Any]] = {}
        self._requests: dict[tuple[str, str, str], Any] = {}

    def observe(
        self,
        route: str,
        model: str,
        *,
        status: int,
        seconds: float,
        report: Mapping[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        """Count one call: its status and latency, its report's tokens and flags, its error."""
        labels = {"route": route, "model": model}
        key = (route, model, str(status))
        requests = self._requests.get(key)
        if requests is None:  # `labels` checks and hashes its values: once per key, not per call
            requests = self._requests[key] = self.requests.labels(**labels, status=key[2])
        requests.inc()
        pair = (route, model)
        children = self._children.get(pair)
        if children is None:
            children = self._children[pair] = {
                name: metric.labels(**labels) for name, metric in self._per_call.items()
            }
        children["latency"].observe(seconds)
        if error is not None:
            self.errors.labels(**labels, type=error).inc()
        if not report:
            return
        for name in ("reasoning_tokens", "answer_tokens", "prompt_tokens"):
            value = report.get(name)
            if isinstance(value, int) and value > 0:
                children[name].inc(value)
        for name in ("cap_bitten", "answer_forced", "answer_missing"):
            if report.get(name) is True:
                children[name].inc()

    def render(self) -> bytes:
        """The text exposition format Prometheus scrapes. Under several workers
        (`cotplan.production.gateway_workers`: prometheus-client's multiprocess folder is
        set), the sum over every worker, whichever answers the scrape."""
        if os.environ.get(MULTIPROC_ENV):
            merged = CollectorRegistry()
            MultiProcessCollector(merged)  # type: ignore[no-untyped-call]
            return generate_latest(merged)
        return generate_latest(self.registry)
