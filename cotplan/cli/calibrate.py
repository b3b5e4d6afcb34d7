"""`cotplan calibrate`, and the checks of command-line options every model command runs first.

A typo must cost nothing: every command validates all of its options, and finds its model file
or endpoint spec well formed, before it starts a server or sends a request (which may be paid).
The ranges themselves are checked by `cotplan.validation` (the one set of argument checks the
library uses too); the pieces here (`check_backend`, `check_int`, `check_out`...) put them in
the words of options, and `check_calibrate_options` runs all of `calibrate`'s. Each raises
`InputError` naming the option. The command-line pieces every planner command shares (the
item source, the calibration table) live here too, so `cotplan plan` and `run` import them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from cotplan.backends.known_models import PROTOCOL_NAMES
from cotplan.cli.report_folders import finish_report, start_report
from cotplan.cli.report_page import add_report_page
from cotplan.errors import InputError, ModelFileError
from cotplan.validation import (
    MAX_BUDGET,
    require_budget,
    require_choice,
    require_folder_target,
    require_int,
    require_ints,
    require_number,
    require_unit,
)

if TYPE_CHECKING:
    from cotplan.backends import Backend
    from cotplan.planner.calibrate import Calibration
    from cotplan.tasks import TaskItem

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "MAX_BUDGET",
    "MAX_CONCURRENCY",
    "MAX_COUNT",
    "MAX_RETRIES",
    "MAX_TIMEOUT_S",
    "MaxRetriesOption",
    "ProtocolOption",
    "TimeoutOption",
    "build_items",
    "calibrate",
    "check_backend",
    "check_budgets",
    "check_calibrate_options",
    "check_int",
    "check_item_source",
    "check_out",
    "check_probability",
    "check_protocol",
    "check_timeouts",
    "connect_options",
    "mode_and_protocol",
    "parse_ints",
    "print_calibration",
    "print_spend",
    "register",
]

console = Console()

#: Items per size: a calibration beyond this is a typo, not a plan.
MAX_COUNT = 10_000
#: Requests in flight at once.
MAX_CONCURRENCY = 256

#: `--timeout`: seconds one attempt may wait for its answer. A reasoning model sends nothing
#: until it has thought, which takes minutes at high effort (10k hidden tokens at 50 tokens/s
#: is 200 s), so the default is long; what bounds a hung endpoint is the few retries below and
#: Ctrl-C, which now stops at once.
DEFAULT_TIMEOUT_S = 300.0
#: `--max-retries`: retries of one request after a 429, a 5xx, a dropped connection or a
#: timeout. Two ride out a transient fault; each retry of a hung endpoint costs a full timeout.
DEFAULT_MAX_RETRIES = 2
#: The longest `--timeout` accepted (an hour: longer is a typo, not a model).
MAX_TIMEOUT_S = 3600.0
#: The most `--max-retries` accepted.
MAX_RETRIES = 10

TimeoutOption = Annotated[
    float,
    typer.Option(
        help="Seconds one attempt waits for an answer (long by default: a reasoning model says "
        "nothing until it has thought). A hung endpoint costs at most timeout x (retries + 1) "
        "per request; Ctrl-C stops at once."
    ),
]
MaxRetriesOption = Annotated[
    int,
    typer.Option(
        help="Retries of a request after a 429, a 5xx, a dropped connection or a timeout."
    ),
]
ProtocolOption = Annotated[
    str,
    typer.Option(
        help="How the model writes and closes its thinking: 'auto' (the model registry's, by "
        "name), 'plain' (cotplan's 'Think step by step ... Answer:'), 'think' (<think> ... "
        "</think>: R1 distills, QwQ) or 'qwen3'. Set it for a thinking model served under a "
        "name cotplan does not know."
    ),
]


def check_int(value: int | None, field: str, *, low: int = 1, high: int | None = None) -> None:
    """`value` (None allowed: the default) is a whole number in [low, high]
    (`cotplan.validation.require_int`)."""
    if value is not None:
        require_int(value, field, low=low, high=high)


def check_probability(value: float | None, field: str, *, closed_high: bool = False) -> None:
    """`value` (None allowed) lies in (0, 1), or (0, 1] with `closed_high`
    (`cotplan.validation.require_unit`)."""
    if value is not None:
        require_unit(value, field, closed_high=closed_high)


def parse_ints(values: Sequence[str] | None, name: str, *, low: int | None = None) -> list[int]:
    """`["4,8", "16"]` -> [4, 8, 16]; names the option in errors; each at least `low`."""
    return require_ints(values, name, low=low)


def check_budgets(text: str) -> list[int] | str:
    """`--budgets`: 'auto', 'paper', or comma-separated whole numbers in 0..MAX_BUDGET."""
    if text.strip() in ("auto", "paper"):
        return text.strip()
    parts = [part.strip() for part in text.split(",")]
    if not any(parts):
        raise InputError(
            "give at least one budget, e.g. 0,8,32, or 'auto' or 'paper'", field="budgets"
        )
    if not all(parts):
        raise InputError(f"has an empty entry in {text!r}", field="budgets")
    return [require_budget(k, "budgets") for k in require_ints(parts, "budgets")]


def check_out(out: Path | None, field: str = "out") -> None:
    """A report folder we could create: not an existing file, under a writable folder
    (`cotplan.validation.require_folder_target`)."""
    require_folder_target(out, field)


def check_backend(spec: str, base_url: str | None = None) -> None:
    """A backend spec that `connect` can honour, checked without starting or calling anything.

    For the embedded engine the model file is located and checked (a known name on this
    machine, or a GGUF file: not a folder, a device or a missing path); for an endpoint the
    URL must be http(s). A lab family must be known. API keys are checked by `connect` (which
    sends nothing either).
    """
    if not isinstance(spec, str) or not spec.strip():
        raise InputError("must be 'local', 'local:PATH', or 'openai:MODEL'", field="backend")
    provider, _, rest = spec.partition(":")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise InputError(f"must start with http:// or https://, got {base_url!r}", field="base_url")
    if provider == "local":
        from cotplan.backends.models import locate

        model = rest or "smollm2-135m-instruct"
        try:
            locate(model)
        except ModelFileError as exc:
            raise InputError(str(exc), field="backend") from exc
        return
    if provider == "lab":
        from cotplan.research.lab.reasoning.tasks import get_lab_family

        try:
            get_lab_family(rest)  # "parity" or "lab-parity"
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], field="backend") from exc
        return
    if provider == "openai" and not rest:
        raise InputError("name the model: 'openai:MODEL'", field="backend")
    from cotplan.backends.registry import check_spec

    check_spec(spec, base_url)


def check_calibrate_options(
    *,
    budgets: str,
    count: int,
    concurrency: int | None,
    answer_tokens: int,
    backend: str,
    base_url: str | None,
    out: Path | None,
) -> list[int] | str:
    """Every `cotplan calibrate` option that the item loader does not check; the budget grid."""
    grid = check_budgets(budgets)
    check_int(count, "count", high=MAX_COUNT)
    check_int(concurrency, "concurrency", high=MAX_CONCURRENCY)
    check_int(answer_tokens, "answer_tokens", high=MAX_BUDGET)
    check_out(out)
    check_backend(backend, base_url)
    return grid


def check_timeouts(timeout: float, max_retries: int) -> None:
    """`--timeout` in (0, MAX_TIMEOUT_S] seconds and `--max-retries` in 0..MAX_RETRIES."""
    seconds = require_number(timeout, "timeout", low=0.0, high=MAX_TIMEOUT_S)
    if seconds <= 0.0:
        raise InputError(
            f"must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, got {timeout!r}",
            field="timeout",
        )
    check_int(max_retries, "max_retries", low=0, high=MAX_RETRIES)


def check_protocol(protocol: str) -> None:
    """`--protocol` names a known reasoning protocol (or 'auto')."""
    require_choice(protocol, "protocol", ["auto", *PROTOCOL_NAMES])


def connect_options(
    backend: str, timeout: float, max_retries: int, protocol: str = "auto"
) -> dict[str, Any]:
    """The `connect` options that carry `--timeout`, `--max-retries` and `--protocol` to
    `backend`'s provider: the embedded engine takes a timeout (its server is local: nothing to
    retry), an OpenAI-compatible endpoint both, an in-process lab model neither."""
    provider = backend.partition(":")[0]
    chosen: dict[str, Any] = {} if protocol == "auto" else {"protocol": protocol}
    if provider == "lab":
        return chosen
    if provider == "local":
        return {"timeout": float(timeout), **chosen}
    return {"timeout": float(timeout), "max_retries": int(max_retries), **chosen}


# -- options and helpers the planner commands share ------------------------------------------

Family = Annotated[
    str | None, typer.Option(help="A built-in task family (see `cotplan tasks list`).")
]
TasksFile = Annotated[Path | None, typer.Option(help="A JSONL task file instead of a family.")]
Sizes = Annotated[list[str] | None, typer.Option("--n", help="Sizes, e.g. --n 4,8.")]
Count = Annotated[int, typer.Option(help="Items per size (built-in families).")]
BackendSpec = Annotated[str, typer.Option(help="'local', 'local:PATH' or 'openai:MODEL'.")]
BaseUrl = Annotated[str | None, typer.Option(help="An OpenAI-compatible endpoint.")]
Concurrency = Annotated[int | None, typer.Option(help="Items answered at once.")]
ShowProgress = Annotated[bool, typer.Option(help="Show a progress bar.")]


def check_item_source(family: str | None, tasks: Path | None, sizes: Sequence[int]) -> None:
    """Exactly one of --family and --tasks, and no --n with --tasks: a task file's items carry
    their own sizes, and silently running other sizes than asked misleads."""
    if (family is None) == (tasks is None):
        raise InputError("give exactly one of --family and --tasks", field="family")
    if tasks is not None and sizes:
        raise InputError(
            "--n cannot be used with --tasks: the task file's items carry their own sizes "
            "(`cotplan tasks make --n ...` writes a file for the sizes you want)",
            field="n",
        )


def build_items(
    family: str | None,
    tasks: Path | None,
    sizes: list[int],
    count: int,
    seed: int,
    *,
    backend: str | None = None,
) -> list[TaskItem]:
    """Items from a built-in family (each size, `count` items) or from a JSONL task file. A lab
    backend (``lab:...``) reads only its own questions, so a family asked of it is made the
    lab's way (`cotplan.cli.tasks.family_items`)."""
    from cotplan.cli.tasks import family_items
    from cotplan.tasks import load_tasks

    check_item_source(family, tasks, [])
    if tasks is not None:
        return list(load_tasks(tasks))
    assert family is not None
    if not sizes:
        raise InputError("give at least one size, e.g. --n 4,8", field="n")
    return [
        item
        for n in sizes
        for item in family_items(family, n=n, count=count, seed=seed, backend=backend)
    ]


