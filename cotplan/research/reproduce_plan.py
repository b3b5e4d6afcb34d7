"""`cotplan reproduce`'s library half: the steps of a preset, their estimate, resume, the report.

The documented reproduction is several `cotplan` commands (docs/experiments.md,
docs/lab-reasoning.md). A `ReproductionPlan` lists them with their command lines, the model
requests each makes at most and a wall-time estimate from stored transcripts
(`SECONDS_PER_PREDICTION`, `OVERHEAD`, `MEASURED`). `run_plan` runs the steps in order through
a runner the caller supplies (the CLI starts each command as a subprocess, tests pass a fake),
records every finished step, the cotplan commit it ran and its output files' SHA-256 in the
folder's ledger (`reproduce.json`) and writes the combined report, `reproduction.md` and
`reproduction.html`, with its provenance (`cotplan.research.provenance`).

A rerun with the same folder skips every step the ledger records as finished whose outputs are
still there; a step that was killed midway runs again, and the call cache answers the requests
it had already made without sending them again.
"""

from __future__ import annotations

import csv
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
from cotplan.io import write_text
from cotplan.research.experiments import (
    PRESETS,
    PROMPT_LOGPROBS_CHANGE_NOTHING,
    check_prompt_logprobs,
    exact_predictor,
    planned_predictions,
)
from cotplan.research.provenance import git_commit, lab_weight_digests, provenance

__all__ = [
    "LEDGER",
    "MEASURED",
    "OVERHEAD",
    "REPRODUCE_PRESETS",
    "SECONDS_PER_PREDICTION",
    "ReproductionPlan",
    "Step",
    "is_paid",
    "plan_reproduction",
    "planned_requests",
    "reproduction_steps",
    "run_plan",
]

REPRODUCE_PRESETS = ("quick", "full")
#: The ledger of finished steps, in the report folder (not `manifest.json`: each step's own
#: report folder already has one).
LEDGER = "reproduce.json"

_QUICK = "benchmarks/results/reproduce_quick_local.md"
_FULL = "benchmarks/results/reproduce_full_local.md"
_FULL_RUNS = "benchmarks/results/experiments_csv/reproduce_full_local_experiments-{}_runs.csv"

#: Wall seconds per prediction of each experiment on the embedded model, by preset, and the
#: table (a runs table: wall_s over predictions) that gives it; a step's estimate is this
#: times `planned_predictions` for today's preset, so a preset that grows grows its estimate.
#: Each comes from a `cotplan reproduce` run of its preset on 2 cores shared with other work,
#: with the call cache as it was (its hits in the runs tables), so they are upper rather than
#: typical figures for a fresh cache on an idle machine.
SECONDS_PER_PREDICTION: dict[str, dict[str, tuple[float, str]]] = {
    "quick": {  # `cotplan reproduce --preset quick`: its experiment step's report_runs.csv
        "martingale": (24.387 / 320, _QUICK),
        "order": (56.423 / 64, _QUICK),
        "entropy": (21.681 / 312, _QUICK),
        "falck": (47.586 / 624, _QUICK),
    },
    "full": {  # `cotplan reproduce --preset full`: each experiment step's report_runs.csv
        "martingale": (592.849 / 19000, _FULL_RUNS.format("martingale")),
        "order": (426.105 / 1500, _FULL_RUNS.format("martingale")),
        "entropy": (534.515 / 19900, _FULL_RUNS.format("entropy")),
        "falck": (1557.421 / 45500, _FULL_RUNS.format("falck")),
    },
}

#: Wall seconds of an experiment step besides its predictions (starting the model, the
#: bootstraps, debiasing, charts): the step's time in its report's Steps table less its runs'.
OVERHEAD: dict[str, tuple[float, str]] = {
    # The step's 178 s (20:26:44 to 20:29:42 in its Steps table) less its runs' 150.1 s.
    "experiments": (27.9, _QUICK),
    # 1,037 s (04:15:54 to 04:33:11) less its runs' 1,019.0 s.
    "experiments-martingale": (18.0, _FULL),
    # 548 s (04:33:11 to 04:42:19) less its run's 534.5 s.
    "experiments-entropy": (13.5, _FULL),
    # 1,569 s (04:42:19 to 05:08:28) less its run's 1,557.4 s.
    "experiments-falck": (11.6, _FULL),
}

