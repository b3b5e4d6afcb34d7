"""The main job, end to end, as library calls: calibrate -> plan -> run -> projected cost.

`cotplan demo` is these functions with printing in between; a notebook calls them directly:

    from cotplan.backends import connect
    from cotplan.workflow import QUICK, demo_setup, run_demo

    setup = demo_setup("count", preset=QUICK)
    with connect("local") as model:
        demo = run_demo(model, setup)
    demo.costs                      # the monthly cost of both policies, two pricings

What `cotplan calibrate` and `cotplan run` decide before a model starts is here too:
`check_backend` (a backend spec checked without starting anything), `build_items` (a family's
items, a lab's, or a task file's), `held_out_items` (the items a saved plan is judged on) and
`preview_calibration` (what a calibration will take, and whether it may be paid for).

`project_run_costs` is the last step on its own: what a `PlanRun`'s measured tokens would cost
a month and a year at a stated workload, priced as the model that answered and as a what-if API
model. This module sits above the planner, pricing, tasks and the lab (it draws a lab model's
own items), and below the command line; it imports no charts, so charts stay a leaf that the
CLI and notebooks reach.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pandas as pd

from cotplan.validation import require_int

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from cotplan.backends.base import Backend
    from cotplan.planner import BudgetPlanner, SavedPlan
    from cotplan.planner.calibrate import Calibration
    from cotplan.planner.calibration_estimate import CalibrationEstimate
    from cotplan.planner.exit_plan import ExitPlan
    from cotplan.planner.held_out import HeldOut
    from cotplan.planner.records import Budget
    from cotplan.planner.run import PlanRun
    from cotplan.tasks import TaskItem

__all__ = [
    "DEMO_FALLBACK_FAMILY",
    "DEMO_STEPS",
    "FULL",
    "QUICK",
    "THINKING_BUDGETS",
    "THINKING_COUNT",
    "THINKING_UNCAPPED",
    "WHAT_IF_MODEL",
    "CalibrationPreview",
    "Demo",
    "DemoPreset",
    "DemoSetup",
    "auto_target",
    "before_run",
    "build_items",
    "check_backend",
    "default_uncapped",
    "demo_family",
    "demo_setup",
    "family_items",
    "held_out_items",
    "jupyterlab_command",
    "make_task_items",
    "native_thinker",
    "preview_calibration",
    "project_run_costs",
    "run_demo",
    "save_demo_step",
]

#: The family the demo uses when the registry marks none as suited (measured; docs/planner.md).
DEMO_FALLBACK_FAMILY = "count"
#: What-if pricing for the embedded model's tokens (its own price is a deliberate 0).
WHAT_IF_MODEL = "gpt-6.1-terra"
#: The steps `run_demo` reports, in order.
DEMO_STEPS = ("calibrate", "plan", "run", "cost")


@dataclass(frozen=True)
class DemoPreset:
    """How much the demo measures: calibration items per size, the budget grid, held-out items
    per size, the cap standing for "uncapped", and bootstrap resamples.

    `budgets` None means the paper's Algorithm 1 grid for each size: `paper_count` log-spaced
    budgets in [0, 10 √n] (`cotplan.planner.budget_grids.paper_budgets`).
    """

    count: int
    held_out: int
    uncapped: int
    bootstrap: int
    budgets: tuple[int, ...] | None = None
    paper_count: int = 8

    def grid(self, n: int) -> list[int]:
        """The budgets at size `n`."""
        from cotplan.planner.budget_grids import paper_budgets

        if self.budgets is not None:
            return list(self.budgets)
        return paper_budgets(n, count=self.paper_count)


FULL = DemoPreset(count=12, held_out=8, uncapped=256, bootstrap=200)
QUICK = DemoPreset(count=8, held_out=4, uncapped=128, bootstrap=50, paper_count=4)

#: Budgets for a model that thinks natively: its work settles the answer after tens of tokens
#: and its over-thinking runs on past a hundred, far beyond the paper's [0, 10 √n] grid.
THINKING_BUDGETS = {"full": (0, 16, 32, 48, 64, 96, 128), "quick": (0, 24, 48, 96)}
THINKING_UNCAPPED = 320


def native_thinker(backend: str) -> bool:
    """Whether the backend spec names a model that thinks natively (`<think>` and the like),
    by the model registry's protocol for its name (``local:thinking`` is the embedded one)."""
    from cotplan.backends.adapters import ADAPTER_ALIASES
    from cotplan.generate.protocols import protocol_for

    name = backend.partition(":")[2] or backend
    return protocol_for(ADAPTER_ALIASES.get(name, name)) != "plain"


