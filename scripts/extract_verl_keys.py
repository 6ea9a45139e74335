"""Extract the dotted config key set of each verl release's PPO trainer config.

For every requested verl version this script fetches the wheel from PyPI with
``python -m pip download --no-deps --no-build-isolation verl==V -d DIR``,
opens it with :mod:`zipfile` (nothing is unpacked to disk) and reads the PPO
trainer config:

* ``verl/trainer/config/_generated_ppo_trainer.yaml`` when the wheel ships it
  (verl 0.5.0 and later), otherwise the monolithic
  ``verl/trainer/config/ppo_trainer.yaml`` (verl 0.4.x);
* additionally the Megatron trainer config: ``_generated_ppo_megatron_trainer.yaml``
  when the wheel ships it (0.5.0 and later), otherwise the monolithic
  ``ppo_megatron_trainer.yaml`` (0.4.x).

Each YAML file is flattened into dotted keys. Every node gets a ``kind``:
``int``, ``float``, ``bool``, ``str``, ``null``, ``list``, ``map`` (non-empty
dict), ``open_map`` (empty dict ``{}``: sub-keys need Hydra's ``+key=``),
``interp`` (string containing ``${``) or ``missing`` (the string ``???``).
Scalar leaves also carry their ``default`` (strings cut to 120 characters).
A top-level Hydra ``defaults:`` list and any top-level ``hydra:`` section are
skipped.

Output, one JSON file per release and config::

    <out>/ppo_trainer-<V>.json
    <out>/ppo_megatron_trainer-<V>.json   (when the wheel has one of the two)

Usage::

    python scripts/extract_verl_keys.py
    python scripts/extract_verl_keys.py --versions 0.9.1 0.8.0
    python scripts/extract_verl_keys.py --wheel-dir /tmp/verl-wheels

With ``--wheel-dir`` wheels already present in that directory are reused and
missing ones are downloaded into it; without it a temporary directory is used
and removed afterwards. Keep wheel directories outside the repository. Exit
status is 2 when a download fails or a wheel lacks the expected config.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import yaml

from kb.versions import KNOWN_RELEASES

#: The releases verl-doctor knows (kb.versions.KNOWN_RELEASES); a new one is extracted with --versions first.
DEFAULT_VERSIONS: tuple[str, ...] = KNOWN_RELEASES
DEFAULT_OUT = Path("kb/data/verl_keys")
EXTRACTED_BY = "scripts/extract_verl_keys.py"

CONFIG_DIR = "verl/trainer/config/"
PPO_GENERATED = CONFIG_DIR + "_generated_ppo_trainer.yaml"
PPO_MONOLITHIC = CONFIG_DIR + "ppo_trainer.yaml"
MEGATRON_GENERATED = CONFIG_DIR + "_generated_ppo_megatron_trainer.yaml"
MEGATRON_MONOLITHIC = CONFIG_DIR + "ppo_megatron_trainer.yaml"

MAX_STR_DEFAULT = 120
SKIPPED_TOP_LEVEL = frozenset({"defaults", "hydra"})


class ExtractError(Exception):
    """A download or extraction step failed; reported and exits with 2."""


class _OmegaConfLikeLoader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-6`` style numbers as floats.

    PyYAML follows YAML 1.1, where a float needs a dot (``1.0e-6``), so the
    ``lr: 1e-6`` written in verl 0.4.x would load as a string. OmegaConf,
    which verl uses, registers this wider float pattern; mirror it here.
    """


_OmegaConfLikeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:
         [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.VERBOSE,
    ),
    list("-+0123456789."),
)


def classify(value: Any) -> str:
    """Return the kind of one config node."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is a subclass of int
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        if value == "???":
            return "missing"
        if "${" in value:
            return "interp"
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map" if value else "open_map"
    raise ExtractError(f"unexpected YAML node type {type(value).__name__}")


def json_default(value: Any) -> Any:
    """Turn a scalar leaf value into a compact JSON scalar."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no inf/nan
    if isinstance(value, str) and len(value) > MAX_STR_DEFAULT:
        return value[:MAX_STR_DEFAULT]
    return value