#: Wall seconds of each lab step (no model requests; the lab's models are in-process), from
#: the full reproduction's Steps table: the whole `cotplan` process, start to end.
MEASURED: dict[str, tuple[float, str]] = {
    "lamp-law": (52.0, _FULL),  # 05:19:55 to 05:20:47
    "lamp-law-long": (439.0, _FULL),  # 05:20:47 to 05:28:06
    "kstar-study": (687.0, _FULL),  # 05:08:28 to 05:19:55
}

#: Wall seconds of the controls step (`cotplan kstar controls`, no model), by preset.
CONTROLS_SECONDS: dict[str, tuple[float, str]] = {
    # Debias control on 3 seeds and the planted laws at 600 items, planner left out.
    "quick": (38.0, "benchmarks/results/kstar_controls_quick.txt"),
    # Six planted runs of 41-61 s (planner included) and the 12-seed debias control.
    "full": (
        360.0,
        "benchmarks/results/planted_control.txt; benchmarks/results/debias_control.txt",
    ),
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


def _check_endpoint(backend: str, base_url: str | None, prompt_logprobs: bool) -> None:
    """Refuse --base-url but for openai:MODEL, and --prompt-logprobs where no server answers
    it (`check_prompt_logprobs`), before anything starts."""
    if base_url is not None and backend.partition(":")[0] != "openai":
        raise InputError(
            f"names an OpenAI-compatible server, for -b openai:MODEL; {backend!r} takes none",
            field="base_url",
        )
    if prompt_logprobs:
        check_prompt_logprobs(backend, base_url)


def planned_requests(
    experiment: str, params: dict[str, Any], *, prompt_logprobs: bool = False
) -> int:
    """The model requests an experiment makes at most: one per prediction, or with vLLM's
    prompt_logprobs one per sequence where it scores sequences (martingale, entropy), unchanged
    where it has none (`PROMPT_LOGPROBS_CHANGE_NOTHING`); debias reuses the martingale's."""
    predictions = planned_predictions(experiment, params)
    if not prompt_logprobs or experiment in PROMPT_LOGPROBS_CHANGE_NOTHING or not predictions:
        return predictions
    if experiment == "martingale" and params.get("design", "nested") != "nested":
        return predictions // 2  # a fresh sequence per n, scored at its two last positions
    return int(params.get("n_sequences", 100))


def _local_estimate(name: str, preset: str, experiments: Sequence[str]) -> tuple[float, str]:
    """An experiment step's seconds on the embedded model (today's planned predictions times the
    measured seconds per prediction, plus its overhead) and their sources."""
    seconds, source = OVERHEAD[name]
    parts, sources = [], [source]
    for experiment in experiments:
        count = planned_predictions(experiment, PRESETS[preset][experiment])
        if count:
            rate, measured_in = SECONDS_PER_PREDICTION[preset][experiment]
            seconds += count * rate
            parts.append(f"{experiment} {count:,} predictions × {rate:.3g} s")
            sources.append(measured_in)
    besides = f"{OVERHEAD[name][0]:.0f} s besides"
    return seconds, f"{', '.join(parts)} + {besides} ({'; '.join(dict.fromkeys(sources))})"


def _experiment_step(
    name: str,
    only: Sequence[str],
    preset: str,
    *,
    backend: str,
    seed: int,
    base_url: str | None = None,
    prompt_logprobs: bool = False,
) -> Step:
    args = ["experiment", "report", "--backend", backend, f"--{preset}", "--seed", str(seed)]
    if only:
        args += ["--only", ",".join(only)]
    if base_url is not None:
        args += ["--base-url", base_url]
    if prompt_logprobs:
        args.append("--prompt-logprobs")
    if exact_predictor(backend) is not None:
        return Step(name, tuple(args), 0, None, "exact reference: no model, seconds")
    experiments = only or tuple(PRESETS[preset])
    requests = sum(
        planned_requests(e, PRESETS[preset][e], prompt_logprobs=prompt_logprobs)
        for e in experiments
    )
    if backend == "local":
        seconds, basis = _local_estimate(name, preset, experiments)
        return Step(name, tuple(args), requests, seconds, basis)
    return Step(name, tuple(args), requests, None, f"not measured on {backend}")


def _lab_step(name: str, args: Sequence[str], weights: Sequence[str]) -> Step:
    seconds, basis = MEASURED[name]
    return Step(name, tuple(args), 0, seconds, basis, tuple(weights))


def reproduction_steps(
    preset: str,
    backend: str = "local",
    seed: int = 0,
    *,
    base_url: str | None = None,
    prompt_logprobs: bool = False,
) -> tuple[Step, ...]:
    """The commands the docs' numbers come from, for `preset` ("quick" or "full").

    quick: the quick experiment report and the lamp's law (docs/lab-reasoning.md). full: the
    full report in the three parts the docs quote (each its own transcript), the lab k* study
    of five families and the lamp's law on the standard and the long model. Lab steps run on
    the lab's own models, whatever `backend` is; `base_url` and `prompt_logprobs` reach every
    experiment step (checked here first).
    """
    if preset not in REPRODUCE_PRESETS:
        raise InputError(
            f"must be one of {', '.join(REPRODUCE_PRESETS)}, got {preset!r}", field="preset"
        )
    _check_backend(backend)
    _check_endpoint(backend, base_url, prompt_logprobs)
    endpoint: dict[str, Any] = {"base_url": base_url, "prompt_logprobs": prompt_logprobs}
    lamp = _lab_step(
        "lamp-law",
        ["kstar-lab", "law", "lamp", "--sizes", "4,8,12,16", "--items", "120"],
        ["lab-lamp-standard"],
    )
    seconds, basis = CONTROLS_SECONDS[preset]
    controls = Step("controls", ("kstar", "controls", "--preset", preset), 0, seconds, basis)
    if preset == "quick":
        quick = _experiment_step("experiments", (), "quick", backend=backend, seed=seed, **endpoint)
        return (quick, lamp, controls)
    parts = {
        "experiments-martingale": ("martingale", "debias", "order"),
        "experiments-entropy": ("entropy",),
        "experiments-falck": ("falck",),
    }
    steps = [
        _experiment_step(name, only, "full", backend=backend, seed=seed, **endpoint)
        for name, only in parts.items()
    ]
    study = ["kstar-lab", "study", *_STUDY_FAMILIES, "--preset", "standard"]
    steps.append(_lab_step("kstar-study", study, [f"lab-{f}-standard" for f in _STUDY_FAMILIES]))
    steps.append(lamp)
    long_args = ["kstar-lab", "law", "lamp", "--preset", "long", "--sizes", _LAMP_LONG_SIZES]
    long_args += ["--items", "120", "--eps", _LAMP_LONG_EPS]
    steps.append(_lab_step("lamp-law-long", long_args, ["lab-lamp-long"]))
    steps.append(controls)
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
    base_url: str | None = None  # the OpenAI-compatible server of the experiment steps
    prompt_logprobs: bool = False  # vLLM's one request per sequence in the experiment steps

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
            f"{left} of {len(self.steps)} steps to run: {time} (as measured on 2 shared "
            f"cores) and at most {requests:,} model requests; requests "
            "already in the call cache are answered from it, not sent again."
        )


