"""What `cotplan tasks`, `cotplan cache` and `cotplan models list` print: the built-in task
families, a task file's summary, what the call cache holds and whether it is intact, and the
embedded engine's model files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = [
    "render_cache_check",
    "render_cache_info",
    "render_families",
    "render_models",
    "render_task_file",
]

#: Damaged rows listed one by one before the rest are only counted.
_SHOWN = 20


def render_families(families: Sequence[Any], console: Console, *, measured: bool) -> None:
    """The built-in task families (`list_families`): what n means for each, or (`measured`)
    what was measured on the embedded model; and which suit the demo."""
    table = Table(title="built-in task families", show_lines=measured)
    table.add_column("family", style="bold")
    if measured:
        table.add_column("demo")
        table.add_column("measured on SmolLM2-135M (accuracy by reasoning budget)")
        for info in families:
            table.add_row(info.name, "yes" if info.demo else "no", info.measured)
    else:
        for column, justify in (("n means", "left"), ("n range", "right"), ("answer", "left"),
                                ("demo", "left"), ("description", "left")):  # fmt: skip
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for info in families:
            table.add_row(
                info.name,
                info.n_meaning,
                f"{info.n_min}-{info.n_max}",
                info.answer_kind,
                "yes" if info.demo else "no",
                info.description,
            )
    console.print(table)
    console.print(
        "demo = reasoning measurably helped the embedded SmolLM2-135M on this family "
        "(docs/tasks.md has the numbers and the command)."
    )


def render_task_file(path: Any, items: Sequence[Any], console: Console) -> None:
    """A valid task file's summary: per family its items, answer kinds and sizes."""
    console.print(f"[bold]{escape(str(path))}[/]: {len(items)} items, all valid")
    table = Table(show_header=True)
    for column, justify in (("family", "left"), ("items", "right"), ("answer kinds", "left"),
                            ("n", "left")):  # fmt: skip
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    by_family: dict[str, list[int | None]] = {}
    kinds: dict[str, Counter[str]] = {}
    for item in items:
        by_family.setdefault(item.family, []).append(item.n)
        kinds.setdefault(item.family, Counter())[item.kind] += 1
    for family, sizes in by_family.items():
        known = sorted({s for s in sizes if s is not None})
        missing = sum(s is None for s in sizes)
        shown = ", ".join(map(str, known[:8])) + (" ..." if len(known) > 8 else "")
        if missing:
            shown = (shown + "; " if shown else "") + f"{missing} without n (prompt tokens)"
        kinds_shown = ", ".join(f"{k} {v}" for k, v in kinds[family].items())
        table.add_row(family, str(len(sizes)), kinds_shown, shown)
    console.print(table)
    if any(item.n is None for item in items):
        console.print(
            "items without `n` are sized by their prompt's token count when calibrating; "
            "set `n` to say what size means for your task."
        )


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def render_cache_info(summary: Any, console: Console) -> None:
    """Where the call cache is, how many calls it holds per model, its size and age."""
    console.print(f"call cache: {escape(str(summary.path))}")
    console.print(
        f"{summary.rows} recorded calls, {summary.size_bytes / 1e6:.2f} MB, "
        f"first {_when(summary.oldest)}, last {_when(summary.newest)}"
    )
    if summary.by_model:
        table = Table()
        table.add_column("model")
        table.add_column("calls", justify="right")
        for model, count in sorted(summary.by_model.items()):
            table.add_row(escape(model), str(count))
        console.print(table)


def render_cache_check(report: Any, console: Console, *, discard: bool) -> None:
    """The damaged rows the cache check found (the first few by name), and the counts."""
    for row in report.damaged[:_SHOWN]:
        console.print(
            f"damaged: {escape(row.model)} {row.operation} {row.key[:12]}: {escape(row.reason)}"
        )
    if len(report.damaged) > _SHOWN:
        console.print(f"... and {len(report.damaged) - _SHOWN} more")
    console.print(
        f"{report.checked} recorded calls checked, {len(report.damaged)} damaged"
        + (f", {report.discarded} discarded" if discard else "")
    )


def render_models(console: Console) -> None:
    """The embedded engine's known models and shipped adapters, and whether each is here."""
    from cotplan.backends import models as model_files
    from cotplan.backends.adapters import KNOWN_ADAPTERS, locate_adapter
    from cotplan.errors import ModelFileError

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
    console.print(table)