#: Calibration items a size for a native thinker's full demo: with no error in 16 items a budget
#: is certified at ε = 0.2 (exact bound 0.171 at 95%); 12 bound it only by 0.221, and an
#: uncertified plan on the law's point estimate cut the thinking model's answers short.
THINKING_COUNT = 16


def _thinking_preset(preset: DemoPreset) -> DemoPreset:
    quick = preset.uncapped < FULL.uncapped
    grid = THINKING_BUDGETS["quick" if quick else "full"]
    count = preset.count if quick else max(preset.count, THINKING_COUNT)
    return replace(
        preset, budgets=grid, uncapped=max(preset.uncapped, THINKING_UNCAPPED), count=count
    )


def demo_family() -> str:
    """The first built-in family marked as suited to the demo, else the measured fallback."""
    from cotplan.tasks import list_families

    marked = [info.name for info in list_families() if info.demo]
    return marked[0] if marked else DEMO_FALLBACK_FAMILY


@dataclass(frozen=True)
class DemoSetup:
    """What the demo will measure: the family, its sizes, calibration and held-out items
    (disjoint by id and by prompt) and the preset (a lab model brings its own budget grid)."""

    family: str
    description: str
    n_meaning: str
    sizes: tuple[int, ...]
    items: tuple[TaskItem, ...]
    held_out: tuple[TaskItem, ...]
    preset: DemoPreset


def demo_setup(
    family: str | None = None,
    *,
    backend: str = "local",
    preset: DemoPreset = FULL,
    count: int | None = None,
    held_out: int | None = None,
    seed: int = 0,
) -> DemoSetup:
    """The items the demo answers: `count` calibration items (seed `seed`) and `held_out`
    held-out items (seed `seed + 1`, minus any question calibration saw) at each of the
    family's two sizes; `count`/`held_out` None take the preset's. A lab backend
    (``lab:FAMILY``) is answered on its own family, sizes and budgets instead."""
    from cotplan.research.lab.reasoning.tasks import lab_demo_items
    from cotplan.tasks import drop_seen, get_family, make_tasks

    if native_thinker(backend):
        preset = _thinking_preset(preset)
    preset = replace(
        preset,
        count=preset.count if count is None else require_int(count, "count", low=1),
        held_out=preset.held_out if held_out is None else require_int(held_out, "held_out", low=1),
    )
    lab = lab_demo_items(backend, count=preset.count, held_out=preset.held_out, seed=seed)
    if lab is not None:
        lab_info, lab_sizes, lab_items, lab_held, lab_budgets = lab
        return DemoSetup(
            lab_info.name,
            lab_info.description,
            lab_info.n_meaning,
            tuple(lab_sizes),
            tuple(lab_items),
            tuple(lab_held),
            replace(preset, budgets=lab_budgets),
        )
    name = family or demo_family()
    info = get_family(name)
    sizes = info.sizes or (info.n_min, min(info.n_max, 2 * info.n_min))
    items = [it for n in sizes for it in make_tasks(name, n=n, count=preset.count, seed=seed)]
    drawn = [
        it for n in sizes for it in make_tasks(name, n=n, count=preset.held_out, seed=seed + 1)
    ]
    held, _ = drop_seen(drawn, items)
    return DemoSetup(
        name, info.description, info.n_meaning, tuple(sizes), tuple(items), tuple(held), preset
    )


def auto_target(planner: BudgetPlanner) -> tuple[float, str]:
    """The paper's relative ε = 0.25 made absolute, with why; on a fit where reasoning has no
    effect, the error the model has at any budget."""
    from cotplan.planner.run import NO_BENEFIT_STATUSES, relative_target

    eps = relative_target(planner, 0.25)
    if planner.status_ in NO_BENEFIT_STATUSES:
        return eps, f"ε = {eps:.2f}: the error the model has at any budget (reasoning not credited)"
    return eps, (
        f"ε = {eps:.2f}: a quarter of the gain reasoning can buy left unclaimed "
        f"(e0 = {planner.e0_:.2f}, e_base = {planner.e_base_:.2f}; the paper's relative ε = 0.25)"
    )