def plan_reproduction(
    preset: str,
    backend: str,
    out: Path,
    *,
    seed: int = 0,
    base_url: str | None = None,
    prompt_logprobs: bool = False,
    steps: Sequence[Step] | None = None,
) -> ReproductionPlan:
    """The plan for `out`, with the steps its ledger records as finished (checks every option).

    `steps` replaces the preset's (tests use a small fake registry).
    """
    if not isinstance(seed, int) or seed < 0:
        raise InputError(f"must be an integer >= 0, got {seed!r}", field="seed")
    endpoint: dict[str, Any] = {"base_url": base_url, "prompt_logprobs": prompt_logprobs}
    if steps is None:
        chosen = reproduction_steps(preset, backend, seed, **endpoint)
    else:
        chosen = tuple(steps)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a folder", field="out")
    plan = ReproductionPlan(preset, backend, seed, out, chosen, **endpoint)
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
    return ReproductionPlan(preset, backend, seed, out, chosen, done, **endpoint)


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
    commit: Callable[[], str] = git_commit,
) -> list[Path]:
    """Run the plan's pending steps in order, recording each as it finishes; write the report.

    A step that exits non-zero stops the run with a `CotplanError` naming it; the steps before
    it stay recorded, so the same command resumes from it. Each step records the cotplan
    commit it started from (`commit`): the checkout may move during a long run or between a
    kill and the resume, and the report must name the code each step ran.
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
        started, ran_at = clock(), commit()
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
            "commit": ran_at,
            "outputs": _digests(plan.out / "steps" / step.name, plan.out),
        }
        _write_ledger(plan.out, ledger)
    ledger["sessions"][-1]["ended"] = ledger["ended"] = clock()
    _write_ledger(plan.out, ledger)
    return write_report(plan, ledger)


def _write_ledger(out: Path, ledger: dict[str, Any]) -> None:
    write_text(out / LEDGER, json.dumps(ledger, indent=1) + "\n")


def report_fields(plan: ReproductionPlan, ledger: dict[str, Any]) -> dict[str, str]:
    """The report's provenance: the run's own settings, then `cotplan.research.provenance`'s
    fields."""
    weights = sorted({w for s in plan.steps for w in s.lab_weights})
    local = plan.backend == "local" or plan.backend.startswith("local:")
    fields = {
        "preset": plan.preset,
        "backend": plan.backend,
        "seed": f"{plan.seed} (passed to every experiment; the lab steps use their presets' seeds)",
        "started": str(ledger.get("started", "")),
        "ended": str(ledger.get("ended", "")),
        "runs (a resume adds one)": str(len(ledger.get("sessions", []))),
        "base URL": plan.base_url or "none",
        "prompt_logprobs": (
            "yes: one request per sequence (martingale, entropy)" if plan.prompt_logprobs else "no"
        ),
        **provenance(local_model=local),
    }
    fields["cotplan commit"] = _steps_commit(ledger, fields["cotplan commit"])
    for name, digest in lab_weight_digests(weights).items():
        fields[f"lab weights {name} SHA-256"] = digest
    return fields


def _steps_commit(ledger: dict[str, Any], now: str) -> str:
    """The commit every recorded step ran, or a pointer to the Steps table where they differ;
    a ledger from before steps recorded theirs gives today's checkout, labelled as such."""
    commits = {str(e.get("commit", "")) for e in ledger.get("steps", {}).values()}
    if not commits or "" in commits:
        return f"{now} (read when the report was written, not recorded by the steps)"
    if len(commits) == 1:
        return commits.pop()
    return "differs between steps: see each step's commit in Steps"