def mode_and_protocol(model: Backend) -> str:
    """How budgeted CoT drives `model`, for the line a command prints after connecting (the
    heavy generate layer is imported only then, so `cotplan --help` stays fast)."""
    from cotplan.generate.budgeted import driven_as

    return driven_as(model)


def print_calibration(
    calibration: Calibration,
    *,
    title: str = "Calibration: accuracy (mean reasoning tokens) by budget k and size n",
) -> None:
    """Accuracy per (n, k) with the mean reasoning tokens spent at each budget."""
    from cotplan.cli.glance import print_grid

    summary = calibration.summary()
    budgets = sorted(int(k) for k in summary["k"].unique())
    sizes = sorted(int(n) for n in summary["n"].unique())
    # One row per budget, one column per size: a grid of budgets would be wider than a
    # terminal (every cell cut to '…'); the sizes are few. Too many sizes split the grid.
    cells = {(int(r["n"]), int(r["k"])): r for r in summary.to_dict("records")}
    rows = []
    for k in budgets:
        row = []
        for n in sizes:
            r = cells.get((n, k))
            row.append("" if r is None else f"{r['accuracy']:.2f} ({r['reasoning_tokens']:.0f})")
        rows.append((str(k), row))
    print_grid(console, "k", [f"n={n}" for n in sizes], rows, title=title)
    answers = len(calibration.frame)
    items = calibration.frame["item"].nunique()
    console.print(
        f"{items} items x {len(budgets)} budgets = {answers} answers; "
        f"{calibration.requests} requests, {calibration.cache_hits} answered by the call cache"
        + (f", {calibration.retries} retried after failures" if calibration.retries else "")
    )
    for note in calibration.notes:
        console.print(f"[yellow]note:[/] {note}")
    print_spend(calibration.frame)


