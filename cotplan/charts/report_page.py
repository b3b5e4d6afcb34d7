"""report.html: one self-contained page per report folder, built from the folder's own files.

`build_report_page(folder)` reads what `calibrate`, `plan`, `run` and `demo` wrote there
(calibration.csv, plan.json or plan.csv, run_eps.csv, comparison.csv, costs.csv and the
statistics tables; `cost project`, `cost project --portfolio` and `monitor` folders have
sections of their own, `cotplan.charts.report_spend` and `.report_portfolio`) and returns
the page: the answer first (the caps per size as
`SavedPlan.cap(n)` gives them, the held-out check, the projected cost), then the charts a
person would rather look at than read (error against budget per size with each cap marked;
reasoning tokens spent with and without the caps; spend bands), then the statistics as tables.

The page needs no network: the charts are rendered to SVG here (Altair through vl-convert,
offline) and written into the page; there is no script and no external link. A chart that
fails to render is left out with a line saying so, never a blank frame. Numbers come from the
files, so `cotplan report DIR` rebuilds the same page from a folder at any later time.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pandas as pd

from cotplan.charts.report_html import cell, int_cell, is_nan, pct_cell, svg, table

__all__ = ["REPORT_PAGE", "build_report_page"]

#: The page's file name in a report folder.
REPORT_PAGE = "report.html"

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem;
       color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 0.2rem 0.6rem; text-align: right; }
th { background: #f6f6f6; } td.text, th.text { text-align: left; }
.answer { background: #f3f8ff; border: 1px solid #cfe0ff; padding: 0.5rem 1rem; }
figure { margin: 1rem 0; } figcaption { font-size: 0.85rem; color: #555; }
.note { color: #8a5a00; }
"""


