"""Production at a glance: a shipped cap's call log against its plan (`cotplan monitor`) and
the gateway's banner (`cotplan serve`).

Monitor tables come two narrow ones at a time rather than one wide one, so each fits an
80-column terminal.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from cotplan.production.monitor import MonitorReport, SizeLine
    from cotplan.production.serve_setup import Served

__all__ = ["print_gateway_banner", "print_monitor"]


def _number(value: float, digits: int = 2) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


def _money(value: float) -> str:
    return "–" if math.isnan(value) else f"${value:.6f}"


def print_monitor(console: Console, report: MonitorReport) -> None:
    """The call log by size against the plan's calibration, the certified exit's stops, the
    spend, the notes and the error test's verdict (red when its alarm fires)."""
    if report.calls == 0:
        # A gateway just started has logged nothing yet: normal, so no error and no empty
        # tables that would read as a plan with no sizes.
        others = (
            f" of the plan's model ({report.other_models} for others)"
            if report.other_models
            else ""
        )
        console.print(f"no calls logged yet{others} in {report.log}: nothing to compare")
        return
    under = f" ({report.exit_calls} under the certified exit)" if report.exit_calls else ""
    console.print(f"{report.calls} calls in {report.log}{under}")
    fixed = [line for line in report.sizes if not line.exit_rule]
    if fixed:
        _print_fixed(console, fixed)
    exits = [line for line in report.sizes if line.exit_rule]
    if exits:
        _print_exits(console, exits)
    console.print(
        f"spend {_money(report.spend_usd)} (projected {_money(report.projected_usd)}); "
        f"reasoning tokens {report.reasoning_tokens} (projected "
        f"{_number(report.projected_reasoning_tokens, 0)})"
    )
    for note in report.notes:
        console.print(f"note: {note}")
    if report.test is not None:
        style = "bold red" if report.test.alarm else "green"
        console.print(f"[{style}]{report.test.verdict}[/]")


def _wrong(line: SizeLine) -> str:
    return f"{line.label_errors}/{line.labelled}" if line.labelled else "–"


def _print_fixed(console: Console, lines: list[SizeLine]) -> None:
    # Two narrow tables rather than one wide one: each fits an 80-column terminal.
    caps = Table(title="the cap, by size", box=box.SIMPLE_HEAD)
    spend = Table(title="spend per call, by size", box=box.SIMPLE_HEAD)
    for name in ("n", "cap", "basis", "calls", "bit", "calib.", "forced", "calib.", "wrong"):
        caps.add_column(name, justify="left" if name == "basis" else "right")
    for name in ("n", "cap", "reasoning", "calib.", "spend", "projected"):
        spend.add_column(name, justify="right")
    for line in lines:
        size = f"{line.size:g}"
        caps.add_row(
            size,
            str(line.cap),
            line.basis,
            str(line.calls),
            _number(line.cap_bitten),
            _number(line.predicted_bitten),
            _number(line.answer_forced),
            _number(line.predicted_forced),
            _wrong(line),
        )
        spend.add_row(
            size,
            str(line.cap),
            _number(line.reasoning_tokens, 1),
            _number(line.predicted_reasoning_tokens, 1),
            _money(line.cost_usd / line.calls),
            _money(line.projected_cost_usd / line.calls),
        )
    console.print(caps)
    console.print(spend)


def _print_exits(console: Console, lines: list[SizeLine]) -> None:
    # "bit" is the share that ran to the ceiling, beside the exit replayed on the calibration,
    # never beside the fixed cap's bite rate (see cotplan.production.monitor).
    stops = Table(title="the certified exit: where it stopped, by size", box=box.SIMPLE_HEAD)
    spend = Table(title="the certified exit: spend per call, by size", box=box.SIMPLE_HEAD)
    for name in ("n", "ceiling", "calls", "rule", "ended", "at cap", "bit", "calib.", "wrong"):
        stops.add_column(name, justify="right")
    # Its replayed reasoning is the replayed stop k plus probe answers: no column for it.
    for name in ("n", "stop k", "calib.", "probes", "calib.", "share", "reasoning", "spend"):
        spend.add_column(name, justify="right")
    for line in lines:
        size = f"{line.size:g}"
        stops.add_row(
            size,
            str(line.cap),
            str(line.calls),
            str(line.by_rule),
            str(line.by_end),
            str(line.by_ceiling),
            _number(line.cap_bitten),
            _number(line.predicted_bitten),
            _wrong(line),
        )
        spend.add_row(
            size,
            _number(line.stop_k, 1),
            _number(line.predicted_stop_k, 1),
            _number(line.probe_tokens / line.calls, 1),
            _number(line.predicted_probe_tokens, 1),
            _number(line.probe_share),
            _number(line.reasoning_tokens, 1),
            _money(line.cost_usd / line.calls),
        )
    console.print(stops)
    for size, rule in dict.fromkeys((f"{line.size:g}", line.exit_rule) for line in lines):
        console.print(f"  rule at n = {size}: {rule}")
    console.print(spend)


def print_gateway_banner(
    console: Console,
    served: Served,
) -> None:
    """What `cotplan serve` says before it listens: the plans served where, the upstream as
    detected (or declared), the client keys, and the certified exit per size."""
    gateway, exits = served.gateway, served.exits
    models = ", ".join(f"{p.model or '(no model recorded)'} (ε = {p.eps:g})" for p in served.plans)
    console.print(
        f"serving the plans for {models} on http://127.0.0.1:{gateway.port}/v1 → "
        f"{served.upstream}; call log: {served.log.path}",
        highlight=False,
    )
    how = (
        f"{gateway.detected.provider}: {gateway.detected.note}"
        if gateway.detected is not None
        else f"{served.provider} (declared)"
    )
    console.print(
        f"upstream: {how}; client keys: {len(served.client_keys) or 'none (no authentication)'}; "
        "/health, /ready, /metrics; SIGHUP reloads the plans",
        highlight=False,
    )
    if exits is not None:
        sizes = ", ".join(
            f"n = {n}: {rule.rule.name} under {rule.ceiling}, probes every {rule.every}"
            for n, rule in sorted(exits.sizes.items())
        )
        console.print(f"certified early exit ({sizes})", highlight=False)
