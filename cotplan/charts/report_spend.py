"""The sections of report.html for `cost project` and `monitor` folders (see
`cotplan.charts.report_page`): the answer first, then the charts, then the statistics.

`cost project`: the P10/P50/P90 per year and in total, and each compared scenario's; charts of
the monthly spend band (P10 to P90 around the P50) and of the scenarios' bands. `monitor`: the
calls against the plan by size (the cap, how often it bit and forced the answer beside the
calibration's rates, the spend against the projection); charts of the bite rate and the
reasoning tokens day by day against the cap. Every number is read from the folder's files.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from cotplan.charts.report_html import cell, is_nan, svg, table

__all__ = [
    "Reader",
    "Sections",
    "figure_sections",
    "frame_table_section",
    "monitor_sections",
    "spend_band_chart",
    "spend_sections",
]

#: (answer, charts, statistics): lists of HTML fragments.
Sections = tuple[list[str], list[str], list[str]]
Reader = Callable[[str], pd.DataFrame | None]


def _usd(value: Any) -> str:
    return "–" if value is None or is_nan(value) else f"${float(value):,.2f}"


def _share(value: Any) -> str:
    return "–" if value is None or is_nan(value) else f"{float(value):.0%}"


def figure_sections(drawings: list[tuple[str, Any]]) -> list[str]:
    """The page's charts section: each drawn chart as SVG with its caption, or a note."""
    out = []
    for caption, chart in drawings:
        if chart is None:
            continue
        drawing = svg(chart)
        if drawing is None:
            out.append(f'<p class="note">Chart not drawn: {html.escape(caption)}</p>')
        else:
            out.append(f"<figure>{drawing}<figcaption>{html.escape(caption)}</figcaption></figure>")
    return ["<h2>Charts</h2>", *out] if out else []


def frame_table_section(title: str, name: str, frame: pd.DataFrame | None) -> list[str]:
    """A statistics table from the folder's file `name`, under `title` (none if empty)."""
    if frame is None or frame.empty:
        return []
    rows = [[cell(v) for v in record] for record in frame.itertuples(index=False)]
    text = {j for j, c in enumerate(frame.columns) if frame[c].dtype == object}
    head = f"<h3>{html.escape(title)} ({html.escape(name)})</h3>"
    return [head, table([str(c) for c in frame.columns], rows, text)]


# -- cost project ------------------------------------------------------------------------------


def spend_sections(csv: Reader) -> Sections:
    """A `cost project` folder's sections (projection_*.csv, comparison.csv)."""
    answer: list[str] = []
    periods = [csv(name) for name in ("projection_years.csv", "projection_total.csv")]
    months = csv("projection_months.csv")
    shown = [f for f in periods if f is not None and not f.empty]
    if months is not None and not months.empty:
        shown.insert(0, months.head(1))
    if shown:
        frame = pd.concat(shown, ignore_index=True)
        rows = [
            [str(r["label"]), f"{float(r['queries']):,.0f}", _usd(r["p10_usd"]),
             _usd(r["p50_usd"]), _usd(r["p90_usd"]), _usd(r["mean_usd"])]
            for r in frame.to_dict("records")
        ]  # fmt: skip
        answer += [
            "<h2>Projected spend (USD): P10, P50, P90 per period</h2>",
            table(["period", "queries", "P10", "P50", "P90", "mean"], rows, text={0}),
        ]
    scenarios = _scenarios(csv)
    if scenarios is not None:
        rows = [
            [str(r["scenario"]), str(r["policy"]), f"${float(r['usd_per_query']):.6f}",
             _usd(r["total_p10_usd"]), _usd(r["total_p50_usd"]), _usd(r["total_p90_usd"]),
             _share(float(r["savings_pct"]) / 100 if not is_nan(r["savings_pct"]) else None)]
            for r in scenarios.to_dict("records")
        ]  # fmt: skip
        answer += [
            "<h2>Compared scenarios, over the whole horizon</h2>",
            table(["scenario", "policy", "per query", "P10", "P50", "P90", "saved"], rows,
                  text={0, 1}),
        ]  # fmt: skip
    charts = figure_sections(
        [
            ("Spend per month: the P50, with the band from P10 to P90.", spend_band_chart(months)),
            (
                "Spend over the horizon per scenario: P50, with the P10 to P90 band.",
                _scenarios_chart(scenarios),
            ),
        ]
    )
    statistics: list[str] = []
    for name, title in (
        ("projection_months.csv", "Months"),
        ("projection_quarters.csv", "Quarters"),
        ("projection_fiscal_years.csv", "Fiscal years"),
        ("comparison.csv", "Scenarios"),
    ):
        found = csv(name)
        if found is not None and name == "comparison.csv" and "scenario" not in found:
            continue
        statistics += frame_table_section(title, name, found)
    return answer, charts, (["<h2>Statistics</h2>", *statistics] if statistics else [])


def _scenarios(csv: Reader) -> pd.DataFrame | None:
    """comparison.csv when it is a cost projection's (a run's has other columns)."""
    frame = csv("comparison.csv")
    if frame is None or frame.empty or "scenario" not in frame or len(frame) < 2:
        return None
    return frame