def build_report_page(folder: str | Path) -> str:
    """The report page of `folder` as HTML text (see the module doc); raises `InputError`
    naming `folder` when it holds nothing cotplan wrote."""
    from cotplan.errors import InputError

    root = Path(folder)
    if not root.is_dir():
        raise InputError(f"{root} is not a folder", field="folder")
    files = _Files(root)
    if not files.any_known():
        raise InputError(
            f"{root} holds no calibration, plan, run, demo, cost or monitor files to report on",
            field="folder",
        )
    command = files.command()
    answer, charts, statistics = _sections(files, command)
    title = f"cotplan {command or 'report'}: {root.resolve().name}"
    body = [
        f"<h1>{html.escape(title)}</h1>",
        '<section class="answer">',
        *answer,
        "</section>",
        *charts,
        *statistics,
        "<p><small>Rebuild this page with <code>cotplan report FOLDER</code>; every number in it "
        "is read from the folder's CSV and JSON files.</small></p>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _sections(files: _Files, command: str) -> tuple[list[str], list[str], list[str]]:
    """(answer, charts, statistics) of the folder, by what wrote it."""
    from cotplan.charts.report_spend import monitor_sections, read_summary, spend_sections

    if (files.root / "monitor.csv").is_file():
        summary = files.root / "monitor_summary.json"
        record = read_summary(summary.read_text(encoding="utf-8")) if summary.is_file() else None
        return monitor_sections(files.csv, record)
    if (files.root / "projection_months.csv").is_file():
        return spend_sections(files.csv)
    if (files.root / "portfolio_months.csv").is_file():
        from cotplan.charts.report_portfolio import portfolio_sections

        return portfolio_sections(files.csv)
    answer: list[str] = []
    if command == "run":
        answer += _held_out(files)
    answer += _caps(files)
    if command != "run":
        answer += _held_out(files)
    answer += _costs(files)
    if not answer:
        answer += _calibration_grid(files)
    return answer, _charts(files), _statistics(files)


class _Files:
    """The report folder's files, read once each (None where absent or unreadable)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, Any] = {}

    def csv(self, name: str) -> pd.DataFrame | None:
        if name not in self._cache:
            path = self.root / name
            plan = self.plan() if name == "calibration.csv" else None
            if not path.is_file() and plan is not None and plan.calibration:
                path = Path(plan.calibration)  # a plan written with --out elsewhere
            try:
                self._cache[name] = pd.read_csv(path) if path.is_file() else None
            except (OSError, ValueError):
                self._cache[name] = None
        frame = self._cache[name]
        return None if frame is None else frame.copy()

    def plan(self) -> Any:
        """The folder's `SavedPlan` (None without a readable plan.json)."""
        if "plan.json" not in self._cache:
            from cotplan.errors import CotplanError
            from cotplan.planner.saved_plan import SavedPlan

            path = self.root / "plan.json"
            try:
                self._cache["plan.json"] = SavedPlan.load(path) if path.is_file() else None
            except (CotplanError, OSError, ValueError):
                self._cache["plan.json"] = None
        return self._cache["plan.json"]

    def command(self) -> str:
        """The command that last wrote the folder, from its manifest ("" when unknown)."""
        from cotplan.io import read_json

        path = self.root / "manifest.json"
        try:
            record = read_json(path) if path.is_file() else {}
        except Exception:  # a damaged manifest only loses the page's title
            record = {}
        command = str(record.get("command", "")) if isinstance(record, dict) else ""
        if not command and (self.root / "projection_months.csv").is_file():
            # `cost project` writes its files before any manifest: its page is built first.
            command = "cost project"
        if not command and (self.root / "portfolio_months.csv").is_file():
            command = "cost project --portfolio"
        return command

    def any_known(self) -> bool:
        names = ("calibration.csv", "plan.json", "plan.csv", "comparison.csv", "costs.csv",
                 "projection_months.csv", "portfolio_months.csv", "monitor.csv")  # fmt: skip
        return any((self.root / name).is_file() for name in names)

    def caps(self) -> dict[int, int]:
        """The cap per size: `plan.cap(n)` from plan.json, else plan.csv's `tokens` (the demo's
        plan, applied as written)."""
        plan = self.plan()
        if plan is not None:
            out = {}
            for row in plan.caps():
                if row.get("tokens") is not None:
                    out[int(row["n"])] = int(row["tokens"])
            return out
        frame = self.csv("plan.csv")
        if frame is None or "tokens" not in frame:
            return {}
        frame = frame.dropna(subset=["tokens"])
        return {int(n): int(t) for n, t in zip(frame["n"], frame["tokens"], strict=True)}


# -- the answer -----------------------------------------------------------------------------


def _caps(files: _Files) -> list[str]:
    plan = files.plan()
    if plan is not None:
        frame = pd.DataFrame(plan.caps())
        if frame.empty:
            return []
        rows = [
            [
                f"{row['n']:g}",
                "–"
                if row.get("tokens") is None or is_nan(row.get("tokens"))
                else f"{row['tokens']:.0f}",
                "yes" if row.get("certified") is True else "no",
                str(row.get("note") or ""),
            ]
            for row in frame.to_dict("records")
        ]
        head = (
            f"<h2>Reasoning caps for error ≤ {plan.eps:g}</h2><p>Made for model "
            f"{html.escape(plan.model or '(not recorded)')}; law {html.escape(plan.law or 'none')}."
            f" {html.escape(plan.verdict_)}</p>"
        )
        return [head, table(["n", "cap", "certified", "why"], rows, text={2, 3})]
    planned = files.csv("plan.csv")
    if planned is None:
        return []
    rows = [
        [f"{r['n']:g}", int_cell(r.get("tokens")), "yes" if r.get("certified") else "no",
         str(r.get("basis") or "")]
        for r in planned.to_dict("records")
    ]  # fmt: skip
    return ["<h2>Reasoning caps</h2>", table(["n", "cap", "certified", "why"], rows, text={2, 3})]


def _held_out(files: _Files) -> list[str]:
    out: list[str] = []
    checks = files.csv("run_eps.csv")
    if checks is not None and not checks.empty:
        rows = [
            [str(r["n"]), int_cell(r.get("cap")), "yes" if r.get("certified") else "no",
             str(r["items"]), f"{r['error']:.2f} [{r['low']:.2f}, {r['high']:.2f}]",
             f"{r['verdict']} ε = {r['eps']:g}"]
            for r in checks.to_dict("records")
        ]  # fmt: skip
        out += [
            "<h2>Held-out check</h2>",
            table(["n", "cap", "certified", "items", "error [95%]", "verdict"], rows, text={5}),
        ]
    comparison = files.csv("comparison.csv")
    if comparison is not None and not comparison.empty:
        rows = [
            [str(r["policy"]), str(int(r["items"])),
             f"{r['accuracy']:.2f} [{r['accuracy_low']:.2f}, {r['accuracy_high']:.2f}]",
             f"{r['reasoning_tokens']:.1f}", pct_cell(r.get("tokens_saved"))]
            for r in comparison.to_dict("records")
        ]  # fmt: skip
        out += [
            "<h2>Planned against uncapped</h2>",
            table(
                ["policy", "items", "accuracy [95%]", "reasoning tokens", "saved"], rows, text={0}
            ),
        ]
    return out


def _costs(files: _Files) -> list[str]:
    costs = files.csv("costs.csv")
    if costs is None or costs.empty:
        return []
    rows = [
        [f"{r['model']} ({r['pricing']})", str(r["policy"]), f"{r['tokens_per_query']:.0f}",
         f"{r['usd_per_query']:.6f}", f"{r['month_p50_usd']:,.2f}",
         f"{r['month_p10_usd']:,.2f}–{r['month_p90_usd']:,.2f}", f"{r['year_mean_usd']:,.2f}"]
        for r in costs.to_dict("records")
    ]  # fmt: skip
    return [
        "<h2>Projected cost (USD)</h2>",
        table(
            ["model", "policy", "tokens/query", "per query", "month P50", "P10–P90", "year"],
            rows,
            text={0, 1},
        ),
    ]


def _calibration_grid(files: _Files) -> list[str]:
    frame = files.csv("calibration.csv")
    if frame is None or frame.empty:
        return []
    summary = _summary(frame)
    sizes = sorted(summary["n"].unique())
    rows = []
    for k, at_k in summary.groupby("k"):
        cells = {int(r["n"]): r for r in at_k.to_dict("records")}
        rows.append(
            [int_cell(k)]
            + [
                "" if n not in cells else f"{cells[n]['accuracy']:.2f} ({cells[n]['tokens']:.0f})"
                for n in sizes
            ]
        )
    return [
        "<h2>Calibration: accuracy (mean reasoning tokens) by budget</h2>",
        table(["k", *(f"n = {n}" for n in sizes)], rows),
    ]


# -- charts ----------------------------------------------------------------------------------


def _charts(files: _Files) -> list[str]:
    drawn: list[str] = []
    for caption, draw in (
        ("Error against the reasoning budget, per size; the dashed rule is the size's cap.",
         _error_chart),
        ("Reasoning tokens a query in calibration: at the largest budget, and under each cap.",
         _tokens_chart),
        ("Reasoning tokens spent on held-out items, planned against uncapped.", _saved_chart),
        ("Projected spend in the first month: P50 with the P10–P90 band.", _spend_chart),
    ):  # fmt: skip
        chart = draw(files)
        if chart is None:
            continue
        drawing = svg(chart)
        if drawing is None:
            drawn.append(f'<p class="note">Chart not drawn: {html.escape(caption)}</p>')
            continue
        drawn.append(f"<figure>{drawing}<figcaption>{html.escape(caption)}</figcaption></figure>")
    return ["<h2>Charts</h2>", *drawn] if drawn else []


def _error_chart(files: _Files) -> Any:
    frame = files.csv("calibration.csv")
    if frame is None or frame.empty:
        return None
    import altair as alt

    summary = _summary(frame)
    summary["error"] = 1 - summary["accuracy"]
    summary["n"] = summary["n"].astype(int)
    color = alt.Color("n:O", title="size n", scale=alt.Scale(scheme="viridis"))
    x = alt.X("k:Q", title="reasoning budget k (tokens)")
    lines = (
        alt.Chart(summary)
        .mark_line(point=True)
        .encode(x=x, y=alt.Y("error:Q", title="error rate", scale=alt.Scale(domain=[0, 1])),
                color=color, tooltip=["n", "k", "error", "answers"])
    )  # fmt: skip
    layers = [lines]
    caps = files.caps()
    calibrated = {int(n) for n in summary["n"].unique()}
    marks = pd.DataFrame(
        [{"n": n, "cap": cap} for n, cap in sorted(caps.items()) if n in calibrated]
    )
    if not marks.empty:
        layers.append(alt.Chart(marks).mark_rule(strokeDash=[6, 4]).encode(x="cap:Q", color=color))
    plan = files.plan()
    if plan is not None:
        target = pd.DataFrame([{"eps": plan.eps}])
        layers.append(alt.Chart(target).mark_rule(color="#999").encode(y="eps:Q"))
    return alt.layer(*layers).properties(width=560, height=300)


def _tokens_chart(files: _Files) -> Any:
    frame = files.csv("calibration.csv")
    caps = files.caps()
    if frame is None or frame.empty or not caps:
        return None
    import altair as alt

    summary = _summary(frame)
    rows = []
    for size, at_size in summary.groupby("n"):
        n = int(float(str(size)))
        top = at_size.sort_values("k").iloc[-1]
        cap = caps.get(n)
        if cap is None:
            continue
        above = at_size[at_size["k"] >= cap].sort_values("k")
        spent = float(above.iloc[0]["tokens"]) if not above.empty else float(top["tokens"])
        rows.append({"n": n, "policy": f"largest k = {int(top['k'])}", "kind": "largest",
                     "tokens": float(top["tokens"])})  # fmt: skip
        rows.append({"n": n, "policy": f"cap {cap}", "kind": "capped", "tokens": spent})
    if not rows:
        return None
    data = pd.DataFrame(rows)
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(x=alt.X("policy:N", title=None, axis=alt.Axis(labelAngle=0)),
                y=alt.Y("tokens:Q", title="reasoning tokens"),
                color=alt.Color("kind:N", legend=None),
                column=alt.Column("n:O", title="size n"))
        .properties(width=120, height=220)
    )  # fmt: skip