def flatten(node: dict[Any, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """Flatten a loaded YAML mapping into ``{dotted_key: {kind, default?}}``."""
    out: dict[str, dict[str, Any]] = {}
    for raw_key, value in node.items():
        key = str(raw_key)
        if not prefix and key in SKIPPED_TOP_LEVEL:
            continue
        dotted = f"{prefix}.{key}" if prefix else key
        kind = classify(value)
        entry: dict[str, Any] = {"kind": kind}
        if kind not in ("map", "open_map", "list"):
            entry["default"] = json_default(value)
        out[dotted] = entry
        if kind == "map":
            out.update(flatten(value, dotted))
    return out


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def find_wheel(wheel_dir: Path, version: str) -> Path | None:
    """Return the verl wheel for ``version`` in ``wheel_dir`` if present."""
    matches = sorted(wheel_dir.glob(f"verl-{version}-*.whl"))
    return matches[0] if matches else None


def download_wheel(version: str, wheel_dir: Path) -> Path:
    """Download the verl wheel for ``version`` into ``wheel_dir``."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-build-isolation",
        f"verl=={version}",
        "-d",
        str(wheel_dir),
    ]
    print(f"downloading verl=={version} ...", file=sys.stderr)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise ExtractError(f"pip download of verl=={version} failed (exit {proc.returncode}):\n{tail}")
    wheel = find_wheel(wheel_dir, version)
    if wheel is None:
        raise ExtractError(
            f"pip download of verl=={version} succeeded but no wheel "
            f"verl-{version}-*.whl is in {wheel_dir} (sdist only?)"
        )
    return wheel


def load_config(wheel: zipfile.ZipFile, member: str) -> dict[Any, Any]:
    data = yaml.load(wheel.read(member), Loader=_OmegaConfLikeLoader)
    if not isinstance(data, dict):
        raise ExtractError(f"{member} does not hold a mapping")
    return data


def extract_version(version: str, wheel_path: Path, out_dir: Path) -> list[Path]:
    """Write the key-set JSON files for one release; return their paths."""
    sha = sha256_of(wheel_path)
    with zipfile.ZipFile(wheel_path) as wheel:
        names = set(wheel.namelist())
        if PPO_GENERATED in names:
            ppo_member = PPO_GENERATED
        elif PPO_MONOLITHIC in names:
            ppo_member = PPO_MONOLITHIC
        else:
            raise ExtractError(f"{wheel_path.name} has no PPO trainer config")
        targets = [("ppo_trainer", ppo_member)]
        if MEGATRON_GENERATED in names:
            targets.append(("ppo_megatron_trainer", MEGATRON_GENERATED))
        elif MEGATRON_MONOLITHIC in names:
            targets.append(("ppo_megatron_trainer", MEGATRON_MONOLITHIC))

        written: list[Path] = []
        for stem, member in targets:
            keys = flatten(load_config(wheel, member))
            doc = {
                "verl_version": version,
                "config": member,
                "wheel": wheel_path.name,
                "wheel_sha256": sha,
                "extracted_by": EXTRACTED_BY,
                "keys": keys,
            }
            path = out_dir / f"{stem}-{version}.json"
            path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
            leaves = sum(1 for e in keys.values() if e["kind"] != "map")
            print(
                f"{path}: {len(keys)} keys, {leaves} leaves ({member})",
                file=sys.stderr,
            )
            written.append(path)
    return written


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--versions",
        nargs="+",
        default=list(DEFAULT_VERSIONS),
        metavar="V",
        help="verl versions to extract (default: all known releases)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output directory (default: {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--wheel-dir",
        type=Path,
        default=None,
        help="reuse wheels already in DIR (missing ones are downloaded there); default: a temporary directory",
    )
    return parser.parse_args(argv)


def run(versions: list[str], out_dir: Path, wheel_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel_dir.mkdir(parents=True, exist_ok=True)
    for version in versions:
        wheel = find_wheel(wheel_dir, version) or download_wheel(version, wheel_dir)
        extract_version(version, wheel, out_dir)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.wheel_dir is not None:
            run(args.versions, args.out, args.wheel_dir)
        else:
            with tempfile.TemporaryDirectory(prefix="verl-wheels-") as tmp:
                run(args.versions, args.out, Path(tmp))
    except (ExtractError, OSError, zipfile.BadZipFile, yaml.YAMLError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
