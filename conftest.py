"""Session-wide test set-up for tests/ and the executed notebooks (root conftest).

- **No leaks from the developer's shell.** Variables that change what cotplan reads or where it
  sends requests (`COTPLAN_CACHE`, `COTPLAN_PRICES`, `COTPLAN_KEY_FILE`, `COTPLAN_DEBUG`, provider
  keys and endpoints, proxies) are removed for the whole session; a test that needs one sets it
  itself (`monkeypatch.setenv`). `COTPLAN_HOME` points at a fresh temporary folder from the
  start, so a notebook kernel (a child process that inherits the environment) gets it too,
  whatever order the tests run in.
- **Hypothesis** runs with the `cotplan` profile (no deadline: a loaded 2-core machine is not a
  bug), and with `ci` (derandomized, the same examples every run) when `CI` is set.
- **Markers.** A test that uses the `local_model`/`local_backend` fixtures (or the thinking
  model's, `thinking_model`/`thinking_backend`) is marked `model`; an executed notebook is
  marked `slow`, `model` when it starts the embedded model and `torch` when it trains a lab
  model; a test that imports torch (or importorskips it) is marked `torch`.
- **`--fast`** (what `./scripts/test --fast` passes): deselects `model`, `slow` and `torch`, and
  makes a test that starts the embedded model or imports torch without its marker fail with a
  message saying which marker to add.
- **Pinned clock where a test prices something.** A test marked `clock("YYYY-MM-DD")` runs
  with the clock at that day (time-machine, ticking). Tests whose module prices something (it
  names `cotplan.pricing`, `call_cost`, `project_costs`, `budgeted_answer`, `run_plan`, or runs
  the `cost` or `demo` command) get `clock(PRICE_DAY)` automatically: the day after the price
  data was read, so no price is stale however late the suite runs.
- **Slow tests without `slow`.** After the run, the terminal summary lists the tests that took
  longer than `--slow-report` seconds (default 5, setup and teardown included) and are not
  marked `slow`, with the load average beside them, so a maintainer sees which to mark. It only
  reports: no test passes or fails on its time.
- **`--clock DATE`** (or `COTPLAN_TEST_CLOCK=DATE`): runs the session with the clock moved to
  DATE (time-machine, ticking), to check that no test depends on the calendar:
  `pytest --clock 2028-01-01 tests/test_pricing_cost.py`. Pinned tests keep their day (they
  cannot depend on the calendar) unless `--unpin` is given too; everything else runs at DATE.
  It moves this process's clock only: child processes (notebook kernels, CLI subprocesses)
  keep the real date.
- **Notebook prose.** An executed notebook also fails when its prose cites a number that none
  of its outputs shows (`tests/notebook_prose.py` says what counts).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import inspect
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# Read at import, before any test module imports cotplan, so nothing caches the shell's values.
LEAKY_VARIABLES = (
    "COTPLAN_CACHE",
    "COTPLAN_PRICES",
    "COTPLAN_KEY_FILE",
    "COTPLAN_DEBUG",
    "COTPLAN_HOME",
    "TIKTOKEN_CACHE_DIR",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "OPENAI_ORG_ID",
    "OPENAI_ORGANIZATION",
    "OPENAI_PROJECT_ID",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)
# Any provider's key: OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, AZURE_OPENAI_API_KEY...
KEY_PATTERN = re.compile(r".*_(API_KEY|API_TOKEN|ACCESS_TOKEN)$")

CLOCK_ENV = "COTPLAN_TEST_CLOCK"
#: The day tests that price something run on: after the newest `as_of` of the price data
#: (cotplan/pricing/prices.csv, genai-prices' release), before any price is stale.
PRICE_DAY = "2026-12-01"
PRICES_SOMETHING = re.compile(
    r"cotplan\.pricing|\bcall_cost\b|\bproject_costs\b|\bbudgeted_answer\b|\brun_plan\b"
    r'|"cost"|"demo"'
)
#: A test that takes longer than this (setup, call and teardown) belongs under `slow`.
SLOW_SECONDS = 5.0
TORCH_MESSAGE = (
    "torch is not loaded in --fast runs; a test that needs it is marked `torch` (a module-level "
    "or in-test `pytest.importorskip('torch')` marks it)"
)


def _clean_environment() -> None:
    for name in list(os.environ):
        if name in LEAKY_VARIABLES or KEY_PATTERN.fullmatch(name):
            del os.environ[name]


_clean_environment()
_HOME = Path(tempfile.mkdtemp(prefix="cotplan-test-home-"))
os.environ["COTPLAN_HOME"] = str(_HOME)
SESSION_HOME = _HOME


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cotplan")
    group.addoption(
        "--fast",
        action="store_true",
        help="Skip tests marked model, slow or torch; fail a test that needs either unmarked.",
    )
    group.addoption(
        "--unpin",
        action="store_true",
        help="With --clock: move pinned tests too (shows which tests need their pin).",
    )
    group.addoption(
        "--slow-report",
        metavar="SECONDS",
        type=float,
        default=SLOW_SECONDS,
        help="List tests slower than SECONDS that are not marked slow (0: never).",
    )
    group.addoption(
        "--clock",
        metavar="DATE",
        default=os.environ.get(CLOCK_ENV) or None,
        help=f"Move the clock to DATE (ISO, e.g. 2028-01-01) for the session (env {CLOCK_ENV}).",
    )


class _NoTorch(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes `import torch` fail with a message, so an unmarked torch test fails fast instead of
    running slowly; `pytest.importorskip("torch")` skips as if torch were not installed."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == "torch" or fullname.startswith("torch."):
            return ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        raise ModuleNotFoundError(TORCH_MESSAGE, name=spec.name)

    def exec_module(self, module: ModuleType) -> None:
        raise ModuleNotFoundError(TORCH_MESSAGE, name=module.__name__)


_clock: Any = None


def pytest_configure(config: pytest.Config) -> None:
    global _clock
    _register_hypothesis_profiles()
    _check_notebook_prose()
    if config.getoption("fast"):
        sys.meta_path.insert(0, _NoTorch())
    when = config.getoption("clock")
    if when:
        import time_machine

        _clock = time_machine.travel(_moment(when), tick=True)
        _clock.start()


def _check_notebook_prose() -> None:
    """Make each executed notebook also fail when its prose cites a number none of its outputs
    shows (tests/notebook_prose.py). The outputs exist only inside nbmake's run (the notebooks
    are stored without them), so the check runs there rather than executing them twice."""
    import nbformat
    from nbmake.nb_result import NotebookError  # type: ignore[import-untyped]
    from nbmake.nb_run import NotebookRun  # type: ignore[import-untyped]

    checker = Path(__file__).parent / "tests" / "notebook_prose.py"
    if not checker.exists():  # a copy of this file in a folder of its own (tests/test_conftest.py)
        return
    spec = importlib.util.spec_from_file_location("notebook_prose", checker)
    assert spec is not None
    assert spec.loader is not None
    prose = importlib.util.module_from_spec(spec)
    sys.modules["notebook_prose"] = prose  # dataclasses look their module up while it loads
    spec.loader.exec_module(prose)
    outputs = _load_module("notebook_outputs", checker.with_name("notebook_outputs.py"))
    execute = NotebookRun.execute

    def execute_and_read(run: NotebookRun) -> Any:
        result = execute(run)
        if result.error is None:
            missing = prose.unshown(result.nb, prose.ALLOWED.get(run.filename.name))
            if missing:
                lines = [f"cell {c.cell}: {c.text} is in no output: {c.context}" for c in missing]
                result.error = NotebookError(
                    summary=f"{run.filename.name}: its prose cites numbers its outputs do not show",
                    trace="\n".join(lines),
                    failing_cell_index=missing[0].cell,
                )
        if result.error is None:
            # The committed outputs are what a reader sees: they must be this run's.
            committed = nbformat.read(run.filename, as_version=4)
            cell = outputs.stale_cell(committed, result.nb)
            if cell is not None:
                result.error = NotebookError(
                    summary=f"{run.filename.name}: its committed outputs are stale",
                    trace=f"cell {cell} shows other text than a fresh run: run "
                    f"scripts/execute-notebooks {run.filename.name} and commit the notebook\n"
                    + outputs.stale_detail(committed, result.nb, cell),
                    failing_cell_index=cell,
                )
        return result

    NotebookRun.execute = execute_and_read


def _load_module(name: str, path: Path) -> Any:
    """A helper module of tests/ by its path (the test folder is not on the path here)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _moment(when: str) -> datetime:
    moment = datetime.fromisoformat(when)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"cotplan: COTPLAN_HOME={_HOME} (shell variables cleared)"]
    if config.getoption("clock"):
        lines.append(f"cotplan: clock moved to {config.getoption('clock')} (--clock)")
    if config.getoption("fast"):
        lines.append("cotplan: --fast: model, slow and torch tests deselected")
    return lines