def _saved_chart(files: _Files) -> Any:
    comparison = files.csv("comparison.csv")
    if comparison is None or comparison.empty or "reasoning_tokens" not in comparison:
        return None
    import altair as alt

    return (
        alt.Chart(comparison)
        .mark_bar()
        .encode(y=alt.Y("policy:N", title=None),
                x=alt.X("reasoning_tokens:Q", title="reasoning tokens a query"),
                color=alt.Color("policy:N", legend=None))
        .properties(width=480, height=30 * len(comparison))
    )  # fmt: skip


def _spend_chart(files: _Files) -> Any:
    costs = files.csv("costs.csv")
    if costs is None or costs.empty:
        return None
    import altair as alt

    costs["label"] = costs["pricing"] + ": " + costs["policy"]
    y = alt.Y("label:N", title=None)
    band = (
        alt.Chart(costs)
        .mark_rule(strokeWidth=3)
        .encode(
            y=y, x=alt.X("month_p10_usd:Q", title="USD in the first month"), x2="month_p90_usd:Q"
        )
    )
    point = alt.Chart(costs).mark_point(filled=True, size=60).encode(y=y, x="month_p50_usd:Q")
    return alt.layer(band, point).properties(width=480, height=40 * len(costs))


# -- statistics ------------------------------------------------------------------------------


