"""`cotplan reproduce`'s library half: the steps of a preset, their estimate, resume, the report.

The documented reproduction is several `cotplan` commands (docs/experiments.md,
docs/lab-reasoning.md). A `ReproductionPlan` lists them with their command lines, the model
requests each makes at most and a wall-time estimate measured in a stored transcript
(`MEASURED`). `run_plan` runs the steps in order through a runner the caller supplies (the CLI
starts each command as a subprocess, tests pass a fake), records every finished step and its
output files' SHA-256 in the folder's ledger (`reproduce.json`) and writes the combined report,
`reproduction.md` and `reproduction.html`, with its provenance (`cotplan.provenance`).

A rerun with the same folder skips every step the ledger records as finished whose outputs are
still there; a step that was killed midway runs again, and the call cache answers the requests
it had already made without sending them again.
"""

from __future__ import annotations

import hashlib
import html
import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cotplan.errors import CotplanError, InputError
from cotplan.experiments import PRESETS, exact_predictor, planned_predictions
from cotplan.io import write_text
from cotplan.provenance import lab_weight_digests, provenance

__all__ = [
    "LEDGER",
    "MEASURED",
    "REPRODUCE_PRESETS",
    "ReproductionPlan",
    "Step",
    "is_paid",
    "plan_reproduction",
    "reproduction_steps",
    "run_plan",
]

REPRODUCE_PRESETS = ("quick", "full")
#: The ledger of finished steps, in the report folder (not `manifest.json`: each step's own
#: report folder already has one).
LEDGER = "reproduce.json"

#: Wall seconds of each step on the embedded model, and the transcript that printed them. All
#: were measured on 2 cores shared with other work, with a fresh call cache, so they are upper
#: rather than typical figures; a warm cache makes a rerun much faster.
MEASURED: dict[str, tuple[float, str]] = {
    # The sum of the four runs' wall_s in the report_runs.csv that transcript prints.
    "experiments": (121.0, "benchmarks/results/experiments_report_quick_local_fresh.txt"),
    # "about 47 min after the start", the transcript's own closing note.
    "experiments-martingale": (
        2820.0,
        "benchmarks/results/experiments_report_full_local_martingale_debias_order.txt",
    ),
    "experiments-entropy": (592.0, "benchmarks/results/experiments_report_full_local_entropy.txt"),
    # Its first run's time (27,407 requests in 1,000.4 s), stated in the rerun's transcript.
    "experiments-falck": (1000.4, "benchmarks/results/experiments_report_full_local_falck.txt"),
    "lamp-law": (32.0, "benchmarks/results/kstar_lab_law_lamp.txt"),
    "lamp-law-long": (263.0, "benchmarks/results/kstar_lab_law_lamp_long.txt"),
    "kstar-study": (666.0, "benchmarks/results/kstar_lab_study_standard.txt"),
}

_LAMP_LONG_SIZES = "16,24,32,40,48,56,64"
_LAMP_LONG_EPS = "0.5,0.45,0.4,0.36,0.3,0.2,0.1,0.05"
_STUDY_FAMILIES = ("parity", "sum", "state", "bits", "majority")


@dataclass(frozen=True)
class Step:
    """One command of the reproduction: its name, its arguments after ``cotplan`` (its
    ``--out`` is added by the plan), the model requests it makes at most, its estimate."""

    name: str
    args: tuple[str, ...]
    requests: int
    seconds: float | None
    basis: str  # where `seconds` comes from: a transcript, or why there is no estimate
    lab_weights: tuple[str, ...] = ()  # shipped lab weight files it loads (for provenance)


def is_paid(backend: str) -> bool:
    """Whether requests on `backend` may cost money: anything but the embedded model, a lab
    model or an exact reference."""
    if backend == "local" or backend.startswith(("local:", "lab:")):
        return False
    return exact_predictor(backend) is None


