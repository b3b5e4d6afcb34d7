"""`cotplan plan` and `cotplan run`: plan a cap from a calibration, apply it on held-out items.

Each command checks ALL its options before it reads a file or connects to a model, calls the
library and renders with `cotplan.render.plan`. `plan` calls
`cotplan.planner.plan_result.plan_from_calibration`, whose `PlanResult.save` writes the plan
folder (by default the calibration's own); `run` loads plan.json as written (no refit), has
`cotplan.workflow.held_out_items` choose its items and `cotplan.planner.held_out` check the
plan is this model's and protocol's, and calls `run_plan`, whose `PlanRun.save` writes the
run's tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cotplan.cli.options import (
    ALLOW_OTHER_MODEL,
    BACKEND_SPEC,
    BASE_URL,
    CONCURRENCY,
    CONNECTION,
    COUNT,
    DELTA,
    DETAILS,
    EXIT_CHOICE,
    EXIT_PLAN_FILE,
    FAMILY,
    OUT_NEXT_TO,
    REQUIRED,
    SHOW_PROGRESS,
    SIZES,
    TASKS_FILE,
    check_int,
    check_item_source,
    check_out,
    check_protocol,
    check_timeouts,
    connect_options,
    console,
    mode_and_protocol,
    opt,
    takes,
)
from cotplan.cli.report_folders import check_read, finish_report, start_report
from cotplan.cli.report_page import add_report_page
from cotplan.errors import InputError
from cotplan.render.plan import render_plan, render_plan_header, render_run
from cotplan.validation import check_call, require_choice, require_ints, trusting
from cotplan.workflow import before_run

__all__ = ["plan", "run"]

# fmt: off
PLAN_FROM_CALIBRATION = {
    "calibration": opt(Path, REQUIRED, "calibration.csv written by `cotplan calibrate`."),
    "eps": opt(float, REQUIRED, "Target error rate (share of wrong answers)."),
    "n": opt(list[str] | None, None, "Sizes to plan for, e.g. --n 6,40.", "--n"),
    "law": opt(str, "auto", "'auto' (chosen on held-out items), paper, paper-half, logistic, "
               "step, monotone."),
    "delta": DELTA,
    "log_base": opt(str, "e", "Base in which c is reported: e, 2 or 10."),
    "alpha": opt(str, "fit", "'fit' or a fixed exponent (0.5: the paper)."),
    "n_bootstrap": opt(int, 200, "Item-bootstrap resamples for the intervals.", "--bootstrap"),
    "seed": opt(int, 0, "Seed of the bootstrap."),
    "reach": opt(float, 2.0, "How far plan.cap(n) scales beyond the calibrated sizes (a factor "
                 "of n)."),
    "out": OUT_NEXT_TO,
    "exit": EXIT_CHOICE,
    "probe_every": opt(int, 16, "With --exit certified: probe every this many thinking tokens."),
    "exit_family": opt(str, "auto", "With --exit certified: the stopping rules tested: 'auto' "
                       "(agreement and probability together where probabilities are known), "
                       "'agreement', 'confidence', 'both', or 'all' (every chain, each at its "
                       "share of --delta)."),
    "details": DETAILS,
}
RUN_PLAN = {
    "plan": opt(Path, REQUIRED, "plan.json written by `cotplan plan`."),
    "family": FAMILY,
    "tasks": TASKS_FILE,
    "n": SIZES,
    "count": COUNT,
    "seed": opt(int, 1, "Seed of the held-out items (not the calibration's)."),
    "uncapped": opt(int, 512, "The cap that stands for 'uncapped'."),
    "backend": BACKEND_SPEC,
    "base_url": BASE_URL,
    "concurrency": CONCURRENCY,
    "allow_other_model": ALLOW_OTHER_MODEL,
    "out": OUT_NEXT_TO,
    "progress": SHOW_PROGRESS,
    **CONNECTION,
    "exit": EXIT_CHOICE,
    "exit_plan": EXIT_PLAN_FILE,
    "details": opt(bool, False, "Also print the plan's caps and the full policy comparison.",
                   "--details"),
}
# fmt: on


@takes(PLAN_FROM_CALIBRATION)
def plan(*, calibration: Path, eps: float, n: list[str] | None, **options: Any) -> None:
    """Plan reasoning caps from a calibration: print the cap per size (certified or not), what
    it saves, how to ship it and the law in a sentence (--details: the statistics); write
    plan.json for `cotplan run` and `cotplan serve` (and exit.json with --exit)."""
    from cotplan.charts import chart
    from cotplan.planner.held_out import plan_savings
    from cotplan.planner.plan_result import plan_from_calibration

    sizes = require_ints(n, "n", low=1)
    out, details = options.pop("out"), options.pop("details")
    check_out(out)  # the rest is checked by the library, all before the file is read
    check_read(calibration)
    result = plan_from_calibration(calibration, eps, sizes=sizes, **options)
    with start_report(out, calibration.parent, command="plan") as report:
        caps, savings = plan_savings(result)
        render_plan(
            console, result, folder=report.target, caps=caps, savings=savings, details=details
        )
        written = result.save(report.path, draw=chart)
        # plan.json last: a folder whose plan.json is new holds the new tables too.
        folder = finish_report(report, last=("plan.json",))
    page = add_report_page(folder, command="plan")
    names = ", ".join(path.name for path in [*written[1:], *([page] if page else [])])
    console.print(f"wrote {folder}/plan.json (for `cotplan run --plan`), {names}")


@takes(RUN_PLAN)
def run(**o: Any) -> None:
    """Apply the plan that `cotplan plan` wrote on held-out items; judge each size against
    ε and compare with uncapped."""
    from cotplan.backends import connect
    from cotplan.charts import chart
    from cotplan.planner.held_out import started_notes
    from cotplan.planner.run import run_plan

    asked = require_ints(o["n"], "n", low=1)
    check_item_source(o["family"], o["tasks"], asked)
    _check_run(o["count"], o["uncapped"], o["concurrency"], o["seed"], o["out"])
    check_timeouts(o["timeout"], o["max_retries"])
    check_protocol(o["protocol"])
    _check_exit(o["exit"], o["exit_plan"])
    plan, backend, allow = o["plan"], o["backend"], o["allow_other_model"]
    check_read(plan)
    saved, exits, notes, held = before_run(
        plan, o["exit"], o["exit_plan"], backend=backend, base_url=o["base_url"],
        protocol=o["protocol"], allow_other_model=allow, family=o["family"], tasks=o["tasks"],
        sizes=asked, count=o["count"], seed=o["seed"],
    )  # fmt: skip
    render_plan_header(console, saved, plan, held=held, notes=notes, details=o["details"])
    options = connect_options(backend, o["timeout"], o["max_retries"], o["protocol"])
    with (
        start_report(o["out"], plan.parent, command="run") as report,
        connect(backend, base_url=o["base_url"], **options) as model,
    ):
        for late in started_notes(saved, model, allow_other_model=allow, said=notes):
            console.print(f"[yellow]note:[/] {late}")
        console.print(f"model {model.model} ({mode_and_protocol(model)})")
        with trusting():  # checked before the model started; the plan brings its own ε
            result = run_plan(
                model, saved, held.items, uncapped=o["uncapped"], concurrency=o["concurrency"],
                progress=o["progress"], exit_plan=exits,
            )  # fmt: skip
        render_run(console, result, details=o["details"])
        written = result.save(report.path, draw=chart)
        folder = finish_report(report)
    page = add_report_page(folder, command="run")
    written += [page] if page else []
    console.print(f"wrote {folder}/" + ", ".join(path.name for path in written))


def _check_run(
    count: int, uncapped: int, concurrency: int | None, seed: int, out: Path | None
) -> None:
    check_int(count, "count", low=1)
    from cotplan.planner.run import run_plan

    check_call(run_plan, uncapped=uncapped)  # the library's declaration, before a model starts
    check_int(concurrency, "concurrency", low=1)
    check_out(out)
    check_int(seed, "seed", low=0)


def _check_exit(exit_: str, exit_plan: Path | None) -> None:
    from cotplan.planner.exit_plan import EXIT_CHOICES

    require_choice(exit_, "exit", EXIT_CHOICES)
    if exit_plan is not None and exit_ != "certified":
        raise InputError("is read only with --exit certified", field="exit_plan")