def print_spend(frame: Any) -> None:
    """One line: what the calibration itself cost (answers, tokens, USD)."""
    import math

    from cotplan.planner.calibrate import calibration_spend

    spend = calibration_spend(frame)
    tokens = [
        f"{spend[kind]:,.0f} {kind.removesuffix('_tokens')}"
        for kind in ("prompt_tokens", "reasoning_tokens", "answer_tokens")
        if not math.isnan(spend[kind])
    ]
    usd = "price unknown" if math.isnan(spend["cost_usd"]) else f"USD {spend['cost_usd']:.4f}"
    console.print(
        f"calibration spend: {spend['answers']:.0f} answers of {spend['items']:.0f} items"
        + (f"; tokens {', '.join(tokens)}" if tokens else "")
        + f"; {usd}"
    )
    from cotplan.planner.calibration_file import usage_note

    if note := usage_note(frame):
        console.print(f"[yellow]note:[/] {note}")


# -- the command -------------------------------------------------------------------------------


def calibrate(
    *,
    family: Family = None,
    tasks: TasksFile = None,
    n: Sizes = None,
    count: Count = 12,
    seed: Annotated[int, typer.Option(help="Seed of the generated items.")] = 0,
    budgets: Annotated[
        str,
        typer.Option(
            help="Reasoning budgets: 'auto' (a grid from 0 to about the 95th percentile of the "
            "model's own uncapped thinking, measured by each item's first request), "
            "comma-separated numbers, or 'paper'."
        ),
    ] = "auto",
    backend: BackendSpec = "local",
    base_url: BaseUrl = None,
    concurrency: Concurrency = None,
    answer_tokens: Annotated[int, typer.Option(help="Cap of the answer phase.")] = 16,
    out: Annotated[
        Path | None, typer.Option(help="Report folder (default reports/<time>-<random>/).")
    ] = None,
    progress: ShowProgress = True,
    timeout: TimeoutOption = DEFAULT_TIMEOUT_S,
    max_retries: MaxRetriesOption = DEFAULT_MAX_RETRIES,
    protocol: ProtocolOption = "auto",
    batch: Annotated[
        bool, typer.Option(help="Submit the requests through the endpoint's Batch API.")
    ] = False,
    batch_file: Annotated[
        bool, typer.Option(help="Write batch files for an executor (vLLM's run-batch).")
    ] = False,
    batch_output: Annotated[
        list[Path] | None, typer.Option(help="An executor's output file to read back.")
    ] = None,
    status: Annotated[
        Path | None, typer.Option(help="Show where a report folder's batches stand.")
    ] = None,
    uncapped_tokens: Annotated[
        int | None,
        typer.Option(
            help="Cap of each item's uncapped run (--budgets auto). Default 16384, or 4096 on "
            "the embedded and lab models, whose runs on 2 cores take minutes at that length."
        ),
    ] = None,
    eps: Annotated[
        float | None,
        typer.Option(
            help="With --budgets auto: add budgets where the error crosses this target and "
            "certify there (answers only; the thinking comes from the same runs)."
        ),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Do not ask before paid requests.")
    ] = False,
) -> None:
    """Answer items at several reasoning budgets and save the calibration table."""
    from cotplan.backends import connect
    from cotplan.planner.calibrate import calibrate as run_calibration

    if status is not None:  # the batch path (docs/batch.md) lives in cli/calibrate_batch
        from cotplan.cli.calibrate_batch import show_status

        show_status(status)
        return
    sizes = parse_ints(n, "n")
    check_item_source(family, tasks, sizes)
    check_timeouts(timeout, max_retries)
    check_protocol(protocol)
    check_int(seed, "seed", low=0)
    grid: Any = check_calibrate_options(
        budgets=budgets,
        count=count,
        concurrency=concurrency,
        answer_tokens=answer_tokens,
        backend=backend,
        base_url=base_url,
        out=out,
    )  # all before the first (maybe paid) call
    cap = uncapped_tokens if uncapped_tokens is not None else default_uncapped(backend)
    check_int(cap, "uncapped_tokens", high=MAX_BUDGET)
    check_probability(eps, "eps")
    if eps is not None and grid != "auto":
        raise InputError("--eps refines the auto grid: use it with --budgets auto", field="eps")
    if (batch or batch_file or batch_output) and eps is not None:
        # The batch path sizes the auto grid from a first round of uncapped runs, but does not
        # refine it (that needs answers the grid's round has not returned).
        raise InputError("--eps is not available on the batch path", field="eps")
    items = build_items(family, tasks, sizes, count, seed, backend=backend)
    options = connect_options(backend, timeout, max_retries, protocol)
    if batch or batch_file or batch_output:
        from cotplan.cli.calibrate_batch import calibrate_in_batches

        calibrate_in_batches(
            backend=backend,
            base_url=base_url,
            options=options,
            items=items,
            grid=grid,
            answer_tokens=answer_tokens,
            uncapped_tokens=cap,
            out=out,
            submit=batch,
            write_files=batch_file,
            outputs=batch_output or [],
            yes=yes,
            show=print_calibration,
        )
        return
    with (
        start_report(out, command="calibrate") as report,
        connect(backend, base_url=base_url, **options) as model,
    ):
        console.print(f"model {model.model} ({mode_and_protocol(model)})")
        confirm_calibration(
            model,
            items,
            grid,
            backend=backend,
            uncapped_tokens=cap,
            answer_tokens=answer_tokens,
            yes=yes,
            base_url=base_url,
        )
        from cotplan.planner.batch_concurrency import server_concurrency

        result = run_calibration(
            model,
            items,
            grid,
            concurrency=concurrency or server_concurrency(model),
            progress=progress,
            answer_tokens=answer_tokens,
            uncapped_tokens=cap,
            eps=eps,
        )
        result.to_csv(report.path / "calibration.csv")
        print_calibration(result)
        folder = finish_report(report)
    page = add_report_page(folder, command="calibrate")
    console.print(f"wrote {folder / 'calibration.csv'}" + (f", {page.name}" if page else ""))


