"""`cotplan demo`: a short end-to-end run on the embedded model."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from cotplan.backends import connect

__all__ = ["register"]

_console = Console()


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        backend: str = typer.Option("local", help="'local', 'local:PATH' or 'openai:MODEL'."),
        base_url: str | None = typer.Option(None, help="An OpenAI-compatible endpoint."),
    ) -> None:
        """Generate, score next tokens and count tokens on a real model."""
        with connect(backend, base_url=base_url) as model:
            _console.print(f"[bold]model[/]: {model.model}")
            completion = model.generate("Q: What is 2 + 3?\nA:", max_tokens=24, stop=["\n"])
            _console.print(
                f"[bold]generate[/]: {completion.text.strip()!r} "
                f"({completion.usage.completion_tokens} tokens, "
                f"{completion.latency_s * 1000:.0f} ms)"
            )
            table = Table(title="P(next bit) after a sequence with 12 ones in 16")
            table.add_column("candidate")
            table.add_column("probability", justify="right")
            probs = model.next_token_probs("1 1 0 1 1 1 0 1 1 1 0 1 1 1 0 1 ", ["0", "1"])
            for candidate, p in probs.probs.items():
                table.add_row(candidate, f"{p:.3f}")
            _console.print(table)
            _console.print(f"covered mass: {probs.covered_mass:.3f}")
