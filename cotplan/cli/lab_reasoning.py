"""`cotplan kstar-lab ...`: train the lab reasoning models and test the k* law on them.

- ``cotplan kstar-lab train FAMILY``: train a lab family's model now and print what training
  measured (``--export DIR`` also writes shipped-weights files).
- ``cotplan kstar-lab study [FAMILY ...]``: the study of `cotplan.research.lab.reasoning.study` per
  family: the error grid, the planner's constants, which law holds, the oracle per-item budget
  and the held-out policies; tables and charts go into a report folder.
- ``cotplan kstar-lab weights``: the weights that ship (key, checksum, still fitting?).
- ``cotplan kstar-lab law FAMILY``: the law on the paper's terms (B(k), relative ε, the
  theorem's domain; `cotplan.research.lab.reasoning.logloss`).

Every option is checked before a model is loaded or trained
(`cotplan.research.lab.reasoning.runs`); `cotplan.research.render` prints. ``--seed`` picks the
model's training seed (train, study, law): seed 0 is the shipped model, another is trained on
first use. Register with ``lab_reasoning.register(app)`` (adds the ``kstar-lab`` group).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cotplan.cli.report_folders import finish_report, start_report

__all__ = ["app"]

console = Console()

app = typer.Typer(
    help="Lab reasoning models: train them, and test the k* law where the mechanism is known.",
    no_args_is_help=True,
)
Opt = typer.Option
Preset = Annotated[
    str,
    Opt(
        help="Preset: tiny, quick, standard (sizes to 16; to 25 for blocks), wide (the lamp on "
        "sizes to 64, solving n ≤ 32) or long (the lamp solved to n = 64; wide-late and "
        "wide-top are its training stages)."
    ),
]
Threads = Annotated[int, Opt(help="torch threads (1 on a shared machine).")]
Seed = Annotated[
    int,
    Opt(
        help="Training seed of the model (0: the shipped weights). Another seed is stored "
        "apart, and every curriculum stage it starts from is trained with it when missing."
    ),
]
Export = Annotated[
    Path | None, Opt(help="Also write the weights and their record (key, SHA-256) here.")
]
Estimate = Annotated[
    int, Opt(help="Only time this many steps and print how long training would take.")
]
CheckSizes = Annotated[
    str,
    Opt(
        help="Sizes training's check measures, comma-separated (default: the smallest, "
        "middle and largest trained size)."
    ),
]


@app.command("train")
def train_command(
    family: Annotated[
        str, typer.Argument(help="A lab family: parity, sum, state, lamp, blocks, ...")
    ],
    *,
    preset: Preset = "standard",
    seed: Seed = 0,
    threads: Threads = 1,
    export: Export = None,
    estimate: Estimate = 0,
    check_sizes: CheckSizes = "",
) -> None:
    """Train a lab family's model now (saved in the user folder) and print its checks.

    Shipped weights are not touched; `--export cotplan/research/lab/reasoning/weights` refreshes
    them.
    """
    from cotplan.research.lab.reasoning.runs import prepare_training
    from cotplan.research.render import render_training, training_progress

    run = prepare_training(family, preset=preset, seed=seed, threads=threads, export=export,
                           estimate=estimate, check_sizes=check_sizes)  # fmt: skip
    render_training(run.run(training_progress(console)), console)


@app.command("study")
def study_command(
    families: Annotated[list[str] | None, typer.Argument(help="Families (default: all).")] = None,
    *,
    preset: Preset = "standard",
    seed: Seed = 0,
    out: Annotated[Path | None, Opt(help="Report folder.")] = None,
    threads: Threads = 1,
    charts: Annotated[bool, Opt(help="Save PNG charts.")] = True,
) -> None:
    """Test k* = Θ(√n·log(1/ε)) on lab models: grid, constants, law, oracle, held-out.

    `--seed` is the models' training seed; the items and bootstraps keep the study's own seed.
    """
    from cotplan.charts import save as save_result
    from cotplan.research.lab.reasoning.runs import prepare_studies, study_rows
    from cotplan.research.render import render_study, render_study_rows

    run = prepare_studies(families, preset=preset, seed=seed, threads=threads, out=out)
    started = time.perf_counter()
    studies = []
    with start_report(out, kind="kstar-lab", command="kstar-lab study") as report:
        for name, study in zip(run.names, run.studies(), strict=True):
            studies.append(study)
            render_study(study, console)
            save_result(study, report.path / name, charts=charts)
            console.print(f"{name}: {study.seconds:.0f} s")
        rows = study_rows(studies)
        render_study_rows(rows, console)
        rows.to_csv(report.path / "report.csv", index=False)
        folder = finish_report(report)
    console.print(f"wrote {folder}; finished in {time.perf_counter() - started:.0f} s")


@app.command("law")
def law_command(
    family: Annotated[str, typer.Argument(help="A lab family: lamp, parity, blocks, ...")],
    *,
    sizes: Annotated[str, Opt(help="Sizes n, comma-separated.")] = "4,8,16",
    items: Annotated[int, Opt(help="Items per size.")] = 120,
    eps: Annotated[str, Opt(help="Relative targets ε, comma-separated.")] = (
        "0.5,0.4,0.3,0.2,0.1,0.05"
    ),
    preset: Preset = "standard",
    seed: Seed = 0,
    bootstrap: Annotated[int, Opt(help="Item-bootstrap resamples.")] = 200,
    out: Annotated[Path | None, Opt(help="Folder for the tables (CSV).")] = None,
    threads: Threads = 1,
) -> None:
    """The law on the paper's terms: B(k) = mean −ln P(correct answer), relative ε, domain."""
    from cotplan.research.lab.reasoning.runs import prepare_law
    from cotplan.research.render import render_law

    run = prepare_law(family, sizes=sizes, items=items, eps=eps, preset=preset, seed=seed,
                      bootstrap=bootstrap, out=out, threads=threads)  # fmt: skip
    started = time.perf_counter()
    study = run.run()
    render_law(study, run.sizes, console)
    if out is not None:
        study.save(out)
        console.print(f"wrote {out}")
    console.print(f"finished in {time.perf_counter() - started:.0f} s")


@app.command("weights")
def weights_command() -> None:
    """List the weights that ship with cotplan: key, checksum, whether they still fit, and what
    training measured."""
    from cotplan.research.lab.reasoning.runs import shipped_weights
    from cotplan.research.render import render_weights

    render_weights(*shipped_weights(), console)


if __name__ == "__main__":  # `python -m cotplan.cli.lab_reasoning study ...` before registration
    app()
