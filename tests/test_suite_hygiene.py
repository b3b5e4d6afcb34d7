"""The suite's own rules, checked on its source: no test asserts on wall-clock time, and the
recorded data under tests/data holds no path of the machine that recorded it.

A speed limit in a test fails on a loaded machine and passes on a fast one whatever the code
does; speed belongs in the benchmarks (benchmarks/, with their transcripts). A recorded path
ties a test to one checkout. Both scanners are tested on snippets that break the rule, so a
scanner that stopped finding anything would fail here too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"

# Calls that read a clock whose difference is a duration.
TIMERS = {"time", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time"}
# Names, attributes and keys that hold a duration in seconds (train_seconds, elapsed, latency_s).
TIMING_WORD = re.compile(r"(seconds|elapsed|duration|wall|latency|took)|(_s|_ms)$", re.I)
# What a duration is compared with to make a speed limit: a positive number or a named limit.
LIMIT_WORD = re.compile(r"limit|timeout|deadline|max|budget", re.I)
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _identifier(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    return ""


def _reads_a_clock(node: ast.AST) -> bool:
    return any(
        isinstance(call, ast.Call) and _identifier(call.func) in TIMERS for call in ast.walk(node)
    )


def _timed_names(tree: ast.AST) -> set[str]:
    """Names assigned from a clock reading (t0 = perf_counter(); elapsed = monotonic() - t0)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _reads_a_clock(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _is_timing(node: ast.AST, timed: set[str]) -> bool:
    if _reads_a_clock(node):
        return True
    for part in ast.walk(node):
        name = _identifier(part)
        if name and (name in timed or TIMING_WORD.search(name)):
            return True
    return False


def _is_limit(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return not isinstance(node.value, bool) and node.value > 0
    name = _identifier(node)
    return bool(name and LIMIT_WORD.search(name))


def wall_clock_asserts(source: str, filename: str = "<test>") -> list[str]:
    """Asserts that order a duration against a positive number or a named limit."""
    tree = ast.parse(source, filename)
    timed = _timed_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for compare in ast.walk(node.test):
            if not isinstance(compare, ast.Compare):
                continue
            if not any(isinstance(op, ORDERING) for op in compare.ops):
                continue
            operands = [compare.left, *compare.comparators]
            timing = {i for i, o in enumerate(operands) if _is_timing(o, timed)}
            limits = {i for i, o in enumerate(operands) if _is_limit(o)}
            if any(i != j for i in timing for j in limits):
                found.append(f"{filename}:{node.lineno}: {ast.unparse(node.test)}")
                break
    return found


@pytest.mark.parametrize(
    "snippet",
    [
        "t0 = time.perf_counter()\nwork()\nelapsed = time.perf_counter() - t0\nassert elapsed < 5",
        "start = time.monotonic()\nassert time.monotonic() - start <= 2.0",
        'assert meta["train_seconds"] < 120',
        "assert result.train_seconds <= LIMIT",
        "assert 30 > completion.latency_s",
        "t = time()\nassert t - t0 < timeout_s",
    ],
)
def test_the_scanner_finds_a_speed_limit(snippet: str) -> None:
    assert len(wall_clock_asserts(snippet)) == 1


@pytest.mark.parametrize(
    "snippet",
    [
        'assert meta["train_seconds"] > 0',
        "assert completion.latency_s >= 0",
        "assert short.latency_s == pytest.approx(1.0)",
        "assert stats.retries <= 3",
        "deadline = time.monotonic() + 300\nwhile time.monotonic() < deadline:\n    pass",
    ],
)
def test_the_scanner_leaves_other_checks_alone(snippet: str) -> None:
    assert wall_clock_asserts(snippet) == []


def test_no_test_asserts_on_wall_clock_time() -> None:
    found = []
    for path in sorted([*TESTS.glob("test_*.py"), TESTS / "conftest.py", ROOT / "conftest.py"]):
        found += wall_clock_asserts(path.read_text(), str(path.relative_to(ROOT)))
    assert found == [], "measure speed in a benchmark, not a test:\n" + "\n".join(found)


# An absolute path of a checkout, a virtualenv, a home or a temporary folder.
MACHINE_PATH = re.compile(
    r"(?<![\w.])(/(home|Users|root|tmp|var/folders|private)/[^\s\"']+"
    r"|[A-Za-z]:\\\\[^\s\"']+|site-packages|\.venv)"
)


def machine_paths(text: str) -> list[str]:
    return [m.group(0) for m in MACHINE_PATH.finditer(text)]


def test_the_path_scanner_finds_recorded_paths() -> None:
    recorded = '"model": "/home/ci/cotplan/.venv/lib/python3.11/site-packages/m.gguf"'
    assert machine_paths(recorded)
    assert machine_paths('"model": "/srv/cotplan/.venv/m.gguf"')
    assert machine_paths(r'"model": "C:\\Users\\me\\m.gguf"')
    assert machine_paths('"path": "/home/me/m.gguf"')
    assert machine_paths('"model": "SmolLM2-135M-Instruct.Q4_1.gguf"') == []
    assert machine_paths('"base_url": "http://127.0.0.1:8000/v1"') == []


def test_recorded_data_holds_no_machine_paths() -> None:
    files = sorted(p for p in DATA.rglob("*") if p.is_file())
    assert files, "tests/data is empty: the recorded responses are missing"
    found = {
        str(p.relative_to(ROOT)): paths
        for p in files
        if (paths := machine_paths(p.read_text(encoding="utf-8", errors="replace")))
        or str(ROOT) in p.read_text(encoding="utf-8", errors="replace")
    }
    assert found == {}, f"recorded data names paths of the machine that recorded it: {found}"


# A transcript named in the docs: `benchmarks/results/NAME` (a `*` in NAME is a pattern).
CITED = re.compile(r"benchmarks/results/[\w.*=/-]*[\w*]")


def test_every_transcript_the_docs_cite_exists() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    cited = {
        (str(doc.relative_to(ROOT)), name)
        for doc in docs
        for name in CITED.findall(doc.read_text(encoding="utf-8"))
    }
    assert len(cited) > 10, "the pattern no longer finds the docs' transcripts"
    missing = sorted((doc, name) for doc, name in cited if not list(ROOT.glob(name)))
    assert missing == [], f"docs cite transcripts that are not in the repository: {missing}"
