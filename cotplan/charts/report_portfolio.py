"""The sections of report.html for a `cost project --portfolio` folder (see
`cotplan.charts.report_page`), read from its files (portfolio_months.csv,
portfolio_workloads.csv, portfolio_total.csv).

The answer first: the company's P10/P50/P90 over the horizon and per month (percentiles of the
draws added workload by workload, not sums of percentiles), with what adding each workload's
P90 would have said. Then the charts: the monthly spend band (P10 to P90 around the P50), each
workload's mean month by month, stacked, and each workload's band over the horizon; then the
per-workload table and the statistics. Amounts are the files', in USD.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from cotplan.charts.report_html import is_nan, table
from cotplan.charts.report_spend import (
    Reader,
    Sections,
    figure_sections,
    frame_table_section,
    spend_band_chart,
)

__all__ = ["portfolio_sections"]

_BANDS = ("p10_usd", "p50_usd", "p90_usd", "mean_usd")


def _usd(value: Any) -> str:
    return "–" if value is None or is_nan(value) else f"${float(value):,.0f}"


def portfolio_sections(csv: Reader) -> Sections:
    """A portfolio folder's (answer, charts, statistics)."""
    months, workloads, total = (csv(f"portfolio_{name}.csv") for name in
                                ("months", "workloads", "total"))  # fmt: skip
    answer: list[str] = []
    summary = None if total is None or total.empty else total.iloc[0]
    if summary is not None:
        line = (
            f"Portfolio of {int(summary['workloads'])} workloads, {summary['label']}: "
            f"P50 {_usd(summary['p50_usd'])} (P10 {_usd(summary['p10_usd'])}, "
            f"P90 {_usd(summary['p90_usd'])}; mean {_usd(summary['mean_usd'])})."
        )
        added = (
            f"Adding each workload's P90 would say {_usd(summary['sum_of_p90_usd'])}: the "
            "workloads' surprises do not all come at once (shared growth shock: sd "
            f"{float(summary['growth_sd']):g} a month)."
        )
        answer += [f"<p><b>{html.escape(line)}</b></p>", f"<p>{html.escape(added)}</p>"]
        rate = summary.get("rate")
        if isinstance(rate, str) and rate:
            # The terminal showed another currency; this page, like the files, is in USD.
            shown = f"The command printed {rate.split(';')[0]}; this page is in USD."
            answer.append(f'<p class="note">{html.escape(shown)}</p>')
    if months is not None and not months.empty:
        rows = [[str(r["label"]), *(_usd(r[k]) for k in _BANDS)] for r in months.to_dict("records")]
        if summary is not None:
            rows.append(["total", *(_usd(summary[k]) for k in _BANDS)])
        answer += [
            "<h2>Portfolio spend (USD): P10, P50, P90 per month</h2>",
            table(["month", "P10", "P50", "P90", "mean"], rows, text={0}),
        ]
    charts = figure_sections(
        [
            ("Company spend per month: the P50, with the band from P10 to P90.",
             spend_band_chart(months, "label:O")),
            ("Each workload's mean spend per month, stacked: the months' means add up.",
             _stacked_chart(months, workloads)),
            ("Each workload's spend over the horizon at list price: P50, with the P10 to P90 "
             "band.", _workloads_chart(workloads)),
        ]
    )  # fmt: skip
    # The per-workload view belongs with the charts, before the statistics.
    charts += _workload_table(workloads)
    statistics = frame_table_section("Horizon", "portfolio_total.csv", total)
    statistics += frame_table_section("Months", "portfolio_months.csv", months)
    return answer, charts, (["<h2>Statistics</h2>", *statistics] if statistics else [])


def _workload_table(workloads: pd.DataFrame | None) -> list[str]:
    if workloads is None or workloads.empty:
        return []
    tags = [c for c in ("team", "feature") if c in workloads]
    rows = []
    for r in workloads.to_dict("records"):
        labels = ["" if is_nan(r[t]) else str(r[t]) for t in tags]
        rows.append([str(r["workload"]), str(r["model"]), str(r["provider"]), *labels,
                     _usd(r["p10_usd"]), _usd(r["p50_usd"]), _usd(r["p90_usd"]),
                     f"{float(r['share']):.1%}"])  # fmt: skip
    head = ["workload", "model", "provider", *tags, "P10", "P50", "P90", "share"]
    return [
        "<h2>Per workload, over the horizon (USD, list price)</h2>",
        table(head, rows, text=set(range(3 + len(tags)))),
    ]


def _stacked_chart(months: pd.DataFrame | None, workloads: pd.DataFrame | None) -> Any:
    if months is None or months.empty or workloads is None or workloads.empty:
        return None
    import altair as alt

    columns = {f"{name} mean_usd": str(name) for name in workloads["workload"]}
    present = [c for c in columns if c in months]
    if not present:
        return None
    long = months[["label", *present]].melt(id_vars="label", var_name="column",
                                            value_name="usd")  # fmt: skip
    long["workload"] = long["column"].map(columns)
    return (
        alt.Chart(long.drop(columns="column"))
        .mark_area()
        .encode(x=alt.X("label:O", title="month"),
                y=alt.Y("usd:Q", stack="zero", title="USD a month (mean)"),
                color=alt.Color("workload:N", title="workload"))
        .properties(width=560, height=260)
    )  # fmt: skip


def _workloads_chart(workloads: pd.DataFrame | None) -> Any:
    if workloads is None or workloads.empty:
        return None
    import altair as alt

    y = alt.Y("workload:N", title=None, sort=None)
    band = (
        alt.Chart(workloads)
        .mark_rule(strokeWidth=3)
        .encode(y=y, x=alt.X("p10_usd:Q", title="USD over the horizon"), x2="p90_usd:Q")
    )
    point = alt.Chart(workloads).mark_point(filled=True, size=60).encode(y=y, x="p50_usd:Q")
    return alt.layer(band, point).properties(width=480, height=40 * len(workloads))