def spend_band_chart(months: pd.DataFrame | None, month_field: str = "start:T") -> Any:
    """Monthly spend as its P10-P90 band with the P50 line (`month_field`: the month column
    with its altair type); None without months."""
    if months is None or months.empty:
        return None
    import altair as alt

    x = alt.X(month_field, title="month")
    band = (
        alt.Chart(months)
        .mark_area(opacity=0.3)
        .encode(x=x, y=alt.Y("p10_usd:Q", title="USD a month"), y2="p90_usd:Q")
    )
    line = alt.Chart(months).mark_line(point=True).encode(x=x, y="p50_usd:Q")
    return alt.layer(band, line).properties(width=560, height=260)


def _scenarios_chart(scenarios: pd.DataFrame | None) -> Any:
    if scenarios is None:
        return None
    import altair as alt

    y = alt.Y("scenario:N", title=None, sort=None)
    band = (
        alt.Chart(scenarios)
        .mark_rule(strokeWidth=3)
        .encode(y=y, x=alt.X("total_p10_usd:Q", title="USD over the horizon"), x2="total_p90_usd:Q")
    )
    point = alt.Chart(scenarios).mark_point(filled=True, size=60).encode(y=y, x="total_p50_usd:Q")
    return alt.layer(band, point).properties(width=480, height=40 * len(scenarios))


# -- monitor ----------------------------------------------------------------------------------


def monitor_sections(csv: Reader, summary: dict[str, Any] | None) -> Sections:
    """A `monitor` folder's sections (monitor.csv, monitor_days.csv, monitor_summary.json)."""
    answer: list[str] = []
    summary = summary or {}
    if summary:
        line = (
            f"{summary.get('calls', 0):,} calls; spend {_usd(summary.get('spend_usd'))} "
            f"(projected {_usd(summary.get('projected_usd'))}); reasoning tokens "
            f"{summary.get('reasoning_tokens', 0):,}."
        )
        answer.append(f"<h2>The calls against the plan</h2><p>{html.escape(line)}</p>")
        if summary.get("verdict"):
            style = ' class="note"' if summary.get("alarm") else ""
            answer.append(f"<p{style}><b>{html.escape(str(summary['verdict']))}</b></p>")
        answer += [f"<p>note: {html.escape(str(n))}</p>" for n in summary.get("notes") or []]
    sizes = csv("monitor.csv")
    if sizes is not None and not sizes.empty:
        rows = [
            [f"{float(r['size']):g}", str(r["cap"]), str(r.get("basis") or ""), str(r["calls"]),
             f"{_share(r['cap_bitten'])} ({_share(r.get('predicted_bitten'))})",
             f"{_share(r['answer_forced'])} ({_share(r.get('predicted_forced'))})",
             _usd(r["cost_usd"]), _usd(r.get("projected_cost_usd"))]
            for r in sizes.to_dict("records")
        ]  # fmt: skip
        answer.append(
            table(
                [
                    "n",
                    "cap",
                    "basis",
                    "calls",
                    "bit (calib.)",
                    "forced (calib.)",
                    "spend",
                    "projected",
                ],
                rows,
                text={2},
            )
        )
    days = csv("monitor_days.csv")
    charts = figure_sections(
        [
            (
                "Share of calls whose thinking the cap cut, day by day, per size; the dashed rule "
                "is the calibration's rate.",
                _bites_chart(days, sizes),
            ),
            (
                "Mean reasoning tokens a call, day by day, per size; the dashed rule is the cap.",
                _tokens_chart(days),
            ),
        ]
    )
    statistics = frame_table_section("By size", "monitor.csv", sizes)
    statistics += frame_table_section("By day", "monitor_days.csv", days)
    return answer, charts, (["<h2>Statistics</h2>", *statistics] if statistics else [])


def read_summary(text: str) -> dict[str, Any] | None:
    """monitor_summary.json's record (None when it is not one)."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _bites_chart(days: pd.DataFrame | None, sizes: pd.DataFrame | None) -> Any:
    if days is None or days.empty:
        return None
    import altair as alt

    color = alt.Color("size:O", title="size n", scale=alt.Scale(scheme="viridis"))
    lines = (
        alt.Chart(days)
        .mark_line(point=True)
        .encode(x=alt.X("day:T", title="day"),
                y=alt.Y("cap_bitten:Q", title="share the cap cut", scale=alt.Scale(domain=[0, 1])),
                color=color, tooltip=["day", "size", "cap", "calls", "cap_bitten"])
    )  # fmt: skip
    layers = [lines]
    if sizes is not None and "predicted_bitten" in sizes:
        marks = sizes.dropna(subset=["predicted_bitten"])
        if not marks.empty:
            rule = alt.Chart(marks).mark_rule(strokeDash=[6, 4])
            layers.append(rule.encode(y="predicted_bitten:Q", color=color))
    return alt.layer(*layers).properties(width=560, height=260)


def _tokens_chart(days: pd.DataFrame | None) -> Any:
    if days is None or days.empty:
        return None
    import altair as alt

    color = alt.Color("size:O", title="size n", scale=alt.Scale(scheme="viridis"))
    x = alt.X("day:T", title="day")
    lines = (
        alt.Chart(days)
        .mark_line(point=True)
        .encode(x=x, y=alt.Y("reasoning_tokens:Q", title="reasoning tokens a call"), color=color)
    )
    caps = alt.Chart(days).mark_line(strokeDash=[6, 4]).encode(x=x, y="cap:Q", color=color)
    return alt.layer(lines, caps).properties(width=560, height=260)