def project_run_costs(
    run: PlanRun,
    queries_per_day: float,
    what_if: str = WHAT_IF_MODEL,
    *,
    horizon_months: int = 12,
    draws: int = 20_000,
    seed: int = 0,
) -> pd.DataFrame:
    """What both policies of `run` would cost at `queries_per_day`: one row per pricing (the
    model that answered, then `what_if`) and policy (uncapped, planned), each priced from the
    run's own token counts (one call per query: the question in, reasoning and answer out).

    Columns: model, pricing ("this model" or "what-if"), policy, tokens_per_query,
    usd_per_query, month_p50_usd, month_p10_usd, month_p90_usd (the first month) and
    year_mean_usd (the first twelve months)."""
    from cotplan.pricing import EmpiricalTokens, Workload, project_costs

    workload = Workload(queries_per_day=queries_per_day, horizon_months=horizon_months)
    rows = []
    for model, label in ((run.model, "this model"), (what_if, "what-if")):
        for policy in ("uncapped", "planned"):
            answers = run.answers[policy]
            tokens = EmpiricalTokens(
                [a.question_tokens for a in answers],
                [a.reasoning_tokens + a.answer_tokens for a in answers],
                [a.reasoning_tokens for a in answers],
            )
            projection = project_costs(model, workload, tokens, draws=draws, seed=seed)
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
    return pd.DataFrame(rows)


@dataclass
class Demo:
    """The demo's results, filled step by step (`run_demo` hands it to `on_step` after each).

    `target` is the ε planned for and `target_reason` why (empty when the caller gave ε);
    `budgets` maps each size to its k* (None where reasoning is not credited)."""

    setup: DemoSetup
    model: str
    calibration: Calibration | None = None
    planner: BudgetPlanner | None = None
    target: float = float("nan")
    target_reason: str = ""
    budgets: dict[int, Budget | None] = field(default_factory=dict)
    run: PlanRun | None = None
    costs: pd.DataFrame | None = None

    @property
    def planned(self) -> list[Budget]:
        """The budgets that were planned (sizes where reasoning is credited)."""
        return [b for b in self.budgets.values() if b is not None]


def run_demo(
    model: Backend,
    setup: DemoSetup,
    *,
    eps: float | None = None,
    queries_per_day: float = 10_000,
    what_if: str = WHAT_IF_MODEL,
    progress: bool = True,
    on_step: Callable[[str, Demo], None] | None = None,
) -> Demo:
    """Calibrate `model` on the setup's items, fit the planner, plan k* for `eps` (None:
    `auto_target`), run the plan on the held-out items next to uncapped reasoning, and project
    the cost of both policies. `on_step(step, demo)` is called after each of `DEMO_STEPS`."""
    from cotplan.planner import BudgetPlanner
    from cotplan.planner.calibrate import calibrate
    from cotplan.planner.run import plan_budgets, run_plan

    def done(step: str) -> None:
        if on_step is not None:
            on_step(step, demo)

    preset = setup.preset
    demo = Demo(setup, model.model)
    demo.calibration = calibrate(model, setup.items, preset.grid, progress=progress)
    done("calibrate")
    planner = BudgetPlanner(n_bootstrap=preset.bootstrap).fit(demo.calibration.frame)
    demo.planner = planner
    demo.target, demo.target_reason = auto_target(planner) if eps is None else (eps, "")
    demo.budgets = plan_budgets(planner, setup.sizes, demo.target)
    done("plan")
    demo.run = run_plan(
        model, planner, setup.held_out, demo.target, uncapped=preset.uncapped, progress=progress
    )
    done("run")
    demo.costs = project_run_costs(demo.run, queries_per_day, what_if)
    done("cost")
    return demo


# -- the inputs of `cotplan calibrate` and `cotplan run` ---------------------------------------

#: The cap of an uncapped run on the embedded and lab models, whose runs on 2 cores take
#: minutes at the API default (`cotplan.planner.auto_grid.UNCAPPED_TOKENS`).
LOCAL_UNCAPPED_TOKENS = 4096


def default_uncapped(backend: str) -> int:
    """The default cap of an uncapped run for `backend`'s provider."""
    from cotplan.planner.auto_grid import UNCAPPED_TOKENS

    provider = backend.partition(":")[0]
    return LOCAL_UNCAPPED_TOKENS if provider in ("local", "lab") else UNCAPPED_TOKENS


