"""Load test of the HTTP API on loopback: N concurrent clients for a fixed time, p50/p99 and errors.

Starts `verl-doctor serve` itself on a free port (real model unless --no-semantic), then runs
32 clients for 60 s by default, mixing the calls people make: diagnose a real verl failure, diagnose a
question, search the FAQ, fetch an entry. Traffic goes to 127.0.0.1 only and the run stops by itself.

Usage: .venv/bin/python bench/load.py [--clients 32] [--seconds 60] [--no-semantic]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
FAILURE = (REPO / "tests" / "eval" / "verl_runs" / "hydra_ray_init_old_key" / "output.log").read_text()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def requests_mix() -> list[tuple[str, str, dict[str, object] | None]]:
    return [
        ("POST", "/v1/diagnose", {"input": FAILURE}),
        ("POST", "/v1/diagnose", {"input": "grad_norm keeps going up, why?"}),
        ("GET", "/v1/search?q=ray+workers+cannot+register", None),
        ("GET", "/v1/entries/ray-worker-register-raylet", None),
    ]


async def client(base: str, until: float, latencies: list[float], errors: list[str]) -> None:
    mix = requests_mix()
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        while time.monotonic() < until:
            method, path, body = random.choice(mix)
            start = time.perf_counter()
            try:
                r = await http.request(method, path, json=body)
                if r.status_code != 200:
                    errors.append(f"{path}: {r.status_code}")
            except httpx.HTTPError as exc:
                errors.append(f"{path}: {type(exc).__name__}")
            latencies.append(time.perf_counter() - start)


async def run(base: str, clients: int, seconds: float) -> tuple[list[float], list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    until = time.monotonic() + seconds
    await asyncio.gather(*(client(base, until, latencies, errors) for _ in range(clients)))
    return latencies, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--no-semantic", action="store_true")
    args = parser.parse_args()
    port = free_port()
    cmd = [str(Path(sys.executable).parent / "verl-doctor"), "serve", "--port", str(port)]
    if args.no_semantic:
        cmd.append("--no-semantic")
    server = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            sys.exit("server did not start")
        latencies, errors = asyncio.run(run(base, args.clients, args.seconds))
    finally:
        server.terminate()
        server.wait(timeout=30)
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(
        f"{args.clients} clients x {args.seconds:.0f} s: {len(latencies)} requests, "
        f"{len(latencies) / args.seconds:.1f} req/s, "
        f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, errors {len(errors)}"
    )
    if errors:
        print("first errors:", errors[:5])
        sys.exit(1)


if __name__ == "__main__":
    main()
