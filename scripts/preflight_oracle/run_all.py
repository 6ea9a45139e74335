"""Regenerate the preflight oracle fixtures: one verl venv per release, verl's own validation in each.

usage: python3 scripts/preflight_oracle/run_all.py [--releases 0.9.1 0.4.0 ...] [--venv-root DIR]
                                                   [--install] [--jobs N] [--out-dir DIR]

--install creates a missing venv the way the fixtures' README records (torch 2.13.0 CPU first, then
verl==V and the per-release pins/extras below); without it a missing venv is an error. Runs with
plain python3; verl is only ever imported inside the release venvs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RELEASES = ("0.4.0", "0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1")

# What each release needs beyond `pip install verl==V` for its trainer modules to import on this
# CPU machine (found by running; see the README). transformers<5: releases before 0.9.0 predate
# transformers 5 (0.9.0 is the first to pin >=5.5.3). pyarrow<21: releases that pin numpy<2 get a
# pyarrow that needs numpy 2 otherwise. setuptools<70: 0.4.x import pkg_resources.
# fastapi ... msgspec: modules 0.4.x import on the trainer path that its wheel does not declare.
EXTRA: dict[str, list[str]] = {
    "0.4.0": ["transformers<5", "setuptools<70", "fastapi", "uvicorn", "cachetools", "openai", "msgspec"],
    "0.4.1": ["transformers<5", "setuptools<70", "fastapi", "uvicorn", "cachetools", "openai", "msgspec"],
    "0.5.0": ["transformers<5", "pyarrow>=19,<21"],
    "0.6.0": ["transformers<5", "pyarrow>=19,<21"],
    "0.6.1": ["transformers<5", "pyarrow>=19,<21"],
    "0.7.0": ["transformers<5", "pyarrow>=19,<21"],
    "0.7.1": ["transformers<5", "pyarrow>=19,<21"],
    "0.8.0": ["transformers<5", "pyarrow>=19,<21"],
    "0.9.0": [],
    "0.9.1": [],
}


def install(venv: str, release: str) -> None:
    py = os.path.join(venv, "bin", "python")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    # the CPU torch first, so that verl's dependency on torch is already met and nothing pulls a CUDA build
    subprocess.run([py, "-m", "pip", "install", "torch==2.13.0"], check=True)
    subprocess.run([py, "-m", "pip", "install", f"verl=={release}", *EXTRA[release]], check=True)
    out = subprocess.run([py, "-m", "pip", "list"], check=True, capture_output=True, text=True).stdout
    if "nvidia-" in out or "+cpu" not in out:
        raise SystemExit(f"{venv}: a CUDA torch or nvidia-* package got in; remove the venv and check the pins")


def main() -> int:
    ap = argparse.ArgumentParser(description="regenerate tests/fixtures/preflight/verl-<V>.jsonl")
    ap.add_argument("--releases", nargs="+", default=list(RELEASES), choices=RELEASES)
    ap.add_argument("--venv-root", default="/work/verl-venvs", help="DIR/<release> is that release's venv")
    ap.add_argument("--out-dir", default=os.path.join(REPO, "tests", "fixtures", "preflight"))
    ap.add_argument("--install", action="store_true", help="create missing venvs")
    ap.add_argument("--jobs", type=int, default=1, help="releases run at once")
    args = ap.parse_args()

    todo = []
    for rel in args.releases:
        venv = os.path.join(args.venv_root, rel)
        py = os.path.join(venv, "bin", "python")
        if not os.path.exists(py):
            if not args.install:
                print(f"no venv at {venv} (use --install)", file=sys.stderr)
                return 2
            install(venv, rel)
        todo.append((rel, py))
    os.makedirs(args.out_dir, exist_ok=True)
    runner = os.path.join(HERE, "run_release.py")
    rc = 0
    running: list[tuple[str, subprocess.Popen[bytes]]] = []
    while todo or running:
        while todo and len(running) < max(1, args.jobs):
            rel, py = todo.pop(0)
            out = os.path.join(args.out_dir, f"verl-{rel}.jsonl")
            running.append((rel, subprocess.Popen([py, runner, "--out", out])))
        rel, proc = running.pop(0)
        if proc.wait() != 0:
            print(f"verl {rel}: runner exited {proc.returncode}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