def write_report(plan: ReproductionPlan, ledger: dict[str, Any]) -> list[Path]:
    """`reproduction.md` and `reproduction.html` in the plan's folder: provenance, every step's
    command and outputs, and each experiment step's own report page."""
    fields = report_fields(plan, ledger)
    title = f"Reproduction ({plan.preset}, {plan.backend})"
    header = ["step", "command", "started", "finished", "commit", "files"]
    step_rows = []
    for step in plan.steps:
        entry = ledger["steps"].get(step.name, {})
        recorded = [str(entry.get(k, "")) for k in ("started", "finished", "commit")]
        files = str(len(entry.get("outputs", {})))
        step_rows.append([step.name, plan.command_line(step), *recorded, files])
    md = [f"# {title}", "", "## Provenance", "", *_md_table([["field", "value"], *fields.items()])]
    md += ["", "## Steps", "", *_md_table([header, *step_rows])]
    page = [
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Provenance</h2>",
        _html_table(["field", "value"], list(fields.items())),
        "<h2>Steps</h2>",
        _html_table(header, step_rows),
    ]
    for step in plan.steps:
        folder = plan.out / "steps" / step.name
        if (folder / "report.md").is_file():
            text = (folder / "report.md").read_text()
            md += ["", f"## {step.name}", "", _demoted(text)]
            page += [f"<h2>{html.escape(step.name)}</h2>", f"<pre>{html.escape(text)}</pre>"]
        elif folder.is_dir():  # a lab step writes tables, no page: its small ones, in full
            md += ["", f"## {step.name}"]
            page.append(f"<h2>{html.escape(step.name)}</h2>")
            larger = []
            for path in sorted(folder.glob("*.csv")):
                rows = [[_short(c) for c in row] for row in csv.reader(path.open(newline=""))]
                if 1 < len(rows) <= _TABLE_ROWS + 1:
                    md += ["", f"### {path.name}", "", *_md_table(rows)]
                    page += [f"<h3>{html.escape(path.name)}</h3>", _html_table(rows[0], rows[1:])]
                else:
                    larger.append(f"{path.name} ({max(len(rows) - 1, 0):,} rows)")
            if larger:
                line = f"Also in the step's folder: {', '.join(larger)}."
                md += ["", line]
                page.append(f"<p>{html.escape(line)}</p>")
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


#: The most rows of a lab step's table the report shows in full (larger ones are named).
_TABLE_ROWS = 40


def _short(cell: str) -> str:
    """A table's cell as the report shows it: a float to 4 significant digits."""
    try:
        return f"{float(cell):.4g}" if "." in cell or "e" in cell else cell
    except ValueError:
        return cell


def _md_table(rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(c) for c in rows[0]) + " |", "|---" * len(rows[0]) + "|"]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[1:]]


def _cell(value: str) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"
