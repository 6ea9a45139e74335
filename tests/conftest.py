"""Shared fixtures: the suite kept apart from the user's cache and settings, a small corpus written to disk,
and the CLI runner."""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

if TYPE_CHECKING:
    from kb.engine import Diagnoser

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"
FIXTURES = REPO / "tests" / "fixtures" / "entries"

#: What a developer's environment may set that would change what the suite sees; unset for the run.
USER_SETTINGS = (
    "VERL_DOCTOR_CORPUS",
    "VERL_DOCTOR_LLM_URL",
    "VERL_DOCTOR_LLM_MODEL",
    "VERL_DOCTOR_TOKEN",
    "VERL_DOCTOR_DEBUG",
)


@pytest.fixture(scope="session", autouse=True)
def isolated_from_the_user(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The whole run, and every process it starts, uses a cache of its own instead of ~/.cache/verl-doctor
    (so the session-scoped diagnoser never reads a developer's imported issue archive, index or parsed
    corpus) and none of the user's verl-doctor settings. The cache lives in pytest's own cache directory
    (``.pytest_cache``), so the model export and the index survive from one run to the next; an issue
    archive never does. Tests that need an empty cache of their own still set $VERL_DOCTOR_CACHE."""
    store = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    cache = store.mkdir("verl-doctor") if store is not None else tmp_path_factory.mktemp("user-cache")
    shutil.rmtree(cache / "issues", ignore_errors=True)
    saved = {name: os.environ.get(name) for name in ("VERL_DOCTOR_CACHE", *USER_SETTINGS)}
    os.environ["VERL_DOCTOR_CACHE"] = str(cache)
    for name in USER_SETTINGS:
        os.environ.pop(name, None)
    try:
        yield cache
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


GOOD_FRONT = """\
id: {id}
title: Ray workers cannot register with the raylet
area: {area}
verl: ">=0.4"
symptoms:
  - regex: 'Unable to register worker with raylet'
    weight: 0.95
conditions:
  - text: Ray runs inside a SLURM allocation
    check: {{env: SLURM_JOB_ID, present: true}}
fix:
  overrides:
    - {{key: ray_kwargs.ray_init.num_cpus, value: 16, verl: ">=0.6"}}
    - {{key: ray_init.num_cpus, value: 16, verl: ">=0.4,<0.6"}}
  actions:
    - Set num_cpus to what the allocation grants.
sources:
  - https://github.com/verl-project/verl/blob/main/docs/faq/faq.rst
"""

GOOD_BODY = """\
## What you see

Workers fail to register.

## Why it happens

Ray sizes its pool from the node's cores.

## Fix

Set num_cpus.

## Check that it worked

The errors are gone.
"""


def entry_text(front: str, body: str = GOOD_BODY) -> str:
    return f"---\n{front}---\n{body}"


@pytest.fixture
def make_corpus(tmp_path: Path) -> Callable[..., Path]:
    """Write entries {relative path: text} plus fixtures for each id; returns the corpus root."""

    def make(files: dict[str, str], with_fixtures: bool = True) -> Path:
        root = tmp_path / "corpus"
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, bytes):
                path.write_bytes(text)
            else:
                path.write_text(textwrap.dedent(text), encoding="utf-8")
            if with_fixtures:
                fx = tmp_path / "tests" / "fixtures" / "entries" / Path(rel).stem
                fx.mkdir(parents=True, exist_ok=True)
                (fx / "positive-a.log").write_text("Unable to register worker with raylet\n")
                (fx / "negative-a.log").write_text("all good\n")
        return root

    return make


@pytest.fixture
def good_entry() -> Callable[[str, str], str]:
    def make(entry_id: str = "ray-register", area: str = "ray") -> str:
        return entry_text(GOOD_FRONT.format(id=entry_id, area=area))

    return make


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--bless", action="store_true", help="Rewrite the expected.json snapshots of entry fixtures from the engine."
    )


#: Fixtures that make every test using them slow: the real embedding model (and its index), a browser.
SLOW_FIXTURES = {"diagnoser", "browser"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` on every test that loads the embedding model or drives Chromium, besides those marked."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def diagnoser() -> Diagnoser:
    """The bundled corpus with rules and the real embedding model, loaded once per test run."""
    from indexer import load_diagnoser

    diagnoser = load_diagnoser(CORPUS)
    # Built now, under the session's cache: the retriever is lazy, and its first use inside a test or
    # fixture that points $VERL_DOCTOR_CACHE elsewhere would leave the ONNX export and the index there
    # (in a random order on CI, test_prefetch's `exported` then found no export in the session cache).
    assert diagnoser.retriever is not None
    return diagnoser