def pytest_unconfigure(config: pytest.Config) -> None:
    global _clock
    if _clock is not None:
        _clock.stop()
        _clock = None
    shutil.rmtree(_HOME, ignore_errors=True)


def _register_hypothesis_profiles() -> None:
    from hypothesis import HealthCheck, settings

    # Explicit parent: Hypothesis loads its own "ci" profile when it sees CI in the environment.
    settings.register_profile(
        "cotplan",
        parent=settings.get_profile("default"),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(
        "ci",
        parent=settings.get_profile("cotplan"),
        derandomize=True,
        print_blob=True,
    )
    chosen = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "cotplan")
    settings.load_profile(chosen)


MODEL_FIXTURES = {"local_model", "local_backend", "thinking_model", "thinking_backend"}
# A notebook that starts the embedded model (through the library) or trains a lab model with
# torch says so in its source (its paired .py file, see scripts/sync-notebooks).
MODEL_IN_NOTEBOOK = re.compile(r"LocalModel|local_backend|connect\((?!f?[\"']lab:)")
TORCH_IN_NOTEBOOK = re.compile(
    r"import torch|cotplan\.research\.lab\.(ablation|bernoulli|reasoning)"
)


def _notebook_source(path: Path) -> str:
    paired = path.with_suffix(".py")
    return paired.read_text() if paired.exists() else path.read_text()