def _check_backend(backend: str) -> None:
    kind, _, rest = backend.partition(":")
    if backend == "local" or (kind in ("local", "openai") and rest):
        return
    if exact_predictor(backend) is None:  # a malformed reference raises its own message here
        raise InputError(
            f"must be 'local', 'local:NAME', 'openai:MODEL' or an exact reference (laplace, kt, "
            f"mle, beta:A,B, recency:D, oracle:P), got {backend!r}",
            field="backend",
        )


def _experiment_step(
    name: str, only: Sequence[str], preset: str, *, backend: str, seed: int
) -> Step:
    args = ["experiment", "report", "--backend", backend, f"--{preset}", "--seed", str(seed)]
    if only:
        args += ["--only", ",".join(only)]
    experiments = only or tuple(PRESETS[preset])
    exact = exact_predictor(backend) is not None
    requests = 0 if exact else sum(planned_predictions(e, PRESETS[preset][e]) for e in experiments)
    if exact:
        seconds, basis = None, "exact reference: no model, seconds"
    elif backend == "local":
        seconds, basis = MEASURED[name]
    else:
        seconds, basis = None, f"not measured on {backend}"
    return Step(name, tuple(args), requests, seconds, basis)


def _lab_step(name: str, args: Sequence[str], weights: Sequence[str]) -> Step:
    seconds, basis = MEASURED[name]
    return Step(name, tuple(args), 0, seconds, basis, tuple(weights))


def reproduction_steps(preset: str, backend: str = "local", seed: int = 0) -> tuple[Step, ...]:
    """The commands the docs' numbers come from, for `preset` ("quick" or "full").

    quick: the quick experiment report and the lamp's law (docs/lab-reasoning.md). full: the
    full report in the three parts the docs quote (each its own transcript), the lab k* study
    of five families and the lamp's law on the standard and the long model. Lab steps run on
    the lab's own models, whatever `backend` is.
    """
    if preset not in REPRODUCE_PRESETS:
        raise InputError(
            f"must be one of {', '.join(REPRODUCE_PRESETS)}, got {preset!r}", field="preset"
        )
    _check_backend(backend)
    lamp = _lab_step(
        "lamp-law",
        ["kstar-lab", "law", "lamp", "--sizes", "4,8,12,16", "--items", "120"],
        ["lab-lamp-standard"],
    )
    if preset == "quick":
        return (_experiment_step("experiments", (), "quick", backend=backend, seed=seed), lamp)
    parts = {
        "experiments-martingale": ("martingale", "debias", "order"),
        "experiments-entropy": ("entropy",),
        "experiments-falck": ("falck",),
    }
    steps = [
        _experiment_step(name, only, "full", backend=backend, seed=seed)
        for name, only in parts.items()
    ]
    study = ["kstar-lab", "study", *_STUDY_FAMILIES, "--preset", "standard"]
    steps.append(_lab_step("kstar-study", study, [f"lab-{f}-standard" for f in _STUDY_FAMILIES]))
    steps.append(lamp)
    long_args = ["kstar-lab", "law", "lamp", "--preset", "long", "--sizes", _LAMP_LONG_SIZES]
    long_args += ["--items", "120", "--eps", _LAMP_LONG_EPS]
    steps.append(_lab_step("lamp-law-long", long_args, ["lab-lamp-long"]))
    return tuple(steps)