#: `--uncapped-tokens` on the embedded and lab models (see the option's help).
LOCAL_UNCAPPED_TOKENS = 4096


def default_uncapped(backend: str) -> int:
    """The default cap of an uncapped run for `backend`'s provider."""
    from cotplan.planner.auto_grid import UNCAPPED_TOKENS

    provider = backend.partition(":")[0]
    return LOCAL_UNCAPPED_TOKENS if provider in ("local", "lab") else UNCAPPED_TOKENS


def _on_loopback(base_url: str | None) -> bool:
    """An endpoint on this machine (a local vLLM or llama.cpp server) charges nothing."""
    from urllib.parse import urlsplit

    if base_url is None:
        return False
    host = urlsplit(base_url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def confirm_calibration(
    model: Backend,
    items: Sequence[TaskItem],
    grid: list[int] | str,
    *,
    backend: str,
    uncapped_tokens: int,
    answer_tokens: int,
    yes: bool,
    base_url: str | None = None,
) -> None:
    """Print what the calibration will take (items, budgets, requests, tokens, cost) before
    its first request, and ask before a backend that may charge unless `yes`."""
    from cotplan.planner.calibrate import paper_budgets
    from cotplan.planner.calibration_estimate import estimate_calibration
    from cotplan.research.reproduce_plan import is_paid

    of_n: Callable[[int], Sequence[int]] | None
    if grid == "auto":
        of_n = None
        words = (
            "auto (0 + up to 12 geometric, to about the 95th percentile of thinking capped "
            f"at {uncapped_tokens})"
        )
    elif grid == "paper":
        of_n = paper_budgets
        words = "paper (Algorithm 1's grid per size)"
    else:
        fixed = [int(k) for k in grid]
        of_n = lambda n: fixed  # noqa: E731 - one grid for every size
        words = ", ".join(map(str, fixed))
    estimate = estimate_calibration(
        model,
        items,
        of_n,
        uncapped_tokens=uncapped_tokens,
        answer_tokens=answer_tokens,
        describe=words,
    )
    for line in estimate.lines():
        console.print(line)
    question = f"{backend} may charge for these requests. Start?"
    paid = is_paid(backend) and not _on_loopback(base_url)
    if paid and not yes and not typer.confirm(question, default=False):
        console.print("not started: no requests sent")
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `cotplan calibrate` to the top-level app."""
    app.command("calibrate")(calibrate)
