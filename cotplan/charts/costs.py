"""Charts of projected API spend: monthly P10-P90 bands with the P50 line.

Save with `save_chart`: PNG and SVG render offline through vl-convert; HTML embeds the Vega
libraries (``inline=True``), so the file opens with no network.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from cotplan.errors import InputError

if TYPE_CHECKING:
    from cotplan.pricing.projection import Comparison, Projection

__all__ = ["comparison_chart", "projection_chart", "save_chart"]

_TOOLTIP = ("label", "queries", "mean_usd", "p10_usd", "p50_usd", "p90_usd")


def _months(frame: pd.DataFrame) -> pd.DataFrame:
    columns = [c for c in ("scenario", "start", *_TOOLTIP) if c in frame.columns]
    # Only JSON-friendly columns go into the Vega-Lite spec (dates become timestamps).
    months = frame.loc[frame["period"] == "month", columns].copy()
    months["start"] = pd.to_datetime(months["start"])
    return months


def _tooltip(alt: Any, extra: tuple[str, ...] = ()) -> list[Any]:
    fmt = {"queries": ",.0f", "mean_usd": "$,.2f", "p10_usd": "$,.2f", "p50_usd": "$,.2f",
           "p90_usd": "$,.2f"}  # fmt: skip
    return [alt.Tooltip(name, format=fmt[name]) if name in fmt else alt.Tooltip(name)
            for name in (*extra, *_TOOLTIP)]  # fmt: skip


def projection_chart(projection: Projection, *, title: str | None = None) -> Any:
    """Monthly spend of one projection: shaded P10-P90 band and the P50 line."""
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
    chart_title = alt.Title(heading, subtitle=f"price: {source}") if source else heading
    return (band + line).properties(title=chart_title, width=560, height=280)


def comparison_chart(comparison: Comparison, *, title: str | None = None) -> Any:
    """Monthly spend of every scenario: one P10-P90 band and P50 line per scenario."""
    import altair as alt

    data = _months(comparison.monthly)
    color = alt.Color("scenario:N", title="scenario")
    base = alt.Chart(data).encode(
        x=alt.X("start:T", title="month", axis=alt.Axis(format="%b %Y", tickCount="month")),
        color=color,
    )
    band = base.mark_area(opacity=0.18).encode(
        y=alt.Y("p10_usd:Q", title="USD per month (P10-P90, P50)"), y2="p90_usd:Q"
    )
    line = base.mark_line(point=True).encode(y="p50_usd:Q", tooltip=_tooltip(alt, ("scenario",)))
    heading = title or f"Projected spend by scenario (baseline: {comparison.baseline})"
    return (band + line).properties(title=heading, width=560, height=280)


def save_chart(chart: Any, path: str | os.PathLike[str]) -> Path:
    """Write `chart` as PNG, SVG, self-contained HTML or Vega-Lite JSON, by the file suffix."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix in {".png", ".svg", ".json"}:
        chart.save(str(target))
    elif suffix == ".html":
        chart.save(str(target), inline=True)
    else:
        raise InputError(
            f"unsupported chart file type {suffix!r}; use .png, .svg, .html or .json",
            field="path",
        )
    return target