# At the start of a line: a module-level import (or importorskip) makes every test need torch.
TORCH_IN_MODULE = re.compile(
    r'^(import torch|from torch\b|\w+ = pytest.importorskip\("torch"\))', re.M
)


def _needs_torch(item: pytest.Item, modules: dict[Path, bool]) -> bool:
    path = Path(str(item.path))
    if path not in modules:
        modules[path] = bool(TORCH_IN_MODULE.search(path.read_text()))
    if modules[path]:
        return True
    function = getattr(item, "function", None)
    with contextlib.suppress(OSError, TypeError):
        source = inspect.getsource(function) if function is not None else ""
        return 'importorskip("torch")' in source or "import torch" in source
    return False


def _prices_something(path: Path, modules: dict[Path, bool]) -> bool:
    if path not in modules:
        modules[path] = bool(PRICES_SOMETHING.search(path.read_text()))
    return modules[path]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    torch_modules: dict[Path, bool] = {}
    priced_modules: dict[Path, bool] = {}
    for item in items:
        path = Path(str(item.path))
        if path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)
            source = _notebook_source(path)
            if MODEL_IN_NOTEBOOK.search(source):
                item.add_marker(pytest.mark.model)
            if TORCH_IN_NOTEBOOK.search(source):
                item.add_marker(pytest.mark.torch)
            continue
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.model)
        if path.suffix == ".py" and _needs_torch(item, torch_modules):
            item.add_marker(pytest.mark.torch)
        if (
            path.suffix == ".py"
            and item.get_closest_marker("clock") is None
            and _prices_something(path, priced_modules)
        ):
            item.add_marker(pytest.mark.clock(PRICE_DAY))
    _UNMARKED.update(item.nodeid for item in items if item.get_closest_marker("slow") is None)
    if not config.getoption("fast"):
        return
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        marked = {m.name for m in item.iter_markers()}
        (dropped if marked & {"model", "slow", "torch"} else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


_UNMARKED: set[str] = set()  # node ids of the collected tests not marked slow
_SPENT: dict[str, float] = {}  # seconds per node id: setup, call and teardown together


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _SPENT[report.nodeid] = _SPENT.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    limit = config.getoption("slow_report")
    slow = sorted(
        ((spent, node) for node, spent in _SPENT.items() if node in _UNMARKED and spent > limit),
        reverse=True,
    )
    if not limit or not slow:
        return
    load = "/".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    terminalreporter.section("tests over the slow limit without the slow marker")
    terminalreporter.write_line(
        f"{len(slow)} test(s) took over {limit:g} s (load average {load} now): mark them "
        "`@pytest.mark.slow` if they are slow on an idle machine too (a fixture's set-up "
        "counts in the first test that uses it)"
    )
    for spent, node in slow:
        terminalreporter.write_line(f"{spent:8.2f} s  {node}")


@pytest.fixture(autouse=True)
def _refuse_unmarked_model(request: pytest.FixtureRequest) -> Iterator[None]:
    """In --fast runs, a test that starts the embedded model without `model` fails, and says so."""
    if not request.config.getoption("fast"):
        yield
        return
    import subprocess

    real_popen = subprocess.Popen

    class Refusing(real_popen):  # type: ignore[valid-type,misc]
        # At the process start, not in LocalModel.start: a bad model name must still get its
        # own error from `locate`, which runs first.
        def __init__(self, args: Any, *rest: Any, **options: Any) -> None:
            if "cotplan.backends._serve" in list(map(str, args)):
                pytest.fail(
                    "this test starts the embedded model: mark it `@pytest.mark.model`",
                    pytrace=False,
                )
            super().__init__(args, *rest, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess, "Popen", Refusing)
        yield


@pytest.fixture(autouse=True)
def _sigint_as_it_was(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test ends with Ctrl-C's handler as it found it. A library that sets SIGINT to be
    ignored (and leaves it so) would make every later Ctrl-C test wait in vain, and every child
    process inherit the ignoring; the test that changed it is named."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        request.node.warn(pytest.PytestWarning(f"left SIGINT's handler changed ({after!r})"))
    if not blocked and signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        request.node.warn(pytest.PytestWarning("left SIGINT blocked"))


@pytest.fixture(autouse=True)
def _pinned_clock(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked `clock(DAY)` runs with the clock at DAY (ticking)."""
    marker = request.node.get_closest_marker("clock")
    if marker is None or request.config.getoption("unpin"):
        yield
        return
    import time_machine

    with time_machine.travel(_moment(str(marker.args[0])), tick=True):
        yield
