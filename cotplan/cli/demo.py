"""`cotplan demo`: the main job, end to end: calibrate -> plan -> run -> projected cost.

On a built-in task family and the embedded model by default: answer items at a grid of
reasoning budgets, fit the budget model, plan k* for a target error, apply the plan on
held-out items next to uncapped reasoning, and project the monthly cost of both policies for a
stated workload. Every table is also written to a report folder (CSV and PNG).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.table import Table

from cotplan.cli.plan import (
    check_at_least,
    check_unit,
    console,
    print_budgets,
    print_calibration,
    print_certified,
    print_comparison,
    print_report,
    report_folder,
    save_chart,
)
from cotplan.io import write_csv

__all__ = ["DEMO_FALLBACK_FAMILY", "FULL", "QUICK", "DemoPreset", "demo_family", "register"]

#: The family the demo uses when the registry marks none as suited (measured; docs/planner.md).
DEMO_FALLBACK_FAMILY = "count"
#: Sizes per family: a small n and a harder one, as in benchmarks/task_families.py.
_SIZES = {
    "addition": (2, 4),
    "arithmetic": (1, 3),
    "coin_flip": (2, 4),
    "last_letter": (2, 4),
    "count": (3, 6),
    "pattern": (2, 4),
    "parity": (2, 4),
}
#: What-if pricing for the embedded model's tokens (its own price is a deliberate 0).
WHAT_IF_MODEL = "gpt-6.1-terra"


@dataclass(frozen=True)
class DemoPreset:
    """How much the demo measures: calibration items per size, the budget grid, held-out items
    per size, the cap standing for "uncapped", and bootstrap resamples.

    `budgets` None means the paper's Algorithm 1 grid for each size: `paper_count` log-spaced
    budgets in [0, 10 √n] (`cotplan.planner.calibrate.paper_budgets`).
    """

    count: int
    held_out: int
    uncapped: int
    bootstrap: int
    budgets: tuple[int, ...] | None = None
    paper_count: int = 8

    def grid(self, n: int) -> list[int]:
        """The budgets at size `n`."""
        from cotplan.planner.calibrate import paper_budgets

        if self.budgets is not None:
            return list(self.budgets)
        return paper_budgets(n, count=self.paper_count)


FULL = DemoPreset(count=12, held_out=8, uncapped=256, bootstrap=200)
QUICK = DemoPreset(count=8, held_out=4, uncapped=128, bootstrap=50, paper_count=4)


def demo_family() -> str:
    """The first built-in family marked as suited to the demo, else the measured fallback."""
    from cotplan.tasks import list_families

    marked = [info.name for info in list_families() if info.demo]
    return marked[0] if marked else DEMO_FALLBACK_FAMILY


def _auto_eps(planner: Any) -> tuple[float, str]:
    """The paper's relative ε = 0.25 made absolute, or the flat error (no benefit)."""
    from cotplan.planner.run import NO_BENEFIT_STATUSES, relative_target

    eps = relative_target(planner, 0.25)
    if planner.status_ in NO_BENEFIT_STATUSES:
        return eps, f"ε = {eps:.2f}: the error the model has at any budget (reasoning not credited)"
    return eps, (
        f"ε = {eps:.2f}: a quarter of the gain reasoning can buy left unclaimed "
        f"(e0 = {planner.e0_:.2f}, e_base = {planner.e_base_:.2f}; the paper's relative ε = 0.25)"
    )


