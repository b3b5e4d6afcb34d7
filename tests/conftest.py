"""Shared fixtures: a private cotplan home per test session and ONE embedded-model server.

The server is the real SmolLM2-135M model under llama.cpp; every test marked `model` shares it,
so the suite pays its start-up once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def cotplan_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("cotplan-home")
    old = os.environ.get("COTPLAN_HOME")
    os.environ["COTPLAN_HOME"] = str(home)
    os.environ.setdefault("COTPLAN_DEBUG", "")
    yield home
    if old is None:
        os.environ.pop("COTPLAN_HOME", None)
    else:
        os.environ["COTPLAN_HOME"] = old


@pytest.fixture(scope="session")
def local_model(cotplan_home: Path) -> Iterator[object]:
    """The running embedded server (a `cotplan.LocalModel`)."""
    from cotplan.backends.local import LocalModel

    with LocalModel() as model:
        yield model


@pytest.fixture(scope="session")
def local_backend(local_model: object) -> object:
    """A Backend talking to the shared embedded server, with the call cache OFF.

    Tests that exercise the cache build their own backend with a cache in a temp folder.
    """
    from cotplan.backends.local import LocalModel

    assert isinstance(local_model, LocalModel)
    return local_model.backend(cache=None)
