"""`cotplan reproduce`: plan and estimate first, options checked first, paid runs asked, resume.

Unit tests run a tiny fake step registry through `run_plan` (the real steps take minutes);
one slow test runs a real step (an exact reference, no model) through the real subprocess
runner, another the quick experiment step with --prompt-logprobs on the loopback vLLM double of
test_prompt_logprobs.py, counting the requests it receives against the estimate.
"""

from __future__ import annotations

import csv
import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import test_prompt_logprobs as double
from test_prompt_logprobs import vllm  # noqa: F401  (the loopback vLLM double, a fixture)
from typer.testing import CliRunner

import cotplan.cli.reproduce as cli_reproduce
from cotplan.cli import app, main
from cotplan.errors import CotplanError, InputError
from cotplan.research.experiments import PRESETS, planned_predictions
from cotplan.research.provenance import UNKNOWN, git_commit
from cotplan.research.reproduce_plan import (
    CONTROLS_SECONDS,
    LEDGER,
    MEASURED,
    OVERHEAD,
    SECONDS_PER_PREDICTION,
    ReproductionPlan,
    Step,
    is_paid,
    plan_reproduction,
    planned_requests,
    reproduction_steps,
    run_plan,
)

ROOT = Path(__file__).resolve().parents[1]

runner = CliRunner()


class Forbidden(BaseException):
    """Something tried to start a process or open a connection (BaseException: not swallowed)."""