_STATISTICS = (
    ("certified.csv", "Certified budgets per calibrated size"),
    ("plan.csv", "k* by the law, with its interval"),
    ("constants.csv", "Fitted constants"),
    ("laws.csv", "Error laws by held-out log-likelihood"),
    ("run_plan.csv", "Caps applied in the run"),
)


def _statistics(files: _Files) -> list[str]:
    out = []
    for name, title in _STATISTICS:
        frame = files.csv(name)
        if frame is None or frame.empty:
            continue
        columns = [str(c) for c in frame.columns]
        rows = [[cell(v) for v in record] for record in frame.itertuples(index=False)]
        text = {j for j, c in enumerate(frame.columns) if frame[c].dtype == object}
        out += [f"<h3>{html.escape(title)} ({html.escape(name)})</h3>", table(columns, rows, text)]
    return ["<h2>Statistics</h2>", *out] if out else []


# -- helpers ---------------------------------------------------------------------------------


def _summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy and mean reasoning tokens per (n, k) of a calibration frame."""
    frame = frame.copy()
    frame["correct"] = frame["correct"].astype(str).str.lower().isin(["true", "1", "1.0"])
    if "reasoning_tokens" not in frame:
        frame["reasoning_tokens"] = frame["k"]
    grouped = frame.groupby(["n", "k"])
    return pd.DataFrame(
        {
            "answers": grouped["correct"].size(),
            "accuracy": grouped["correct"].mean(),
            "tokens": grouped["reasoning_tokens"].mean(),
        }
    ).reset_index()
