"""The wheel a user installs carries the corpus and works from it, away from this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import CORPUS

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow  # a wheel build and install


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built and installed (without dependencies) into a bare target directory."""
    out = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)]
    subprocess.run(build, check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("verl_doctor-*.whl")
    target = tmp_path_factory.mktemp("site")
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    with zipfile.ZipFile(wheel) as zf:
        shipped = {n for n in zf.namelist() if n.startswith("kb/bundled_corpus/") and n.endswith(".md")}
    on_disk = {f"kb/bundled_corpus/{p.relative_to(CORPUS)}" for p in CORPUS.rglob("*.md")}
    assert shipped == on_disk
    return target


def test_an_installed_wheel_diagnoses_from_its_bundled_corpus(installed: Path, tmp_path: Path) -> None:
    log = tmp_path / "err.log"
    log.write_text(
        "(TaskRunner pid=7) ray.exceptions.RaySystemError: System error: Unable to register worker with raylet\n"
    )
    env = {**os.environ, "PYTHONPATH": str(installed), "HF_HUB_OFFLINE": "1", "VERL_DOCTOR_CACHE": str(tmp_path)}
    env.pop("VERL_DOCTOR_CORPUS", None)
    code = "import kb.cli, sys; print(kb.cli.__file__, file=sys.stderr); kb.cli.main()"
    out = subprocess.run(
        [sys.executable, "-c", code, "match", "--json", "--no-semantic", str(log)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert out.stderr.startswith(str(installed)), out.stderr  # the installed copy, not this checkout
    assert out.returncode == 0, out.stderr
    assert '"ray-worker-register-raylet"' in out.stdout


def test_the_installed_wheels_corpus_validates_on_its_own(installed: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(installed), "HF_HUB_OFFLINE": "1", "VERL_DOCTOR_CACHE": str(tmp_path)}
    env.pop("VERL_DOCTOR_CORPUS", None)
    out = subprocess.run(
        [sys.executable, "-c", "import kb.cli; kb.cli.main()", "corpus", "validate"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "entries valid (fixtures not checked: no " in out.stdout
