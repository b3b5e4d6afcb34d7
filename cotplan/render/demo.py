"""`cotplan demo` at a terminal: what it will measure, the answer of each step as it finishes
(calibrate -> plan -> run -> cost), and the projected cost of both policies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from cotplan.render import plan_details
from cotplan.render.calibration import grid_words, print_calibration
from cotplan.render.plan import law_sentence, print_budget_caps, print_run_glance
from cotplan.render.tables import compact_table, money

if TYPE_CHECKING:
    import pandas as pd

    from cotplan.workflow import Demo, DemoSetup

__all__ = ["print_costs", "print_demo_costs", "print_demo_setup", "print_demo_step"]

#: The rule printed after each step: the title of the next.
NEXT = {
    "calibrate": "2. plan",
    "plan": "3. run the plan on held-out items",
    "run": "4. projected cost",
}


def print_demo_setup(console: Console, setup: DemoSetup, model: str, driven: str) -> None:
    """The line that says what the demo will measure on `model` (driven as `driven`)."""
    preset = setup.preset
    console.print(
        f"model {model} ({driven}); sizes n = "
        f"{', '.join(map(str, setup.sizes))} ({setup.n_meaning}); "
        f"{len(setup.items)} calibration items at budgets "
        + "; ".join(grid_words(preset.grid(n), n) for n in setup.sizes)
        + (" (the paper's grid, [0, 10√n])" if preset.budgets is None else "")
        + f"; {len(setup.held_out)} held-out items"
    )


def print_demo_step(
    console: Console, step: str, demo: Demo, *, eps: float | None, details: bool = False
) -> None:
    """The answer of the step `run_demo` just finished (with `details` the statistics behind
    it), then the rule that opens the next."""
    if step == "calibrate" and demo.calibration is not None:
        print_calibration(console, demo.calibration)
    elif step == "plan" and demo.planner is not None:
        planner = demo.planner
        if eps is None:
            console.print(f"target: {demo.target_reason}")
        shown = demo.planned
        if shown:
            print_budget_caps(console, shown, demo.target)
        else:
            console.print(f"plan: k* = 0 at every size ({planner.verdict_})")
        console.print(f"[bold]Law:[/] {law_sentence(planner)}")
        if details:
            plan_details.print_report(console, planner)
            plan_details.print_certified(console, planner, demo.target)
            if shown:
                plan_details.print_budgets(console, shown, demo.target)
    elif step == "run" and demo.run is not None:
        print_run_glance(console, demo.run)
        if details:
            plan_details.print_comparison(console, demo.run)
    else:
        return
    console.rule(NEXT[step])


def print_demo_costs(
    console: Console, costs: pd.DataFrame, queries_per_day: float, what_if: str
) -> None:
    """The projected cost of both policies, and what the what-if pricing means."""
    print_costs(console, costs, queries_per_day)
    console.print(
        f"what-if: the same token counts priced at {what_if} (one call per query: the question "
        "in, reasoning and answer out); the embedded model itself costs nothing per token."
    )


def print_costs(console: Console, costs: pd.DataFrame, queries_per_day: float) -> None:
    """The demo's projected cost, one small table per pricing (the model names above each
    table, not in a column that would push the numbers past the terminal's edge)."""
    console.print(
        f"[bold]Projected cost at {queries_per_day:,.0f} queries a day[/] "
        "(USD; month: the first month, P50 and P10–P90; year: 12 months)"
    )
    for pricing, rows in costs.groupby("pricing", sort=False):
        model = str(rows["model"].iloc[0])
        console.print(f"{model} ({pricing})")
        table = compact_table(
            [
                ("policy", "text"),
                ("tokens/query", "num"),
                ("USD/query", "num"),
                ("month P50", "num"),
                ("P10–P90", "num"),
                ("year", "num"),
            ]
        )
        for r in rows.to_dict("records"):
            table.add_row(
                str(r["policy"]),
                f"{r['tokens_per_query']:.0f}",
                f"{r['usd_per_query']:.2g}" if r["usd_per_query"] else "0",
                money(r["month_p50_usd"]),
                f"{money(r['month_p10_usd'])}–{money(r['month_p90_usd'])}",
                money(r["year_mean_usd"]),
            )
        console.print(table)