def check_backend(spec: str, base_url: str | None = None) -> None:
    """`spec` (with `base_url`) is a backend `connect` can honour, checked without starting
    or calling anything.

    For the embedded engine the model file is located and checked (a known name on this
    machine, or a GGUF file: not a folder, a device or a missing path); for an endpoint the
    URL must be http(s). A lab family must be known. API keys are checked by `connect` (which
    sends nothing either).
    """
    from cotplan.errors import InputError

    if not isinstance(spec, str) or not spec.strip():
        raise InputError("must be 'local', 'local:PATH', or 'openai:MODEL'", field="backend")
    provider, _, rest = spec.partition(":")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise InputError(f"must start with http:// or https://, got {base_url!r}", field="base_url")
    if provider == "local":
        from cotplan.backends.models import locate
        from cotplan.errors import ModelFileError

        try:
            locate(rest or "smollm2-135m-instruct")
        except ModelFileError as exc:
            raise InputError(str(exc), field="backend") from exc
        return
    if provider == "lab":
        from cotplan.research.lab.reasoning.tasks import get_lab_family

        try:
            get_lab_family(rest)  # "parity" or "lab-parity"
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], field="backend") from exc
        return
    if provider == "openai" and not rest:
        raise InputError("name the model: 'openai:MODEL'", field="backend")
    from cotplan.backends.registry import check_spec

    check_spec(spec, base_url)


def family_items(
    family: str, *, n: int, count: int, seed: int, backend: str | None = None
) -> list[TaskItem]:
    """`count` items of `family` at size `n`: a built-in family's, or a lab family's where the
    name says so (``lab-parity``) or the backend is a lab model (``lab:parity-overthink``),
    whose models read only their own questions ("Parity: [1] 1 [2] 0 ...")."""
    from cotplan.tasks import make_tasks

    lab_backend = backend is not None and backend.partition(":")[0] == "lab"
    if family.startswith("lab-") or lab_backend:
        from cotplan.research.lab.reasoning.tasks import make_lab_tasks

        return make_lab_tasks(family, n=n, count=count, seed=seed)
    return make_tasks(family, n=n, count=count, seed=seed)


def build_items(
    family: str | None,
    tasks: str | Path | None,
    sizes: Sequence[int],
    count: int,
    seed: int,
    *,
    backend: str | None = None,
) -> list[TaskItem]:
    """Items from a built-in family (`count` at each size) or from a JSONL task file (exactly
    one of `family` and `tasks`)."""
    from cotplan.errors import InputError
    from cotplan.tasks import load_tasks

    if (family is None) == (tasks is None):
        raise InputError("give exactly one of --family and --tasks", field="family")
    if tasks is not None:
        return list(load_tasks(tasks))
    assert family is not None
    if not sizes:
        raise InputError("give at least one size, e.g. --n 4,8", field="n")
    return [
        item
        for n in sizes
        for item in family_items(family, n=n, count=count, seed=seed, backend=backend)
    ]


def make_task_items(
    family: str | None,
    family_option: str | None,
    *,
    sizes: Sequence[int] | None,
    count: int,
    seed: int,
    backend: str | None,
    out: Path | None,
) -> tuple[str, list[TaskItem]]:
    """`cotplan tasks make`'s items: the family (given once, as the argument or as the option)
    and `count` items of it at each of `sizes`, every input checked first."""
    from cotplan.errors import InputError

    if (family is None) == (family_option is None):
        raise InputError("give the family once: as an argument or as --family", field="family")
    name = family if family is not None else family_option
    assert name is not None
    if not sizes:
        raise InputError("give at least one size, e.g. --n 4", field="n")
    if out is not None and out.is_dir():
        raise InputError(f"{out} is a folder; name a file in it, e.g. tasks.jsonl", field="out")
    if backend is not None:
        check_backend(backend)
    items = [
        item
        for size in sizes
        for item in family_items(name, n=size, count=count, seed=seed, backend=backend)
    ]
    return name, items


def held_out_items(
    plan: SavedPlan,
    *,
    family: str | None,
    tasks: str | Path | None,
    sizes: Sequence[int] = (),
    count: int = 12,
    seed: int = 1,
    backend: str | None = None,
) -> HeldOut:
    """The items `plan` is run on: made from `family` at `sizes` (none: the plan's own) or
    read from `tasks` (sized by the file), none beyond the plan's reach and none its
    calibration answered (`cotplan.planner.held_out.choose_held_out`)."""
    from cotplan.planner.held_out import choose_held_out

    chosen = list(sizes) or list(plan.sizes_)
    items = build_items(family, tasks, chosen, count, seed, backend=backend)
    return choose_held_out(plan, items, sizes=None if tasks is not None else chosen)


