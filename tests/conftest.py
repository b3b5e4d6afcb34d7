"""Shared fixtures: the private cotplan home of the test session and ONE embedded-model server.

The home is made by the root conftest.py (before any test or notebook runs, with the shell's
cotplan variables and provider keys cleared). The server is the real SmolLM2-135M model under
llama.cpp; every test that uses it shares it (the root conftest marks such tests `model`), so
the suite pays its start-up once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

SESSION_HOME = Path(os.environ["COTPLAN_HOME"])  # set by the root conftest.py


@pytest.fixture(scope="session", autouse=True)
def cotplan_home() -> Iterator[Path]:
    """The session's user folder; restored if a test left `COTPLAN_HOME` pointing elsewhere."""
    yield SESSION_HOME
    os.environ["COTPLAN_HOME"] = str(SESSION_HOME)


@pytest.fixture(scope="session")
def local_model(cotplan_home: Path) -> Iterator[object]:
    """The running embedded server (a `cotplan.LocalModel`)."""
    from cotplan.backends.local import LocalModel

    # Pinned, not the machine's default, so every machine runs the suite the same way; two
    # single-thread replicas are that default on the 2-core CI machine.
    with LocalModel(threads=1, replicas=2) as model:
        yield model


@pytest.fixture(scope="session")
def local_backend(local_model: object) -> object:
    """A Backend talking to the shared embedded server, with the call cache OFF.

    Tests that exercise the cache build their own backend with a cache in a temp folder.
    """
    from cotplan.backends.local import LocalModel

    assert isinstance(local_model, LocalModel)
    return local_model.backend(cache=None)


@pytest.fixture(scope="session")
def thinking_model(cotplan_home: Path) -> Iterator[object]:
    """The embedded thinking model's server (SmolLM2 plus cotplan's adapter), shared like
    `local_model`: a second llama.cpp process, loaded once."""
    from cotplan.backends.local import LocalModel

    with LocalModel("thinking", threads=1, replicas=2) as model:
        yield model


@pytest.fixture(scope="session")
def thinking_backend(thinking_model: object) -> object:
    """A Backend on the shared thinking-model server, with the call cache OFF."""
    from cotplan.backends.local import LocalModel

    assert isinstance(thinking_model, LocalModel)
    return thinking_model.backend(cache=None)
