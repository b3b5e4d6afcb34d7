"""`cotplan kstar-lab ...`: train the lab reasoning models and test the k* law on them.

- ``cotplan kstar-lab train FAMILY``: train a lab family's model now and print what training
  measured (``--export DIR`` also writes shipped-weights files).
- ``cotplan kstar-lab study [FAMILY ...]``: the study of `cotplan.research.lab.reasoning.study` per
  family: the error grid, the planner's constants, which law holds, the oracle per-item budget
  and the held-out policies; tables and charts go into a report folder.
- ``cotplan kstar-lab weights``: the weights that ship (key, checksum, still fitting?).
- ``cotplan kstar-lab law FAMILY``: the law on the paper's terms (B(k), relative ε, the
  theorem's domain; `cotplan.research.lab.reasoning.logloss`).

Every option is checked before a model is loaded or trained. ``--seed`` picks the model's
training seed (train, study, law): seed 0 is the shipped model, another is trained on first use.

Register with ``lab_reasoning.register(app)`` (adds the ``kstar-lab`` group).
"""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cotplan.cli.report_folders import finish_report, start_report
from cotplan.errors import InputError
from cotplan.validation import require_int

if TYPE_CHECKING:  # the lab is imported inside each command, so the CLI starts without it
    from cotplan.research.lab.reasoning.settings import TrainSettings

__all__ = ["app", "print_study", "register"]

console = Console()

app = typer.Typer(
    help="Lab reasoning models: train them, and test the k* law where the mechanism is known.",
    no_args_is_help=True,
)

Preset = Annotated[
    str,
    typer.Option(
        help="Preset: tiny, quick, standard (sizes to 16; to 25 for blocks), wide (the lamp on "
        "sizes to 64, solving n ≤ 32) or long (the lamp solved to n = 64; wide-late and "
        "wide-top are its training stages)."
    ),
]
Threads = Annotated[int, typer.Option(help="torch threads (1 on a shared machine).")]
Seed = Annotated[
    int,
    typer.Option(
        help="Training seed of the model (0: the shipped weights). Another seed is stored "
        "apart, and every curriculum stage it starts from is trained with it when missing."
    ),
]


def _frame_table(frame: pd.DataFrame, title: str, digits: int = 2) -> Table:
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column), justify="right")
    for row in frame.itertuples(index=False):
        table.add_row(*(escape(_cell(v, digits)) for v in row))
    return table


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if math.isinf(value):
            return "∞"
        if abs(value) < 1e-9:
            return "0"  # rounding noise of a fit (9.9e-16) reads as a number otherwise
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        if abs(value) < 10**-digits:
            return f"{value:.2g}"
        return f"{value:.{digits}f}"
    return str(value)


def _set_threads(threads: int) -> None:
    from cotplan.research.lab._torch import require_torch

    require_torch().set_num_threads(max(1, threads))