@dataclass(frozen=True)
class ReproductionPlan:
    """The steps of one reproduction into one folder, and what is already done there."""

    preset: str
    backend: str
    seed: int
    out: Path
    steps: tuple[Step, ...]
    finished: frozenset[str] = field(default_factory=frozenset)

    @property
    def paid(self) -> bool:
        return is_paid(self.backend)

    def argv(self, step: Step) -> list[str]:
        """The step's arguments after ``cotplan``, its report folder inside the plan's."""
        return [*step.args, "--out", str(self.out / "steps" / step.name)]

    def command_line(self, step: Step) -> str:
        return shlex.join(["cotplan", *self.argv(step)])

    def pending(self) -> list[Step]:
        return [s for s in self.steps if s.name not in self.finished]

    def estimate(self) -> tuple[int, float, bool]:
        """Requests at most, seconds, and whether every pending step has a time estimate."""
        pending = self.pending()
        requests = sum(s.requests for s in pending)
        seconds = sum(s.seconds or 0.0 for s in pending)
        return requests, seconds, all(s.seconds is not None for s in pending)

    def rows(self) -> list[dict[str, str]]:
        """One row per step: its state, command line, requests, estimate and its source."""
        return [
            {
                "step": s.name,
                "state": "done (skipped)" if s.name in self.finished else "to run",
                "command": self.command_line(s),
                "requests at most": f"{s.requests:,}",
                "estimate": "—" if s.seconds is None else _duration(s.seconds),
                "from": s.basis,
            }
            for s in self.steps
        ]

    def summary(self) -> str:
        requests, seconds, complete = self.estimate()
        left = len(self.pending())
        time = f"about {_duration(seconds)}" if complete else f"at least {_duration(seconds)}"
        return (
            f"{left} of {len(self.steps)} steps to run: {time} (measured on 2 shared "
            f"cores with a fresh call cache) and at most {requests:,} model requests; requests "
            "already in the call cache are answered from it, not sent again."
        )


def plan_reproduction(
    preset: str,
    backend: str,
    out: Path,
    *,
    seed: int = 0,
    steps: Sequence[Step] | None = None,
) -> ReproductionPlan:
    """The plan for `out`, with the steps its ledger records as finished (checks every option).

    `steps` replaces the preset's (tests use a small fake registry).
    """
    if not isinstance(seed, int) or seed < 0:
        raise InputError(f"must be an integer >= 0, got {seed!r}", field="seed")
    chosen = tuple(steps) if steps is not None else reproduction_steps(preset, backend, seed)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a folder", field="out")
    plan = ReproductionPlan(preset, backend, seed, out, chosen)
    ledger = _read_ledger(out)
    if ledger is None:
        return plan
    recorded = {k: ledger.get(k) for k in ("preset", "backend", "seed")}
    wanted = {"preset": preset, "backend": backend, "seed": seed}
    if recorded != wanted:
        raise InputError(
            f"{out} holds a reproduction with {_describe(recorded)}, not {_describe(wanted)}: "
            "use another folder",
            field="out",
        )
    done = frozenset(
        s.name for s in chosen if _is_finished(ledger.get("steps", {}).get(s.name), plan, s)
    )
    return ReproductionPlan(preset, backend, seed, out, chosen, done)


def _describe(options: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in options.items())


def _read_ledger(out: Path) -> dict[str, Any] | None:
    path = out / LEDGER
    if not path.is_file():
        return None
    try:
        ledger = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}", field="out") from exc
    if not isinstance(ledger, dict):
        raise InputError(f"{path} is not a reproduction ledger", field="out")
    return ledger


def _is_finished(entry: Any, plan: ReproductionPlan, step: Step) -> bool:
    """Recorded with today's command line, and every output it recorded still there."""
    if not isinstance(entry, dict) or entry.get("command") != plan.command_line(step):
        return False
    outputs = entry.get("outputs", {})
    return all((plan.out / name).is_file() for name in outputs)


def _digests(folder: Path, root: Path) -> dict[str, str]:
    if not folder.is_dir():
        return {}
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


#: Runs one step's arguments (after ``cotplan``); returns its exit status.
StepRunner = Callable[[list[str]], int]


