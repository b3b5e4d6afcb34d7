"""The suite's own set-up (the root conftest.py) does what it says: each check runs pytest in a
fresh folder holding a copy of that conftest and a small test file, as a separate process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

# Each check starts a pytest session in a child process: seconds each, so not in --fast runs.
pytestmark = pytest.mark.slow

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def _pytest(
    folder: Path, test_source: str, *args: str, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run pytest on `test_source` in `folder`; `env` adds variables (None removes one)."""
    (folder / "conftest.py").write_text(ROOT_CONFTEST.read_text())
    (folder / "test_inner.py").write_text(textwrap.dedent(test_source))
    (folder / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", *args],
        cwd=folder,
        env={k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_shells_variables_do_not_reach_the_tests(tmp_path: Path) -> None:
    leaks = {
        "COTPLAN_CACHE": "off",
        "COTPLAN_PRICES": "/nonexistent",
        "COTPLAN_KEY_FILE": "/nonexistent",
        "COTPLAN_DEBUG": "1",
        "COTPLAN_HOME": "/nonexistent",
        "OPENAI_API_KEY": "x",
        "ANTHROPIC_API_KEY": "x",
        "OPENAI_BASE_URL": "http://10.0.0.1/v1",
    }
    result = _pytest(
        tmp_path,
        f"""
        import os, tempfile
        from pathlib import Path

        def test_clean():
            for name in {sorted(set(leaks) - {"COTPLAN_HOME"})!r}:
                assert name not in os.environ, name
            home = Path(os.environ["COTPLAN_HOME"])
            assert home.is_dir()
            assert str(home).startswith(tempfile.gettempdir())
        """,
        env=leaks,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_the_clock_option_moves_the_clock_and_pinned_tests_keep_their_day(
    tmp_path: Path,
) -> None:
    source = """
        import datetime
        import pytest

        def test_moved():
            assert datetime.date.today() == datetime.date(2028, 1, 1)

        @pytest.mark.clock("2026-12-01")
        def test_pinned():
            assert datetime.date.today() == datetime.date(2026, 12, 1)
        """
    result = _pytest(tmp_path, source, "--clock", "2028-01-01")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    by_env = _pytest(tmp_path, source, env={"COTPLAN_TEST_CLOCK": "2028-01-01"})
    assert by_env.returncode == 0, by_env.stdout + by_env.stderr
    unmoved = _pytest(tmp_path, source)
    assert "test_moved FAILED" in unmoved.stdout or "FAILED test_inner.py::test_moved" in (
        unmoved.stdout
    )


def test_a_module_that_prices_something_runs_on_the_price_day(tmp_path: Path) -> None:
    result = _pytest(
        tmp_path,
        """
        import datetime
        import cotplan.pricing  # what marks the module as pricing something

        def test_day():
            assert datetime.date.today() == datetime.date(2026, 12, 1)
        """,
        "--clock",
        "2028-01-01",
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_fast_skips_model_slow_and_torch_and_fails_unmarked_ones(tmp_path: Path) -> None:
    result = _pytest(
        tmp_path,
        """
        import pytest

        @pytest.fixture
        def local_backend():
            raise AssertionError("a model fixture must not run in --fast")

        def test_uses_the_model(local_backend):
            pass

        @pytest.mark.slow
        def test_slow():
            raise AssertionError("deselected")

        def test_needs_torch():
            pytest.importorskip("torch")
            raise AssertionError("deselected")

        def test_imports_torch_unmarked():
            __import__("torch")

        def test_starts_the_model_unmarked():
            from cotplan.backends.local import LocalModel
            LocalModel().start()

        def test_plain():
            pass
        """,
        "--fast",
    )
    out = result.stdout
    assert "3 deselected" in out, out
    assert "PASSED test_inner.py::test_plain" in out, out
    assert "FAILED test_inner.py::test_imports_torch_unmarked" in out, out
    assert "torch is not loaded in --fast runs" in out
    assert "FAILED test_inner.py::test_starts_the_model_unmarked" in out, out
    assert "mark it `@pytest.mark.model`" in out


@pytest.mark.parametrize(("ci", "derandomize"), [(None, False), ("true", True)])
def test_hypothesis_has_no_deadline_and_is_derandomized_in_ci(
    tmp_path: Path, ci: str | None, derandomize: bool
) -> None:
    result = _pytest(
        tmp_path,
        f"""
        from hypothesis import settings

        def test_profile():
            assert settings.default.deadline is None
            assert settings.default.derandomize is {derandomize}
        """,
        env={"CI": ci},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_tests_over_the_slow_limit_without_the_marker_are_listed(tmp_path: Path) -> None:
    source = """
        import time
        import pytest

        def test_sleeps():
            time.sleep(0.3)

        @pytest.mark.slow
        def test_sleeps_marked():
            time.sleep(0.3)
        """
    # A sleep lasts at least its length, so the unmarked test is over a 0.2 s limit on any
    # machine; the marked one is never listed, whatever it took.
    listed = _pytest(tmp_path, source, "--slow-report", "0.2").stdout
    assert "tests over the slow limit without the slow marker" in listed, listed
    assert re.search(r"^ +\d+\.\d\d s  test_inner\.py::test_sleeps$", listed, re.M), listed
    assert not re.search(r" s  test_inner\.py::test_sleeps_marked$", listed, re.M), listed
    off = _pytest(tmp_path, source, "--slow-report", "0").stdout
    assert "without the slow marker" not in off, off