def print_study(study: Any) -> None:
    """Print one `LabStudy` the way `cotplan kstar-lab study` does."""
    meta = study.train_meta
    console.rule(f"[bold]{study.family}[/] ({study.model})")
    console.print(
        f"trained in {meta.get('train_seconds', '?')} s ({meta.get('parameters', '?')} "
        f"parameters); greedy accuracy with the full trace {meta.get('accuracy_full_trace')}, "
        f"without reasoning {meta.get('accuracy_no_reasoning')}"
    )
    grid = study.to_frame()
    picks = []
    for n, group in grid.groupby("n"):
        full = 3 * int(n)
        wanted = [0, full // 4, full // 2, 3 * full // 4, full - 1, full, full + 3]
        for k in sorted(set(wanted)):
            row = group[group["k"] == k]
            if len(row):
                picks.append(row.iloc[0])
    summary = pd.DataFrame(picks)[
        ["n", "k", "answers", "error", "low", "high", "blind", "fitted"]
    ].astype({"n": int, "k": int, "answers": int})
    console.print(_frame_table(summary, "Error by size and budget (excerpt; low/high: Wilson 95%)"))
    console.print(escape(study.verdict))
    console.print(_frame_table(study.constants_frame(), "Planner constants (95% item bootstrap)"))
    console.print(_frame_table(study.laws, "The curve with α free, 1/2 and 1 (likelihood)"))
    law = study.law_frame()
    console.print(_frame_table(law, "k*(n, ε): observed, planned, full trace, √n law"))
    console.print(_frame_table(study.exponents, "n-exponent β of the observed k* per ε"))
    console.print(_frame_table(study.oracle_summary(), "Oracle per-item budget (calibration)", 1))
    console.print(_frame_table(study.plan.drop(columns=["note"]), "Planned caps", 2))
    columns = [
        "policy",
        "items",
        "accuracy",
        "accuracy_low",
        "accuracy_high",
        "reasoning_tokens",
        "tokens_saved",
        "tokens_saved_low",
        "tokens_saved_high",
    ]
    console.print(
        _frame_table(study.heldout[columns], "Held-out items (paired bootstrap vs uncapped)")
    )
    console.print(f"[bold]law:[/] {escape(study.law)}")


def _check_threads(threads: int) -> None:
    require_int(threads, "threads", low=1, high=256)


def _check_folder(path: Path | None, field: str) -> None:
    """A folder to write into: no NUL byte, and neither it nor a parent is a file."""
    if path is None:
        return
    text = str(path)
    if "\x00" in text or not text.strip():
        raise InputError(f"is not a usable folder name: {text!r}", field=field)
    target = path.expanduser()
    for candidate in (target, *target.parents):
        if candidate.exists() and not candidate.is_dir():
            raise InputError(f"{candidate} is a file, not a folder", field=field)


def _parse_ints(text: str, field: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise InputError(
            f"must be whole numbers separated by commas, got {text!r}", field=field
        ) from exc
    if not values or any(v < 1 for v in values):
        raise InputError(f"must be whole numbers ≥ 1, got {text!r}", field=field)
    return values


def _trained_sizes(text: str, settings: TrainSettings, field: str) -> list[int]:
    """Sizes parsed from `text` that the model trained with `settings` was trained on."""
    sizes = _parse_ints(text, field)
    outside = [n for n in sizes if not settings.n_min <= n <= settings.n_max]
    if outside:
        raise InputError(
            f"sizes {outside} are outside what this preset's model is trained on "
            f"({settings.n_min}..{settings.n_max})",
            field=field,
        )
    return sizes


def _parse_eps(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise InputError(f"must be numbers separated by commas, got {text!r}", field="eps") from exc
    if not values or any(not 0 < v < 1 for v in values):
        raise InputError(f"targets must be in (0, 1), got {text!r}", field="eps")
    return values


@app.command("train")
def train_command(
    family: Annotated[
        str, typer.Argument(help="A lab family: parity, sum, state, lamp, blocks, ...")
    ],
    *,
    preset: Preset = "standard",
    seed: Seed = 0,
    threads: Threads = 1,
    export: Annotated[
        Path | None,
        typer.Option(help="Also write the weights and their record (key, SHA-256) here."),
    ] = None,
    estimate: Annotated[
        int,
        typer.Option(help="Only time this many steps and print how long training would take."),
    ] = 0,
    check_sizes: Annotated[
        str,
        typer.Option(
            help="Sizes training's check measures, comma-separated (default: the smallest, "
            "middle and largest trained size)."
        ),
    ] = "",
) -> None:
    """Train a lab family's model now (saved in the user folder) and print its checks.

    Shipped weights are not touched; `--export cotplan/research/lab/reasoning/weights` refreshes
    them.
    """
    from cotplan.research.lab.reasoning.shipped import ship
    from cotplan.research.lab.reasoning.train import load_or_train, settings_for

    settings = settings_for(family, preset, seed=seed)  # validates the family, preset, seed
    if export is not None and settings.seed != 0:
        raise InputError(f"only seed 0's weights ship; drop --export for seed {seed}", field="seed")
    checks = _trained_sizes(check_sizes, settings, "check_sizes") if check_sizes.strip() else None
    _check_threads(threads)
    _check_folder(export, "export")
    require_int(estimate, "estimate", low=0, high=10_000)
    _set_threads(threads)
    started = time.perf_counter()
    if estimate:
        from cotplan.research.lab.reasoning.train import time_training

        per_step = time_training(settings, estimate)
        console.print(
            f"{settings.family} {preset!r} (n = {settings.n_min}..{settings.n_max}, batch "
            f"{settings.batch_size}, {threads} thread(s)): {per_step:.3f} s per step over "
            f"{estimate} steps; its {settings.steps} steps would take about "
            f"{per_step * settings.steps / 60:.1f} min on this machine as loaded now"
        )
        return

    def progress(step: int, loss: float) -> None:
        if step % 500 == 0:
            console.print(f"step {step}: loss {loss:.4f}")

    model = load_or_train(
        settings.family, preset, seed=seed, retrain=True, progress=progress, check_sizes=checks
    )
    console.print(f"{model.family} ({model.key[:12]}): {model.meta}")
    if export is not None:
        console.print(f"wrote {ship(model, preset, export.expanduser())}")
    console.print(f"finished in {time.perf_counter() - started:.0f} s")


@app.command("study")
def study_command(
    families: Annotated[list[str] | None, typer.Argument(help="Families (default: all).")] = None,
    *,
    preset: Preset = "standard",
    seed: Seed = 0,
    out: Annotated[Path | None, typer.Option(help="Report folder.")] = None,
    threads: Threads = 1,
    charts: Annotated[bool, typer.Option(help="Save PNG charts.")] = True,
) -> None:
    """Test k* = Θ(√n·log(1/ε)) on lab models: grid, constants, law, oracle, held-out.

    `--seed` is the models' training seed; the items and bootstraps keep the study's own seed.
    """
    import dataclasses

    from cotplan.charts import save as save_result
    from cotplan.research.lab.reasoning.study import (
        STUDY_PRESETS,
        reasoning_study,
        study_report_rows,
    )
    from cotplan.research.lab.reasoning.tasks import get_lab_family, lab_families
    from cotplan.research.lab.reasoning.train import settings_for

    names = [get_lab_family(f).name for f in (families or list(lab_families))]
    if preset not in STUDY_PRESETS:
        raise InputError(
            f"unknown preset {preset!r}; choose from {', '.join(STUDY_PRESETS)}", field="preset"
        )
    studies_settings = {}
    for name in names:
        trained = settings_for(name, STUDY_PRESETS[preset].train, seed=seed)
        studies_settings[name] = dataclasses.replace(STUDY_PRESETS[preset], train=trained)
        outside = [
            n for n in STUDY_PRESETS[preset].sizes if not trained.n_min <= n <= trained.n_max
        ]
        if outside:
            raise InputError(
                f"sizes {outside} are outside what {name}'s {preset} model is trained on",
                field="preset",
            )
    _check_threads(threads)
    _check_folder(out, "out")
    _set_threads(threads)
    started = time.perf_counter()
    studies = []
    with start_report(out, kind="kstar-lab", command="kstar-lab study") as report:
        for name in names:
            study = reasoning_study(name, studies_settings[name])
            studies.append(study)
            print_study(study)
            save_result(study, report.path / name, charts=charts)
            console.print(f"{name}: {study.seconds:.0f} s")
        rows = pd.DataFrame([r.as_dict() for r in study_report_rows(studies)])
        console.rule("reproduction report rows")
        console.print(
            _frame_table(rows[["claim", "measured", "interval", "verdict"]], "k* on lab models")
        )
        rows.to_csv(report.path / "report.csv", index=False)
        folder = finish_report(report)
    console.print(f"wrote {folder}; finished in {time.perf_counter() - started:.0f} s")


#: The columns `law` prints of the premise test, the k* table and the exponents.
_PREMISE_COLUMNS = (
    *("measure", "n", "items", "share_1", "share_2", "share_3"),
    *("c12", "c12_low", "c12_high", "c23", "c23_low", "c23_high"),
    *("c13", "c13_low", "c13_high", "premise"),
)
_BUDGET_COLUMNS = (
    *("n", "eps", "k", "low", "high", "k_robust", "robust_low", "robust_high"),
    *("full_trace", "in_domain"),
)
_EXPONENT_COLUMNS = ("measure", "reading", "eps", "beta", "low", "high", "sizes_reached", "law")
_DOMAIN_COLUMNS = (
    *("measure", "reading", "eps", "beta_domain", "low_domain", "high_domain"),
    *("sizes_in_domain", "law_domain"),
)


@app.command("law")
def law_command(
    family: Annotated[str, typer.Argument(help="A lab family: lamp, parity, blocks, ...")],
    *,
    sizes: Annotated[str, typer.Option(help="Sizes n, comma-separated.")] = "4,8,16",
    items: Annotated[int, typer.Option(help="Items per size.")] = 120,
    eps: Annotated[
        str, typer.Option(help="Relative targets ε, comma-separated.")
    ] = "0.5,0.4,0.3,0.2,0.1,0.05",
    preset: Preset = "standard",
    seed: Seed = 0,
    bootstrap: Annotated[int, typer.Option(help="Item-bootstrap resamples.")] = 200,
    out: Annotated[Path | None, typer.Option(help="Folder for the tables (CSV).")] = None,
    threads: Threads = 1,
) -> None:
    """The law on the paper's terms: B(k) = mean −ln P(correct answer), relative ε, domain."""
    from cotplan.research.lab.reasoning.backend import LabBackend
    from cotplan.research.lab.reasoning.logloss import logloss_study
    from cotplan.research.lab.reasoning.train import settings_for

    settings = settings_for(family, preset, seed=seed)
    ns = _trained_sizes(sizes, settings, "sizes")
    targets = _parse_eps(eps)
    require_int(items, "items", low=1, high=100_000)
    require_int(bootstrap, "bootstrap", low=0, high=100_000)
    _check_threads(threads)
    _check_folder(out, "out")
    _set_threads(threads)
    started = time.perf_counter()
    backend = LabBackend.for_family(settings.family, preset, seed=seed)
    study = logloss_study(backend, sizes=ns, items=items, eps_grid=targets, n_bootstrap=bootstrap)
    curve = study.to_frame()
    step = curve.groupby("n")["k"].transform(lambda k: max(1, len(k) // 8))
    excerpt = curve[
        (curve.groupby("n").cumcount() % step == 0)
        | (curve["k"] == curve.groupby("n")["k"].transform("max"))
    ]
    console.rule(f"[bold]{study.family}[/] ({study.model}): B(k) in nats, 95% item bootstrap")
    console.print(
        _frame_table(
            excerpt[["n", "k", "items", "B", "B_low", "B_high", "B_gap", "error", "mechanism"]],
            "B(k), its relative gap ε(k), the 0/1 error and the mechanism's reference (excerpt)",
            3,
        )
    )
    console.print(
        _frame_table(
            study.premise[list(_PREMISE_COLUMNS)],
            "the theorem's premise: B falls fastest first (shares of the drop B(0) − B(full "
            "trace) by third; cij: drop over third i minus over third j, with a t interval "
            "over items, 5%/3 per tail: fails at most 5% of the time where the premise holds)",
            3,
        )
    )
    budgets = study.budgets
    for measure in ("B", "error"):
        table = budgets[budgets["measure"] == measure][list(_BUDGET_COLUMNS)]
        console.print(
            _frame_table(
                table,
                f"k*(n, ε) on {measure}, relative ε (95% item bootstrap): raw (k: the gap "
                "stays ≤ ε) and robust (k_robust: its running median of three budgets does)",
            )
        )
    console.print(
        _frame_table(
            study.exponents[list(_EXPONENT_COLUMNS)],
            "n-exponent of k* per ε over every size (95% item bootstrap; law: against the "
            "theorem's 1/2, or outside the theorem's premise where it fails at a size used)",
        )
    )
    console.print(
        _frame_table(
            study.exponents[list(_DOMAIN_COLUMNS)],
            "n-exponent of k* per ε over the sizes where (n, ε) lies in the theorem's domain",
        )
    )
    console.print(
        _frame_table(
            study.eps_form,
            "form in ε: k*(small ε) / k*(large ε) per size against log(1/ε)'s ratio (95% "
            "item bootstrap, paired)",
        )
    )
    domain = ", ".join(
        f"n = {n}: [{max(n**-0.25, 1 / study.vocab):.3f}, 0.5]"
        if max(n**-0.25, 1 / study.vocab) <= 0.5
        else f"n = {n}: empty"
        for n in ns
    )
    console.print(
        escape(
            f"theorem's domain ε ∈ [max(n^−1/4, 1/V), 1/2] with the lab vocabulary V = "
            f"{study.vocab}: {domain}"
        )
    )
    console.print(f"[bold]law:[/] {escape(study.verdict())}")
    if out is not None:
        study.save(out)
        console.print(f"wrote {out}")
    console.print(f"finished in {time.perf_counter() - started:.0f} s")


@app.command("weights")
def weights_command() -> None:
    """List the weights that ship with cotplan: key, checksum, whether they still fit, and what
    training measured."""
    import json

    from cotplan.research.lab.reasoning.shipped import shipped_dir, shipped_state
    from cotplan.research.lab.reasoning.train import settings_for

    table = Table(title=f"Shipped lab weights ({shipped_dir().name}/)")
    for column in (
        "family",
        "preset",
        "key",
        "SHA-256",
        "fits",
        "trained in",
        "full trace",
        "trace exact",
        "no reasoning",
    ):
        table.add_column(column)
    for record_path in sorted(shipped_dir().glob("*.json")):
        record = json.loads(record_path.read_text(encoding="utf-8"))
        family, preset = str(record["family"]), str(record["preset"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = shipped_state(settings_for(family, preset), preset) is not None
        meta = record.get("meta", {})
        table.add_row(
            family,
            preset,
            str(record["key"]),
            str(record["sha256"])[:12] + "…",
            "yes" if fits else "stale",
            f"{meta.get('train_seconds', '?')} s",
            _by_size(meta.get("accuracy_full_trace")),
            _by_size(meta.get("trace_exact")),
            _by_size(meta.get("accuracy_no_reasoning")),
        )
    console.print(table)


def _by_size(accuracies: object) -> str:
    """Accuracy per size as ``n = 1: 1.00, n = 8: 0.97``, not a dict's repr ("?" if missing)."""
    if not isinstance(accuracies, dict) or not accuracies:
        return "?"
    cells = []
    for n, value in sorted(accuracies.items(), key=lambda kv: int(kv[0])):
        cells.append(f"n = {n}: {value:.2f}" if isinstance(value, int | float) else f"n = {n}: ?")
    return escape(", ".join(cells))


def register(parent: typer.Typer) -> None:
    """Add the ``kstar-lab`` command group to the main app."""
    parent.add_typer(app, name="kstar-lab")


if __name__ == "__main__":  # `python -m cotplan.cli.lab_reasoning study ...` before registration
    app()
