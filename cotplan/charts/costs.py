"""Charts of projected API spend: monthly P10-P90 bands with the P50 line, and scenarios ranked.

A projection's chart draws its budget when it has one: a monthly budget as a line across the
months, a yearly one in a panel of the year and fiscal-year totals beside them, each with the
chance of going over. A comparison is a ranked dot plot (mean and P10-P90 interval of the
horizon's spend, one row per scenario, cheapest on top), which stays readable with twenty
scenarios where twenty overlapping bands would not.

Save with `save_chart`: PNG (at twice the chart's size, sharp on a slide) and SVG render
offline through vl-convert; HTML embeds the Vega libraries (``inline=True``), so the file
opens with no network.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from cotplan.errors import InputError
from cotplan.pricing.excel import SHARED_MODE

if TYPE_CHECKING:
    from cotplan.pricing.projection import Comparison, Projection

__all__ = [
    "PNG_SCALE",
    "comparison_chart",
    "projection_chart",
    "reconciliation_chart",
    "save_chart",
    "spend_by_chart",
]

#: PNGs are rendered at this multiple of the chart's size in pixels: sharp on a slide.
PNG_SCALE = 2
#: Height of one scenario's row in the ranked comparison, pixels.
_ROW = 22

_TOOLTIP = ("label", "queries", "mean_usd", "p10_usd", "p50_usd", "p90_usd")


def _months(frame: pd.DataFrame) -> pd.DataFrame:
    columns = [c for c in ("scenario", "start", *_TOOLTIP) if c in frame.columns]
    # Only JSON-friendly columns go into the Vega-Lite spec (dates become timestamps).
    months = frame.loc[frame["period"] == "month", columns].copy()
    months["start"] = pd.to_datetime(months["start"])
    return months


def _tooltip(alt: Any, extra: tuple[str, ...] = ()) -> list[Any]:
    fmt = {
        "queries": ",.0f",
        "mean_usd": "$,.2f",
        "p10_usd": "$,.2f",
        "p50_usd": "$,.2f",
        "p90_usd": "$,.2f",
    }
    return [
        alt.Tooltip(name, format=fmt[name]) if name in fmt else alt.Tooltip(name)
        for name in (*extra, *_TOOLTIP)
    ]


def _percent(p: float) -> str:
    return f"{100 * p:.0f}%" if 0.01 <= p <= 0.99 or p in (0.0, 1.0) else f"{100 * p:.1f}%"


def projection_chart(projection: Projection, *, title: str | None = None) -> Any:
    """Monthly spend of one projection: shaded P10-P90 band and the P50 line, and its budget
    (a monthly one as a dashed line; a yearly one in a panel of the year totals)."""
    import altair as alt

    data = _months(projection.frame)
    base = alt.Chart(data).encode(
        x=alt.X("start:T", title="month", axis=alt.Axis(format="%b %Y", tickCount="month"))
    )
    band = base.mark_area(opacity=0.25).encode(
        y=alt.Y("p10_usd:Q", title="USD per month (P10-P90, P50)"), y2="p90_usd:Q"
    )
    line = base.mark_line(point=True).encode(y="p50_usd:Q", tooltip=_tooltip(alt))
    heading = title or f"Projected spend: {projection.model}, {projection.policy}"
    source = projection.assumptions.get("price_source")
    lines = [f"price: {source}"] if source else []
    check = projection.budget
    if check is not None:
        what = "in some month" if check.budget.per == "month" else "in some complete year"
        lines.append(
            f"budget {check.budget.label}: chance of going over {what} "
            f"{_percent(check.probability)}"
        )
    chart_title = alt.Title(heading, subtitle=lines) if lines else heading
    layers: Any = band + line
    if check is not None and check.budget.per == "month":
        rule = alt.Chart(pd.DataFrame({"budget_usd": [check.budget.usd]}))
        layers = layers + rule.mark_rule(color="firebrick", strokeDash=[6, 4]).encode(
            y="budget_usd:Q", tooltip=[alt.Tooltip("budget_usd:Q", format="$,.0f")]
        )
    monthly = layers.properties(width=560, height=280)
    if check is None or check.budget.per != "year":
        return monthly.properties(title=chart_title)
    return alt.hconcat(monthly, _year_panel(projection, alt)).properties(title=chart_title)


def _year_panel(projection: Projection, alt: Any) -> Any:
    """Each twelve-month year and complete fiscal year: mean and P10-P90, the budget line."""
    frame = projection.frame
    shown = ["label", "start", "mean_usd", "p10_usd", "p90_usd", "p_over_budget"]
    years = frame.loc[frame["period"] == "year", shown]
    rollups = projection.rollups
    fiscal = rollups.loc[(rollups["period"] == "fiscal_year") & rollups["complete"], shown]
    # A fiscal year that is one of the twelve-month years (same first month) is shown once.
    data = pd.concat([years, fiscal[~fiscal["start"].isin(years["start"])]], ignore_index=True)
    data = data.drop(columns="start")
    assert projection.budget is not None
    budget = projection.budget.budget.usd
    y = alt.Y("label:N", title=None, sort=None)
    base = alt.Chart(data)
    interval = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("p10_usd:Q", title="USD per year (mean, P10-P90)"), x2="p90_usd:Q", y=y
    )
    dots = base.mark_point(filled=True, size=60).encode(
        x="mean_usd:Q",
        y=y,
        tooltip=[
            alt.Tooltip("label:N"),
            alt.Tooltip("mean_usd:Q", format="$,.0f"),
            alt.Tooltip("p10_usd:Q", format="$,.0f"),
            alt.Tooltip("p90_usd:Q", format="$,.0f"),
            alt.Tooltip("p_over_budget:Q", format=".1%", title="chance over budget"),
        ],
    )
    rule = (
        alt.Chart(pd.DataFrame({"budget_usd": [budget]}))
        .mark_rule(color="firebrick", strokeDash=[6, 4])
        .encode(x="budget_usd:Q")
    )
    return (interval + dots + rule).properties(width=300, height=_ROW * max(len(data), 2) + 20)


def comparison_chart(comparison: Comparison, *, title: str | None = None) -> Any:
    """Every scenario's spend over the horizon, ranked: a dot at the mean, a line from P10 to
    P90, the baseline in its own colour; readable with twenty scenarios and more (the chart
    grows one row per scenario). A yearly budget is drawn when the horizon is one year."""
    import altair as alt

    columns = [
        "scenario",
        "model",
        "policy",
        "total_mean_usd",
        "total_p10_usd",
        "total_p50_usd",
        "total_p90_usd",
        "usd_per_query",
    ]
    data = comparison.frame[columns].copy()
    data["usd_per_1k_queries"] = 1000.0 * data["usd_per_query"]
    data["role"] = [
        "baseline" if s == comparison.baseline else "scenario" for s in data["scenario"]
    ]
    order = data.sort_values("total_mean_usd")["scenario"].tolist()
    y = alt.Y("scenario:N", sort=order, title=None, axis=alt.Axis(labelLimit=260))
    color = alt.Color(
        "role:N",
        title=None,
        scale=alt.Scale(domain=["baseline", "scenario"], range=["#d62728", "#1f77b4"]),
    )
    horizon = comparison.frame.attrs.get("horizon", "the horizon")
    base = alt.Chart(data)
    interval = base.mark_rule(strokeWidth=2, opacity=0.7).encode(
        x=alt.X(
            "total_p10_usd:Q",
            title=f"USD over {horizon} (mean, P10-P90)",
            axis=alt.Axis(format="$,.0f"),
        ),
        x2="total_p90_usd:Q",
        y=y,
        color=color,
    )
    fmt = {
        "total_mean_usd": "$,.0f",
        "total_p10_usd": "$,.0f",
        "total_p50_usd": "$,.0f",
        "total_p90_usd": "$,.0f",
        "usd_per_1k_queries": "$,.4f",
    }
    tooltip = [
        alt.Tooltip(c, format=fmt[c]) if c in fmt else alt.Tooltip(c)
        for c in ("scenario", "model", "policy", *fmt)
    ]
    dots = base.mark_point(filled=True, size=70).encode(
        x="total_mean_usd:Q", y=y, color=color, tooltip=tooltip
    )
    layers: Any = interval + dots
    budgets = {p.budget.budget for p in comparison.projections.values() if p.budget is not None}
    months = int(comparison.monthly.groupby("scenario").size().max())
    subtitle = ["cheapest on top; the dot is the mean, the line P10 to P90"]
    if len(budgets) == 1 and months == 12:
        budget = next(iter(budgets))
        if budget.per == "year":
            layers = layers + alt.Chart(pd.DataFrame({"budget_usd": [budget.usd]})).mark_rule(
                color="firebrick", strokeDash=[6, 4]
            ).encode(x="budget_usd:Q")
            subtitle.append(f"dashed: budget {budget.label}")
    heading = title or f"Projected spend by scenario (baseline: {comparison.baseline})"
    return layers.properties(
        title=alt.Title(heading, subtitle=subtitle),
        width=560,
        height=_ROW * max(len(data), 3) + 20,
    )


def spend_by_chart(frame: pd.DataFrame, by: str = "team", *, title: str | None = None) -> Any:
    """Actual spend per month, stacked by one tag (`spend_by`'s table): one bar per month,
    one colour per team (or feature, project), the untagged share in grey."""
    import altair as alt

    if by not in frame.columns:
        raise InputError(f"the table has no {by!r} column; split the spend by it", field="by")
    data = frame.groupby(["month", by], as_index=False).agg(usd=("usd", "sum"))
    data["usd"] = data["usd"].astype(float)
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("month:O", title="month"),
            y=alt.Y("usd:Q", title="spend, USD", stack="zero"),
            color=alt.Color(f"{by}:N", title=by),
            tooltip=["month", by, alt.Tooltip("usd:Q", format="$,.2f")],
        )
        .properties(title=title or f"Spend by {by}", width=360, height=220)
    )


def reconciliation_chart(frame: pd.DataFrame, *, title: str | None = None) -> Any:
    """The reconciliation at a glance: per row (month, provider, model, project) the stated
    cost beside cotplan's price of the same usage, coloured by status."""
    import altair as alt

    rows = frame.assign(
        row=frame["provider"] + "/" + frame["model"] + " " + frame["project"],
        stated=frame["stated_usd"].map(lambda v: None if v is None else float(v)),
        priced=frame["priced_usd"].map(lambda v: None if v is None else float(v)),
    )[["month", "row", "stated", "priced", "status"]]
    long = rows.melt(id_vars=["month", "row", "status"], value_vars=["stated", "priced"],
                     var_name="amount", value_name="usd")  # fmt: skip
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            y=alt.Y("row:N", title=None),
            yOffset="amount:N",
            x=alt.X("usd:Q", title="USD"),
            color=alt.Color("amount:N", title=None),
            opacity=alt.condition("datum.status == 'flagged'", alt.value(1.0), alt.value(0.75)),
            tooltip=["month", "row", "amount", alt.Tooltip("usd:Q", format="$,.2f"), "status"],
        )
        .properties(title=title or "Stated cost and cotplan's price", width=360)
    )


def save_chart(chart: Any, path: str | os.PathLike[str]) -> Path:
    """Write `chart` as PNG (at `PNG_SCALE` times its size), SVG, self-contained HTML or
    Vega-Lite JSON, by the file suffix; mode 0640, like the workbooks."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".png":
        chart.save(str(target), scale_factor=PNG_SCALE)
    elif suffix in {".svg", ".json"}:
        chart.save(str(target))
    elif suffix == ".html":
        chart.save(str(target), inline=True)
    else:
        raise InputError(
            f"unsupported chart file type {suffix!r}; use .png, .svg, .html or .json",
            field="path",
        )
    # Like the workbooks beside it: readable by the owner's group (see `SHARED_NOTE`).
    os.chmod(target, SHARED_MODE)
    return target