def run_plan(
    plan: ReproductionPlan,
    run_step: StepRunner,
    *,
    clock: Callable[[], str] = _now,
    echo: Callable[[str], None] = lambda line: None,
) -> list[Path]:
    """Run the plan's pending steps in order, recording each as it finishes; write the report.

    A step that exits non-zero stops the run with a `CotplanError` naming it; the steps before
    it stay recorded, so the same command resumes from it.
    """
    ledger = _read_ledger(plan.out) or {
        "preset": plan.preset,
        "backend": plan.backend,
        "seed": plan.seed,
        "started": clock(),
        "steps": {},
    }
    ledger.setdefault("sessions", []).append({"started": clock()})
    ledger["steps"] = {k: v for k, v in ledger.get("steps", {}).items() if k in plan.finished}
    for step in plan.steps:
        if step.name in plan.finished:
            echo(f"{step.name}: finished in an earlier run, skipped")
            continue
        echo(f"{step.name}: {plan.command_line(step)}")
        started = clock()
        status = run_step(plan.argv(step))
        if status != 0:
            _write_ledger(plan.out, ledger)
            raise CotplanError(
                f"step {step.name} failed (exit status {status}); the steps before it are "
                f"recorded in {plan.out / LEDGER}: run the same command again to resume from it"
            )
        ledger["steps"][step.name] = {
            "command": plan.command_line(step),
            "started": started,
            "finished": clock(),
            "outputs": _digests(plan.out / "steps" / step.name, plan.out),
        }
        _write_ledger(plan.out, ledger)
    ledger["sessions"][-1]["ended"] = ledger["ended"] = clock()
    _write_ledger(plan.out, ledger)
    return write_report(plan, ledger)


def _write_ledger(out: Path, ledger: dict[str, Any]) -> None:
    write_text(out / LEDGER, json.dumps(ledger, indent=1) + "\n")


def report_fields(plan: ReproductionPlan, ledger: dict[str, Any]) -> dict[str, str]:
    """The report's provenance: the run's own settings, then `cotplan.provenance`'s fields."""
    weights = sorted({w for s in plan.steps for w in s.lab_weights})
    local = plan.backend == "local" or plan.backend.startswith("local:")
    fields = {
        "preset": plan.preset,
        "backend": plan.backend,
        "seed": f"{plan.seed} (passed to every experiment; the lab steps use their presets' seeds)",
        "started": str(ledger.get("started", "")),
        "ended": str(ledger.get("ended", "")),
        "runs (a resume adds one)": str(len(ledger.get("sessions", []))),
        **provenance(local_model=local),
    }
    for name, digest in lab_weight_digests(weights).items():
        fields[f"lab weights {name} SHA-256"] = digest
    return fields


def write_report(plan: ReproductionPlan, ledger: dict[str, Any]) -> list[Path]:
    """`reproduction.md` and `reproduction.html` in the plan's folder: provenance, every step's
    command and outputs, and each experiment step's own report page."""
    fields = report_fields(plan, ledger)
    title = f"Reproduction ({plan.preset}, {plan.backend})"
    md = [f"# {title}", "", "## Provenance", "", "| field | value |", "|---|---|"]
    md += [f"| {k} | {_cell(v)} |" for k, v in fields.items()]
    md += [
        "",
        "## Steps",
        "",
        "| step | command | started | finished | files |",
        "|---|---|---|---|---|",
    ]
    page = [
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Provenance</h2>",
        _html_table(["field", "value"], list(fields.items())),
    ]
    step_rows = []
    for step in plan.steps:
        entry = ledger["steps"].get(step.name, {})
        row = (
            step.name,
            plan.command_line(step),
            entry.get("started", ""),
            entry.get("finished", ""),
            str(len(entry.get("outputs", {}))),
        )
        step_rows.append(row)
        md.append("| " + " | ".join(_cell(c) for c in row) + " |")
    page += [
        "<h2>Steps</h2>",
        _html_table(["step", "command", "started", "finished", "files"], step_rows),
    ]
    for step in plan.steps:
        inner = plan.out / "steps" / step.name / "report.md"
        if inner.is_file():
            text = inner.read_text()
            md += ["", f"## {step.name}", "", _demoted(text)]
            page += [f"<h2>{html.escape(step.name)}</h2>", f"<pre>{html.escape(text)}</pre>"]
    md_path = write_text(plan.out / "reproduction.md", "\n".join(md) + "\n", private=False)
    body = "\n".join(page)
    html_path = write_text(
        plan.out / "reproduction.html",
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>\n{body}\n",
        private=False,
    )
    return [md_path, html_path]


def _demoted(markdown: str) -> str:
    """A step's own page inside the report: its headings two levels down, under the step's."""
    return "\n".join(
        "##" + line if line.startswith("#") else line for line in markdown.splitlines()
    )


def _cell(value: str) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"
