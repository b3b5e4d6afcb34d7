"""Write docs/api.md (the public Python API, from docstrings) and docs/cli.md (from --help).

.venv/bin/python scripts/gen_reference.py          # rewrite both files
.venv/bin/python scripts/gen_reference.py --check  # exit 1 if either is out of date (CI)
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

import cotplan
import cotplan.charts
import cotplan.research.lab
import cotplan.research.lab.reasoning
import cotplan.research.reproduction
from cotplan.cli import app

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return "(undocumented)"
    text = inspect.cleandoc(doc)
    return text.split("\n\n", 1)[0].replace("\n", " ")


def api_markdown() -> str:
    lines = [
        "# Python API reference",
        "",
        "Generated from docstrings by `.venv/bin/python scripts/gen_reference.py`; "
        "do not edit by hand. Every name in the first part is importable as `cotplan.NAME`; "
        "charts, the reproduction report and the lab's names (the `lab` extra) follow under "
        "their own headings.",
        "",
    ]
    lines += _module_section(cotplan, "cotplan", level="##")
    for module in (
        cotplan.charts,
        cotplan.research.reproduction,
        cotplan.research.lab,
        cotplan.research.lab.reasoning,
    ):
        lines += [f"# `{module.__name__}`", "", _first_paragraph(module.__doc__), ""]
        lines += _module_section(module, module.__name__, level="##")
    return "\n".join(lines).rstrip() + "\n"


def _module_section(module: object, prefix: str, *, level: str) -> list[str]:
    lines: list[str] = []
    for name in sorted(getattr(module, "__all__", ()), key=str.lower):
        obj = getattr(module, name)
        owner = getattr(obj, "__module__", "")
        if inspect.isclass(obj):
            kind = "class"
            try:
                signature = str(inspect.signature(obj))
            except (TypeError, ValueError):
                signature = ""
        elif callable(obj):
            kind = "function"
            signature = str(inspect.signature(obj))
        else:
            continue
        title = name if prefix == "cotplan" else f"{prefix}.{name}"
        lines.append(f"{level} `{title}`")
        lines.append("")
        lines.append(f"*{kind}* in `{owner}`")
        lines.append("")
        if signature and len(signature) < 400:
            lines.append(f"```python\n{name}{signature}\n```")
            lines.append("")
        full = inspect.cleandoc(obj.__doc__ or "(undocumented)")
        lines.append(full)
        lines.append("")
        if inspect.isclass(obj):
            methods = [
                (m, f)
                for m, f in vars(obj).items()
                if not m.startswith("_") and callable(f) and f.__doc__
            ]
            for method, function in methods:
                lines.append(f"- `{method}`: {_first_paragraph(function.__doc__)}")
            if methods:
                lines.append("")
    return lines


def _commands(group: typer.Typer, prefix: list[str]) -> list[list[str]]:
    command = typer.main.get_command(group)
    found = [prefix]
    subcommands = getattr(command, "commands", {})
    for name in sorted(subcommands):
        sub = subcommands[name]
        if getattr(sub, "hidden", False):
            continue  # an earlier name kept working, not one to document
        if getattr(sub, "commands", None):
            found.extend(_nested(sub, [*prefix, name]))
        else:
            found.append([*prefix, name])
    return found


def _nested(command: object, prefix: list[str]) -> list[list[str]]:
    found = [prefix]
    for name in sorted(getattr(command, "commands", {})):
        found.append([*prefix, name])
    return found


def cli_markdown() -> str:
    runner = CliRunner()
    lines = [
        "# Command-line reference",
        "",
        "Generated from `--help` by `.venv/bin/python scripts/gen_reference.py`; "
        "do not edit by hand.",
        "",
    ]
    for path in _commands(app, []):
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100", "NO_COLOR": "1"})
        title = " ".join(["cotplan", *path])
        lines.append(f"## `{title}`")
        lines.append("")
        lines.append("```text")
        lines.append("\n".join(line.rstrip() for line in result.output.strip().splitlines()))
        lines.append("```")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    os.environ["COLUMNS"] = "100"
    outputs = {DOCS / "api.md": api_markdown(), DOCS / "cli.md": cli_markdown()}
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.name} is out of date: run .venv/bin/python scripts/gen_reference.py")
        return 1 if stale else 0
    for path, text in outputs.items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