def before_run(
    plan: Path,
    exit: str,
    exit_plan: Path | None,
    *,
    backend: str,
    base_url: str | None,
    protocol: str,
    allow_other_model: bool,
    family: str | None,
    tasks: Path | None,
    sizes: list[int],
    count: int,
    seed: int,
) -> tuple[SavedPlan, ExitPlan | None, list[str], HeldOut]:
    """The plan at `plan`, its exit plan (with `exit` "certified"), the notes on binding it to
    this backend and protocol, and the held-out items: everything `cotplan run` refuses before
    the model (maybe paid, maybe slow) starts."""
    from cotplan.planner.exit_plan import exit_plan_for
    from cotplan.planner.held_out import binding_notes
    from cotplan.planner.run import SavedPlan

    saved = SavedPlan.load(plan)
    exits = None
    if exit == "certified":
        exits = exit_plan_for(exit_plan, plan, eps=saved.eps, model=saved.model)
    notes = binding_notes(
        saved, backend=backend, base_url=base_url, protocol=protocol,
        allow_other_model=allow_other_model,
    )  # fmt: skip
    held = held_out_items(
        saved, family=family, tasks=tasks, sizes=sizes, count=count, seed=seed, backend=backend
    )
    return saved, exits, notes, held


@dataclass(frozen=True)
class CalibrationPreview:
    """What a calibration will take before its first request (`estimate`), and whether the
    backend may charge for it (`paid`: not the embedded or a lab model, not on loopback)."""

    estimate: CalibrationEstimate
    paid: bool

    def to_frame(self) -> pd.DataFrame:
        """The estimate's lines, one a row, with the paid flag."""
        return pd.DataFrame({"line": self.estimate.lines(), "paid": self.paid})


def _on_loopback(base_url: str | None) -> bool:
    """An endpoint on this machine (a local vLLM or llama.cpp server) charges nothing."""
    from urllib.parse import urlsplit

    if base_url is None:
        return False
    host = urlsplit(base_url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def preview_calibration(
    model: Backend,
    items: Sequence[TaskItem],
    grid: Sequence[int] | str,
    *,
    backend: str,
    base_url: str | None = None,
    uncapped_tokens: int,
    answer_tokens: int = 16,
) -> CalibrationPreview:
    """The estimate of a calibration of `items` at `grid` ('auto', 'paper' or budgets) on
    `model`, and whether `backend` may charge for it."""
    from cotplan.planner.budget_grids import paper_budgets
    from cotplan.planner.calibration_estimate import estimate_calibration
    from cotplan.research.reproduce_plan import is_paid

    of_n: Callable[[int], Sequence[int]] | None
    if grid == "auto":
        of_n = None
        words = (
            "auto (0 + up to 12 geometric, to about the 95th percentile of thinking capped "
            f"at {uncapped_tokens})"
        )
    elif grid == "paper":
        of_n = paper_budgets
        words = "paper (Algorithm 1's grid per size)"
    else:
        fixed = [int(k) for k in grid]
        of_n = lambda n: fixed  # noqa: E731 - one grid for every size
        words = ", ".join(map(str, fixed))
    estimate = estimate_calibration(
        model,
        items,
        of_n,
        uncapped_tokens=uncapped_tokens,
        answer_tokens=answer_tokens,
        describe=words,
    )
    return CalibrationPreview(estimate, is_paid(backend) and not _on_loopback(base_url))


def save_demo_step(step: str, result: Demo, folder: Path) -> None:
    """Write the tables and charts of the step `run_demo` just finished into `folder`."""
    from cotplan.charts import chart
    from cotplan.charts.planner import budget_chart, calibration_chart
    from cotplan.io import write_csv
    from cotplan.io.reports import save_chart

    if step == "calibrate" and result.calibration is not None:
        result.calibration.to_csv(folder / "calibration.csv")
    elif step == "plan" and result.planner is not None:
        write_csv(result.planner.report().to_frame(), folder / "constants.csv")
        if result.planned:
            write_csv(pd.concat([b.to_frame() for b in result.planned]), folder / "plan.csv")
            save_chart(budget_chart(result.planner, eps=result.target), folder / "budget.png")
        save_chart(calibration_chart(result.planner), folder / "calibration.png")
    elif step == "run" and result.run is not None:
        write_csv(result.run.frame, folder / "run.csv")
        write_csv(result.run.comparison, folder / "comparison.csv")
        save_chart(chart(result.run), folder / "comparison.png")


def jupyterlab_command(notebooks: Path, port: int, open_browser: bool) -> list[str]:
    """The JupyterLab command line (`cotplan notebooks`): loopback only, root allowed where we
    run as root."""
    import importlib.util
    import os
    import sys

    from cotplan.errors import ConfigError, InputError

    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise InputError(f"must be in 1..65535, got {port!r}", field="port")
    if not notebooks.is_dir():
        raise InputError(f"{notebooks} is not a folder", field="notebooks")
    if importlib.util.find_spec("jupyterlab") is None:
        raise ConfigError("JupyterLab is not installed: pip install 'cotplan[dev]'")
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--notebook-dir={notebooks.resolve()}",
    ]
    if not open_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return command