@pytest.fixture
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise Forbidden(f"started or connected: {args!r}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def _fake_steps() -> list[Step]:
    return [
        Step("a", ("fake", "a"), 10, 1.0, "test table"),
        Step("b", ("fake", "b"), 20, None, "not measured"),
    ]


class FakeRunner:
    """Writes a report page into the step's --out folder; fails the steps named in `fail`."""

    def __init__(self, fail: tuple[str, ...] = ()) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail

    def __call__(self, argv: list[str]) -> int:
        self.calls.append(argv)
        if argv[1] in self.fail:
            return 3
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(f"# Step {argv[1]}\n\nrows of {argv[1]}\n")
        return 0


def test_dry_run_prints_plan_and_estimate_and_starts_nothing(
    tmp_path: Path, nothing_starts: None
) -> None:
    # openai: with no key and no server: any connection attempt would fail the test.
    args = ["reproduce", "--preset", "quick", "-b", "openai:gpt-4o-mini", "--out", str(tmp_path)]
    result = runner.invoke(app, [*args, "--dry-run"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "cotplan experiment report --backend openai:gpt-4o-mini --quick --seed 0" in (
        result.output
    )
    assert "cotplan kstar-lab law lamp --sizes 4,8,12,16 --items 120" in result.output
    assert "model requests" in result.output
    assert "lamp-law: benchmarks/results/reproduce_full_local.md" in result.output
    assert "dry run: nothing started" in result.output
    assert not (tmp_path / LEDGER).exists()


def test_the_estimate_sums_requests_and_measured_times(tmp_path: Path) -> None:
    plan = plan_reproduction("quick", "local", tmp_path, steps=_fake_steps())
    assert plan.estimate() == (30, 1.0, False)  # step b has no time: the total is a floor
    assert "at least 1 s" in plan.summary()
    local = plan_reproduction("quick", "local", tmp_path)
    requests, seconds, complete = local.estimate()
    assert requests > 0
    assert seconds > 0
    assert complete
    exact = plan_reproduction("quick", "laplace", tmp_path)
    assert exact.estimate()[0] == 0  # an exact reference sends no model requests


@pytest.mark.parametrize("preset", ["quick", "full"])
def test_the_estimate_is_todays_planned_predictions_times_measured_rates(preset: str) -> None:
    for step in reproduction_steps(preset):
        if step.name in MEASURED:  # a lab step: no requests, its measured time
            assert (step.requests, step.seconds) == (0, MEASURED[step.name][0])
            continue
        if step.name == "controls":  # no model: its preset's measured time
            assert step.args == ("kstar", "controls", "--preset", preset)
            assert (step.requests, step.seconds) == (0, CONTROLS_SECONDS[preset][0])
            continue
        chosen = (
            step.args[step.args.index("--only") + 1].split(",")
            if "--only" in step.args
            else PRESETS[preset]
        )
        counts = {e: planned_predictions(e, PRESETS[preset][e]) for e in chosen}
        assert counts.pop("debias", 0) == 0  # it reuses the martingale's gaps
        assert step.requests == sum(counts.values())
        expected = OVERHEAD[step.name][0] + sum(
            n * SECONDS_PER_PREDICTION[preset][e][0] for e, n in counts.items()
        )
        assert step.seconds == pytest.approx(expected)
    falck = "experiments" if preset == "quick" else "experiments-falck"
    step = next(s for s in reproduction_steps(preset) if s.name == falck)
    # Falck's T3 over several contexts per n: 624 planned predictions quick, 45,500 full.
    assert f"falck {624 if preset == 'quick' else 45_500:,} predictions" in step.basis


def test_a_grown_preset_grows_its_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    before = reproduction_steps("quick")[0]
    falck = PRESETS["quick"]["falck"]
    monkeypatch.setitem(falck, "t3_contexts", falck["t3_contexts"] + 1)
    after = reproduction_steps("quick")[0]
    added = falck["n_paths"] * len(falck["t3_ns"]) * falck["t3_length"]
    assert after.requests == before.requests + added
    assert after.seconds is not None
    assert before.seconds is not None
    rate = SECONDS_PER_PREDICTION["quick"]["falck"][0]
    assert after.seconds - before.seconds == pytest.approx(added * rate)


def _runs_row(path: Path, experiment: str) -> dict[str, str]:
    """The experiment's row of the report_runs table a transcript prints (or the CSV is)."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("experiment,predictor,"))
    table = csv.DictReader(lines[start:])
    return next(row for row in table if row["experiment"] == experiment)


def test_every_rate_is_its_transcripts_wall_time_over_its_predictions() -> None:
    for preset, rates in SECONDS_PER_PREDICTION.items():
        for experiment, (rate, source) in rates.items():
            row = _runs_row(ROOT / source, experiment)
            measured = float(row["wall_s"]) / int(row["predictions"])
            assert rate == pytest.approx(measured, rel=1e-3), (preset, experiment)
    for seconds, source in (*OVERHEAD.values(), *MEASURED.values()):
        assert seconds > 0
        assert (ROOT / source).is_file(), source


def test_prompt_logprobs_drops_the_requests_to_one_per_sequence() -> None:
    url = "http://127.0.0.1:9/v1"
    quick = PRESETS["quick"]
    assert planned_requests("martingale", quick["martingale"], prompt_logprobs=True) == 10
    assert planned_requests("entropy", quick["entropy"], prompt_logprobs=True) == 8
    assert planned_requests("debias", quick["debias"], prompt_logprobs=True) == 0
    for unchanged in ("order", "falck"):
        assert planned_requests(unchanged, quick[unchanged], prompt_logprobs=True) == (
            planned_predictions(unchanged, quick[unchanged])
        )
    independent = {**quick["martingale"], "design": "independent"}
    assert planned_requests("martingale", independent, prompt_logprobs=True) == 10 * 16
    for preset, with_it, without in (("quick", 706, 1328), ("full", 47_200, 86_000)):
        plain = reproduction_steps(preset, "openai:m", base_url=url)
        scored = reproduction_steps(preset, "openai:m", base_url=url, prompt_logprobs=True)
        assert sum(s.requests for s in plain) == without
        assert sum(s.requests for s in scored) == with_it
        for step in scored:
            if step.args[0] == "experiment":
                assert step.args[-3:] == ("--base-url", url, "--prompt-logprobs")
                assert step.seconds is None  # not measured on a server


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--preset", "medium"], "`preset`"),
        (["-b", "nonsense"], "`backend`"),
        (["-b", "beta:x"], "`backend`"),
        (["--seed", "-1"], "`seed`"),
        (["-b", "local", "--prompt-logprobs"], "`prompt_logprobs`: the embedded llama.cpp"),
        (["-b", "laplace", "--prompt-logprobs"], "`prompt_logprobs`: 'laplace' is an exact"),
        (["-b", "openai:gpt-4o-mini", "--prompt-logprobs"], "OpenAI's own API"),
        (["-b", "local", "--base-url", "http://127.0.0.1:9/v1"], "`base_url`"),
    ],
)
def test_bad_options_are_one_line_errors(
    args: list[str],
    field: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    nothing_starts: None,
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["reproduce", *args, "--out", str(tmp_path / "r")])
    assert exited.value.code == 2
    err = " ".join(capsys.readouterr().err.split())  # unfolded
    assert err.startswith("error: ")
    assert field in err
    assert "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_out_that_is_a_file_or_another_run_is_refused(tmp_path: Path) -> None:
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(InputError, match=r"`out`: .* is not a folder"):
        plan_reproduction("quick", "local", afile)
    run_plan(plan_reproduction("quick", "laplace", tmp_path, steps=_fake_steps()), FakeRunner())
    with pytest.raises(InputError, match=r"`out`: .*preset quick, backend laplace, seed 0"):
        plan_reproduction("quick", "local", tmp_path, steps=_fake_steps())


def test_paid_backends_are_the_ones_that_may_charge() -> None:
    assert is_paid("openai:gpt-4o-mini")
    assert not any(is_paid(b) for b in ("local", "local:thinking", "lab:parity", "laplace", "kt"))


def test_refusing_the_paid_confirmation_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeRunner()
    monkeypatch.setattr(cli_reproduce, "run_in_subprocess", fake)
    args = ["reproduce", "-b", "openai:gpt-4o-mini", "--out", str(tmp_path)]
    result = runner.invoke(app, args, input="n\n")
    assert "may charge" in result.output
    assert result.exit_code == 1
    assert "not started: no requests sent" in result.output
    assert fake.calls == []
    assert not (tmp_path / LEDGER).exists()


def test_accepting_it_or_yes_runs_every_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeRunner()
    monkeypatch.setattr(cli_reproduce, "run_in_subprocess", fake)
    monkeypatch.setattr("cotplan.research.reproduce_plan.plan_reproduction", _fake_plan)
    args = ["reproduce", "-b", "openai:gpt-4o-mini", "--out", str(tmp_path)]
    result = runner.invoke(app, args, input="y\n")
    assert result.exit_code == 0, result.output
    assert [c[1] for c in fake.calls] == ["a", "b"]
    fake.calls.clear()
    # A local run never asks; a finished folder skips every step and rewrites the report.
    result = runner.invoke(app, [*args, "--yes"])
    assert result.exit_code == 0, result.output
    assert "may charge" not in result.output
    assert fake.calls == []
    assert (tmp_path / "reproduction.html").is_file()


def _fake_plan(preset: str, backend: str, out: Path, **options: Any) -> ReproductionPlan:
    return plan_reproduction(preset, backend, out, steps=_fake_steps(), **options)


def test_a_rerun_skips_the_steps_recorded_as_finished(tmp_path: Path) -> None:
    first = FakeRunner(fail=("b",))
    with pytest.raises(CotplanError, match=r"step b failed .*run the same command again"):
        run_plan(plan_reproduction("quick", "local", tmp_path, steps=_fake_steps()), first)
    assert [c[1] for c in first.calls] == ["a", "b"]
    ledger = json.loads((tmp_path / LEDGER).read_text())
    assert list(ledger["steps"]) == ["a"]
    assert ledger["steps"]["a"]["outputs"]  # the step's files, with their SHA-256

    plan = plan_reproduction("quick", "local", tmp_path, steps=_fake_steps())
    assert plan.finished == {"a"}
    assert [r["state"] for r in plan.rows()] == ["done (skipped)", "to run"]
    second = FakeRunner()
    run_plan(plan, second)
    assert [c[1] for c in second.calls] == ["b"]
    ledger = json.loads((tmp_path / LEDGER).read_text())
    assert list(ledger["steps"]) == ["a", "b"]
    assert len(ledger["sessions"]) == 2

    # A finished step whose outputs are gone runs again.
    (tmp_path / "steps" / "a" / "report.md").unlink()
    assert plan_reproduction("quick", "local", tmp_path, steps=_fake_steps()).finished == {"b"}


def test_the_report_carries_provenance_and_every_command(tmp_path: Path) -> None:
    clock = iter(f"2026-12-0{i}T00:00:00+00:00" for i in range(1, 10))
    plan = plan_reproduction("quick", "laplace", tmp_path, seed=7, steps=_fake_steps())
    md_path, html_path = run_plan(plan, FakeRunner(), clock=lambda: next(clock))
    md = md_path.read_text()
    for field in (
        "| preset | quick |",
        "| backend | laplace |",
        "| seed | 7 ",
        "| started | 2026-12-01",
        "| ended | 2026-12-0",
        "| cotplan version |",
        "| cotplan commit |",
        "| llama.cpp build (xllamacpp) |",
        "| embedded model SHA-256 | not used |",  # an exact reference loads no model
        "| shipped adapter SHA-256 (its record) | smollm2-135m-thinking: ",
        plan.command_line(plan.steps[0]),
        plan.command_line(plan.steps[1]),
        "### Step a",  # each step's own report, its headings one level down
    ):
        assert field in md, field
    assert "<h2>Provenance</h2>" in html_path.read_text()


def test_each_step_records_the_commit_it_ran(tmp_path: Path) -> None:
    # The checkout moved between the two steps (a commit during a long run, or a pull before
    # the resume): the report must not name the commit it was written at for both.
    commits = iter(["aaa111", "bbb222"])
    plan = plan_reproduction("quick", "laplace", tmp_path, steps=_fake_steps())
    md_path, _ = run_plan(plan, FakeRunner(), commit=lambda: next(commits))
    ledger = json.loads((tmp_path / LEDGER).read_text())
    assert [e["commit"] for e in ledger["steps"].values()] == ["aaa111", "bbb222"]
    md = md_path.read_text()
    assert "| cotplan commit | differs between steps: see each step's commit in Steps |" in md
    assert "| aaa111 |" in md
    assert "| bbb222 |" in md

    again = plan_reproduction("quick", "laplace", tmp_path / "same", steps=_fake_steps())
    md = run_plan(again, FakeRunner(), commit=lambda: "ccc333")[0].read_text()
    assert "| cotplan commit | ccc333 |" in md

    # A ledger written before steps recorded their commit: today's, labelled as read late.
    for entry in ledger["steps"].values():
        del entry["commit"]
    (tmp_path / LEDGER).write_text(json.dumps(ledger))
    old = plan_reproduction("quick", "laplace", tmp_path, steps=_fake_steps())
    assert old.finished == {"a", "b"}
    md = run_plan(old, FakeRunner())[0].read_text()
    assert "(read when the report was written, not recorded by the steps) |" in md


def test_a_step_without_a_page_shows_its_small_tables(tmp_path: Path) -> None:
    def lab(argv: list[str]) -> int:  # writes tables, no report.md, as the lab's law does
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "law.csv").write_text("eps,beta,law\n0.5,0.92065553,outside the premise\n")
        (out / "answers.csv").write_text("item\n" + "".join(f"{i}\n" for i in range(50)))
        return 0

    plan = plan_reproduction("quick", "laplace", tmp_path, steps=[Step("law", ("x",), 0, 1.0, "")])
    md_path, html_path = run_plan(plan, lab)
    md = md_path.read_text()
    assert "### law.csv\n\n| eps | beta | law |\n|---|---|---|\n| 0.5 | 0.9207 | outside" in md
    assert "Also in the step's folder: answers.csv (50 rows)." in md
    assert "<h3>law.csv</h3>" in html_path.read_text()


def test_the_local_model_digest_is_the_files(tmp_path: Path) -> None:
    from cotplan.backends.models import DEFAULT_MODEL, KNOWN_MODELS
    from cotplan.research.provenance import provenance

    digest = provenance(local_model=True)["embedded model SHA-256"]
    assert digest.startswith((KNOWN_MODELS[DEFAULT_MODEL].sha256, "not found"))


def test_commit_is_unknown_outside_a_checkout_or_without_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "cotplan"
    package.mkdir(parents=True)
    assert git_commit(package) == UNKNOWN
    (tmp_path / "site" / ".git").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no git on PATH: still no error
    assert git_commit(package) == UNKNOWN


def test_the_full_preset_lists_the_documented_commands() -> None:
    names = [s.name for s in reproduction_steps("full")]
    assert names == [
        "experiments-martingale",
        "experiments-entropy",
        "experiments-falck",
        "kstar-study",
        "lamp-law",
        "lamp-law-long",
        "controls",
    ]
    only = [s.args[s.args.index("--only") + 1] for s in reproduction_steps("full")[:3]]
    assert only == ["martingale,debias,order", "entropy", "falck"]


@pytest.mark.slow
def test_a_real_step_runs_through_the_subprocess_runner(tmp_path: Path) -> None:
    # The exact reference (no model): the embedded model's cheapest quick step takes minutes.
    step = Step(
        "order",
        ("experiment", "report", "-b", "laplace", "--quick", "--only", "order", "--no-charts"),
        0,
        None,
        "test",
    )
    plan = plan_reproduction("quick", "laplace", tmp_path, steps=[step])
    md_path, _ = run_plan(plan, cli_reproduce.run_in_subprocess)
    assert (tmp_path / "steps" / "order" / "report.md").is_file()
    assert "### Reproduction report: Laplace" in md_path.read_text()
    assert plan_reproduction("quick", "laplace", tmp_path, steps=[step]).finished == {"order"}


@pytest.mark.slow
def test_the_quick_reproduction_runs_end_to_end_as_one_command(tmp_path: Path) -> None:
    # The whole command as a user runs it, every step a real `cotplan` subprocess, at its
    # quickest settings: the quick preset on an exact reference (no model server; the lab
    # steps use the lab's shipped weights, the controls their quick preset).
    out = tmp_path / "repro"
    args = ["reproduce", "--preset", "quick", "-b", "laplace", "--yes", "--out", str(out)]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    ledger = json.loads((out / LEDGER).read_text(encoding="utf-8"))
    names = [s.name for s in reproduction_steps("quick")]
    assert names == ["experiments", "lamp-law", "controls"]
    assert plan_reproduction("quick", "laplace", out).finished == set(names)
    md = (out / "reproduction.md").read_text(encoding="utf-8")
    for name in names:
        assert f"## {name}" in md
    assert "### Reproduction report: Laplace" in md
    assert "### controls.csv" in md  # the controls step's table, in the combined report
    assert list(ledger["steps"]) == names


@pytest.fixture
def bare_vllm(
    vllm: tuple[str, type[double._VLLM]],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[str, type[double._VLLM]]:
    """test_prompt_logprobs.py's vLLM double, its bits after no instruction (the reproduction
    passes none)."""
    monkeypatch.setattr(double, "INSTRUCTION", "")
    return vllm


@pytest.mark.slow
def test_prompt_logprobs_reaches_the_experiments_and_the_estimate_holds(
    bare_vllm: tuple[str, type[double._VLLM]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, handler = bare_vllm
    ran: list[list[str]] = []

    def in_process(argv: list[str]) -> int:
        ran.append(argv)
        if argv[0] != "experiment":  # the lab step: its models, not the server's
            return FakeRunner()(["lab", argv[-1], "--out", argv[-1]])
        return runner.invoke(app, [*argv, "--no-charts"]).exit_code

    monkeypatch.setattr(cli_reproduce, "run_in_subprocess", in_process)
    args = ["reproduce", "-b", "openai:test-model", "--base-url", url, "--prompt-logprobs"]
    result = runner.invoke(app, [*args, "--yes", "--out", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "--prompt-logprobs: martingale, debias and entropy read each sequence" in result.output
    assert [a[0] for a in ran] == ["experiment", "kstar-lab", "kstar"]
    assert ran[0][-5:-2] == ["--base-url", url, "--prompt-logprobs"]
    # One request per sequence for martingale (10) and entropy (8); order and falck unchanged.
    assert len(handler.scored) == 10 + 8
    plan = plan_reproduction(
        "quick", "openai:test-model", tmp_path, base_url=url, prompt_logprobs=True
    )
    assert len(handler.scored) + len(handler.plain) == plan.steps[0].requests == 706
    assert plan.finished == {"experiments", "lamp-law", "controls"}
    md = (tmp_path / "reproduction.md").read_text()
    assert f"| base URL | {url} |" in md
    assert "| prompt_logprobs | yes: one request per sequence" in md