def _print_costs(run: Any, queries_per_day: float, what_if: str, folder: Path) -> None:
    import pandas as pd

    from cotplan.pricing import EmpiricalTokens, Workload, project_costs

    workload = Workload(queries_per_day=queries_per_day, horizon_months=12)
    rows = []
    for model, label in ((run.model, "this model"), (what_if, "what-if")):
        for policy in ("uncapped", "planned"):
            answers = run.answers[policy]
            tokens = EmpiricalTokens(
                [a.question_tokens for a in answers],
                [a.reasoning_tokens + a.answer_tokens for a in answers],
                [a.reasoning_tokens for a in answers],
            )
            # cast: mypy reads EmpiricalTokens' read-only `n_observed` as not matching the
            # TokenDistribution protocol (reported to the costs area).
            projection = project_costs(model, workload, cast(Any, tokens), draws=20_000, seed=0)
            frame = projection.frame
            month = frame[frame["period"] == "month"].iloc[0]
            year = frame[frame["period"] == "year"].iloc[0]
            rows.append(
                {
                    "model": projection.model,
                    "pricing": label,
                    "policy": policy,
                    "tokens_per_query": float(
                        sum(a.question_tokens + a.completion_tokens for a in answers) / len(answers)
                    ),
                    "usd_per_query": projection.per_query_usd,
                    "month_p50_usd": float(month["p50_usd"]),
                    "month_p10_usd": float(month["p10_usd"]),
                    "month_p90_usd": float(month["p90_usd"]),
                    "year_mean_usd": float(year["mean_usd"]),
                }
            )
    costs = pd.DataFrame(rows)
    write_csv(costs, folder / "costs.csv")
    table = Table(
        title=f"Projected cost at {queries_per_day:,.0f} queries a day (first month, 12 months)"
    )
    for column in ("model", "policy", "tokens/query", "USD/query", "month P50", "P10–P90", "year"):
        table.add_column(column, justify="left" if column in ("model", "policy") else "right")
    for r in rows:
        what = " (what-if)" if r["pricing"] == "what-if" else ""
        table.add_row(
            f"{r['model']}{what}",
            str(r["policy"]),
            f"{r['tokens_per_query']:.0f}",
            f"{r['usd_per_query']:.6f}",
            f"{r['month_p50_usd']:,.2f}",
            f"{r['month_p10_usd']:,.2f}–{r['month_p90_usd']:,.2f}",
            f"{r['year_mean_usd']:,.2f}",
        )
    console.print(table)
    console.print(
        f"what-if: the same token counts priced at {what_if} (one call per query: the question "
        "in, reasoning and answer out); the embedded model itself costs nothing per token."
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        backend: Annotated[
            str, typer.Option(help="'local', 'local:PATH' or 'openai:MODEL'.")
        ] = "local",
        base_url: Annotated[str | None, typer.Option(help="An OpenAI-compatible endpoint.")] = None,
        family: Annotated[
            str | None, typer.Option(help="Task family (default: the demo's measured choice).")
        ] = None,
        quick: Annotated[
            bool, typer.Option(help="Fewer items and budgets: about a minute.")
        ] = False,
        eps: Annotated[
            float | None, typer.Option(help="Target error rate (default: chosen from the fit).")
        ] = None,
        queries_per_day: Annotated[
            float, typer.Option(help="Workload for the cost projection.")
        ] = 10_000,
        what_if: Annotated[
            str, typer.Option(help="API model whose prices the what-if projection uses.")
        ] = WHAT_IF_MODEL,
        count: Annotated[
            int | None, typer.Option(help="Calibration items per size (default: the preset's).")
        ] = None,
        held_out: Annotated[
            int | None, typer.Option(help="Held-out items per size (default: the preset's).")
        ] = None,
        seed: Annotated[int, typer.Option(help="Seed of the calibration items.")] = 0,
        out: Annotated[
            Path | None, typer.Option(help="Report folder (default reports/<time>/).")
        ] = None,
        progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
    ) -> None:
        """Calibrate, plan and run on a built-in task, then project the cost."""
        # Every option is checked before the model starts.
        if eps is not None:
            check_unit(eps, "eps")
        check_at_least(queries_per_day, "queries_per_day", 0)
        check_at_least(count, "count", 1)
        check_at_least(held_out, "held_out", 1)
        from cotplan.backends import connect
        from cotplan.charts.planner import budget_chart, calibration_chart
        from cotplan.planner import BudgetPlanner
        from cotplan.planner.calibrate import calibrate
        from cotplan.planner.run import plan_budgets, run_plan
        from cotplan.pricing import price_table
        from cotplan.tasks import get_family, make_tasks

        started = time.perf_counter()
        preset = QUICK if quick else FULL
        preset = replace(
            preset,
            count=preset.count if count is None else count,
            held_out=preset.held_out if held_out is None else held_out,
        )
        name = family or demo_family()
        info = get_family(name)
        sizes = _SIZES.get(name, (info.n_min, min(info.n_max, 2 * info.n_min)))
        price_table().resolve(what_if)  # fail before any model call on a typo
        folder = report_folder(out)
        items = [it for n in sizes for it in make_tasks(name, n=n, count=preset.count, seed=seed)]
        held = [
            it for n in sizes for it in make_tasks(name, n=n, count=preset.held_out, seed=seed + 1)
        ]
        seen = {it.prompt for it in items}
        held = [it for it in held if it.prompt not in seen]
        from cotplan.lab.reasoning.tasks import lab_demo_items  # a lab model: its own family

        lab = lab_demo_items(backend, count=preset.count, held_out=preset.held_out, seed=seed)
        if lab is not None:
            info, sizes, items, held, lab_budgets = cast(Any, lab)
            name, preset = info.name, replace(preset, budgets=lab_budgets)
        console.rule(f"cotplan demo: {name} ({info.description})")
        with connect(backend, base_url=base_url) as model:
            console.print(
                f"model {model.model}; sizes n = {', '.join(map(str, sizes))} ({info.n_meaning}); "
                f"{len(items)} calibration items at budgets k = "
                + "; ".join(f"{', '.join(map(str, preset.grid(n)))} (n = {n})" for n in sizes)
                + (" (the paper's grid, [0, 10√n])" if preset.budgets is None else "")
                + f"; {len(held)} held-out items"
            )
            console.rule("1. calibrate")
            calibration = calibrate(model, items, preset.grid, progress=progress)
            calibration.to_csv(folder / "calibration.csv")
            print_calibration(calibration)

            console.rule("2. plan")
            planner = BudgetPlanner(n_bootstrap=preset.bootstrap).fit(calibration.frame)
            print_report(planner)
            if eps is None:
                target, why = _auto_eps(planner)
                console.print(f"target: {why}")
            else:
                target = eps
            budgets = plan_budgets(planner, sizes, target)
            print_certified(planner, target)
            shown = [b for b in budgets.values() if b is not None]
            if shown:
                print_budgets(shown, target)
            else:
                console.print(f"plan: k* = 0 at every size ({planner.verdict_})")
            write_csv(planner.report().to_frame(), folder / "constants.csv")
            if shown:
                import pandas as pd

                write_csv(pd.concat([b.to_frame() for b in shown]), folder / "plan.csv")
                save_chart(budget_chart(planner, eps=target), folder / "budget.png")
            save_chart(calibration_chart(planner), folder / "calibration.png")

            console.rule("3. run the plan on held-out items")
            result = run_plan(
                model, planner, held, target, uncapped=preset.uncapped, progress=progress
            )
            print_comparison(result)
            write_csv(result.frame, folder / "run.csv")
            write_csv(result.comparison, folder / "comparison.csv")
            save_chart(result.chart(), folder / "comparison.png")

        console.rule("4. projected cost")
        _print_costs(result, queries_per_day, what_if, folder)
        console.rule()
        console.print(
            f"report folder: {folder} (calibration.csv, constants.csv, plan.csv, run.csv, "
            f"comparison.csv, costs.csv, *.png); finished in {time.perf_counter() - started:.0f} s"
        )
