"""Extract, per verl release, the values verl accepts for the config keys it validates (kb/data/verl_values.json).

Read from verl's source at each release tag of a git clone (bare is fine):

    python scripts/extract_verl_values.py --repo /path/to/verl.git

Each rule records the accepted values, the file and line at the tag where verl checks them (the raise or the
assert), when verl fails (start-up or the first training step), and the error it raises. 0.9.1 has no git tag:
its rules are those of v0.9.0 and say so. Do not edit the JSON by hand; rerun the script.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from kb.versions import KNOWN_RELEASES

RELEASES = list(KNOWN_RELEASES)
TAG_FOR = {r: f"v{r}" for r in RELEASES} | {"0.9.1": "v0.9.0"}
OUT = Path(__file__).resolve().parent.parent / "kb" / "data" / "verl_values.json"


class Source:
    def __init__(self, repo: str, tag: str) -> None:
        self.repo, self.tag = repo, tag

    def text(self, path: str) -> str | None:
        proc = subprocess.run(
            ["git", "-C", self.repo, "show", f"{self.tag}:{path}"], capture_output=True, text=True, check=False
        )
        return proc.stdout if proc.returncode == 0 else None

    def lines(self, path: str) -> list[str]:
        text = self.text(path)
        return text.splitlines() if text is not None else []


def _line_of(lines: list[str], pattern: str, start: int = 0) -> int | None:
    rx = re.compile(pattern)
    for i in range(start, len(lines)):
        if rx.search(lines[i]):
            return i + 1
    return None


def _block(lines: list[str], start: int) -> list[str]:
    """The lines of the def/class that starts at 1-based ``start``, up to the next line at its indentation."""
    head = lines[start - 1]
    indent = len(head) - len(head.lstrip())
    out = [head]
    for line in lines[start:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent and not line.lstrip().startswith((")", "]")):
            break
        out.append(line)
    return out


def _strings(text: str) -> list[str]:
    return re.findall(r"[\"']([^\"']+)[\"']", text)


def logger(src: Source) -> dict[str, Any] | None:
    path = "verl/utils/tracking.py"
    lines = src.lines(path)
    start = _line_of(lines, r"supported_backend = \[")
    check = _line_of(lines, r"assert backend in self\.supported_backend")
    if start is None or check is None:
        return None
    text = ""
    for line in lines[start - 1 :]:
        text += line.split("#", 1)[0]
        if "]" in line:
            break
    values = _strings(text.split("=", 1)[1])
    extra = ["tracking"] if _line_of(lines, r'backend == "tracking"') else []
    return {
        "values": values + extra,
        "deprecated": {"tracking": "deprecated: verl warns and logs to W&B as for wandb; write wandb"} if extra else {},
        "source": f"{path}:{check}",
        "defined_at": f"{path}:{start}",
        "when": "start-up",
        "error": "AssertionError: {value} is not supported",
        "list": True,
    }


def loss_agg_mode(src: Source) -> dict[str, Any] | None:
    path = "verl/workers/config/actor.py"
    lines = src.lines(path)
    start = _line_of(lines, r"valid_loss_agg_modes = \[")
    if start is not None:
        check = _line_of(lines, r"Invalid loss_agg_mode", start)
        text = ""
        for line in lines[start - 1 :]:
            text += line
            if "]" in line:
                break
        return {
            "values": _strings(text.split("=", 1)[1]),
            "source": f"{path}:{check}",
            "defined_at": f"{path}:{start}",
            "when": "start-up",
            "error": "ValueError: Invalid loss_agg_mode: {value}",
        }
    path = "verl/trainer/ppo/core_algos.py"
    lines = src.lines(path)
    start = _line_of(lines, r"^def agg_loss\(")
    if start is None:
        return None
    body = _block(lines, start)
    values = []
    for line in body:
        if re.search(r"loss_agg_mode (==|in)", line):
            values += [v for v in _strings(line) if v not in values]
    check = _line_of(lines, r"Invalid loss_agg_mode", start)
    return {
        "values": values,
        "source": f"{path}:{check}",
        "defined_at": f"{path}:{start}",
        "when": "first training step",
        "error": "ValueError: Invalid loss_agg_mode: {value}",
    }


def adv_estimator(src: Source) -> dict[str, Any] | None:
    for path in ("verl/trainer/ppo/core_algos.py", "verl/trainer/ppo/ray_trainer.py"):
        lines = src.lines(path)
        start = _line_of(lines, r"^class AdvantageEstimator\(")
        if start is not None:
            break
    else:
        return None
    values = [m.group(1) for line in _block(lines, start) if (m := re.match(r'\s+[A-Z_]+ = "([^"]+)"', line))]
    algos = "verl/trainer/ppo/core_algos.py"
    algo_lines = src.lines(algos)
    check = _line_of(algo_lines, r"Unknown advantage estimator")
    if check is not None:
        registered = []
        names = {
            m.group(1): m.group(2)
            for line in _block(lines, start)
            if (m := re.match(r"\s+([A-Z_]+) = \"([^\"]+)\"", line))
        }
        for i, line in enumerate(algo_lines):
            if line.startswith("@register_adv_est(") and line.rstrip().endswith("("):
                line = "@register_adv_est(" + algo_lines[i + 1].strip()  # the decorator spans lines
            m = re.match(r"@register_adv_est\((?:AdvantageEstimator\.([A-Z_]+)|\"([^\"]+)\")", line)
            if m:
                name = names.get(m.group(1), "") if m.group(1) else m.group(2)
                if name and name not in registered:
                    registered.append(name)
        return {
            "values": registered or values,
            "source": f"{algos}:{check}",
            "defined_at": f"{path}:{start}",
            "when": "first training step",
            "error": "ValueError: Unknown advantage estimator simply: {value}",
        }
    trainer = "verl/trainer/ppo/ray_trainer.py"
    tlines = src.lines(trainer)
    init = _line_of(tlines, r"self\.use_critic = False")
    check = _line_of(tlines, r"raise NotImplementedError", init or 0)
    return {
        "values": values,
        "source": f"{trainer}:{check}",
        "defined_at": f"{path}:{start}",
        "when": "start-up",
        "error": "NotImplementedError (RayPPOTrainer.__init__ knows no such estimator)",
    }


def kl_penalty(src: Source) -> dict[str, Any] | None:
    path = "verl/trainer/ppo/core_algos.py"
    lines = src.lines(path)
    start = _line_of(lines, r"^def kl_penalty_forward\(") or _line_of(lines, r"^def kl_penalty\(")
    if start is None:
        return None
    body = _block(lines, start)
    values: list[str] = []
    for line in body:
        if re.search(r"if kl_penalty (==|in) ", line):
            values += [v for v in _strings(line) if v not in values and v != "full"]
    offset = start + len(body) - 1
    check = max(i + 1 for i in range(start - 1, offset) if "raise NotImplementedError" in lines[i])
    plus = any('kl_penalty.endswith("+")' in line for line in lines)
    return {
        "values": values,
        "suffix_plus": plus,
        "rejected": {"full": "raises NotImplementedError: verl has no full-vocabulary KL"},
        "source": f"{path}:{check}",
        "defined_at": f"{path}:{start}",
        "when": "first training step",
        "error": "NotImplementedError (kl_penalty)",
    }


def policy_loss(src: Source) -> dict[str, Any] | None:
    path = "verl/trainer/ppo/core_algos.py"
    lines = src.lines(path)
    values = [m.group(1) for line in lines if (m := re.match(r'@register_policy_loss\("([^"]+)"\)', line))]
    if not values:
        return None
    check = _line_of(lines, r"Unsupported loss mode")
    if "vanilla" not in values:  # <= 0.5: dp_actor computes 'vanilla' itself, the registry holds the others
        values.insert(0, "vanilla")
    return {
        "values": values,
        "source": f"{path}:{check}",
        "defined_at": f"{path}:{_line_of(lines, r'^def get_policy_loss_fn')}",
        "when": "first training step",
        "error": "ValueError: Unsupported loss mode: {value}",
    }


def rollout_name(src: Source) -> dict[str, Any] | None:
    base = "verl/workers/rollout/base.py"
    lines = src.lines(base)
    start = _line_of(lines, r"^_ROLLOUT_REGISTRY = \{")
    if start is not None:
        values: list[str] = []
        for line in _block(lines, start):
            m = re.match(r'\s+\("([^"]+)", "[^"]+"\)', line)
            if m and m.group(1) not in values:
                values.append(m.group(1))
        check = _line_of(lines, r"assert \(rollout_name, mode\) in _ROLLOUT_REGISTRY")
        return {
            "values": values,
            "source": f"{base}:{check}",
            "defined_at": f"{base}:{start}",
            "when": "start-up",
            "error": "AssertionError: Rollout {value} with mode {mode} not found",
        }
    path = "verl/workers/fsdp_workers.py"
    lines = src.lines(path)
    start = _line_of(lines, r"def _build_rollout\(")
    if start is None:
        return None
    values = []
    for line in _block(lines, start):
        m = re.search(r"(?:if|elif) rollout_name (?:==|in) (.*):", line)
        for name in _strings(m.group(1)) if m else []:
            if name not in values:
                values.append(name)
    check = _line_of(lines, r"Rollout name: .* is not supported", start)
    return {
        "values": values,
        "source": f"{path}:{check}",
        "defined_at": f"{path}:{start}",
        "when": "start-up",
        "error": "NotImplementedError: Rollout name: {value} is not supported",
    }


def rollout_mode(src: Source) -> dict[str, Any] | None:
    path = "verl/workers/config/rollout.py"
    lines = src.lines(path)
    check = _line_of(lines, r"Rollout mode 'sync' has been removed")
    if check is None:
        return None
    return {
        "values": ["async"],
        "rejected": {"sync": "removed: verl runs the rollout as async servers only"},
        "warn_others": True,
        "source": f"{path}:{check - 1}",
        "defined_at": f"{path}:{_line_of(lines, r'if self.mode == .sync.:')}",
        "when": "start-up",
        "error": (
            "ValueError: Rollout mode 'sync' has been removed. Please set `actor_rollout_ref.rollout.mode=async` "
            "or remove the mode setting entirely."
        ),
    }


RULES = {
    "trainer.logger": logger,
    "actor_rollout_ref.actor.loss_agg_mode": loss_agg_mode,
    "algorithm.adv_estimator": adv_estimator,
    "algorithm.kl_penalty": kl_penalty,
    "actor_rollout_ref.actor.kl_loss_type": kl_penalty,
    "actor_rollout_ref.actor.policy_loss.loss_mode": policy_loss,
    "actor_rollout_ref.rollout.name": rollout_name,
    "actor_rollout_ref.rollout.mode": rollout_mode,
}


def _raise_line(src: Source, source: str) -> str:
    """``path:line`` moved up to the ``raise``/``assert`` statement when it names a message line inside one."""
    path, _, line = source.rpartition(":")
    lines = src.lines(path)
    no = int(line)
    for i in range(no, max(no - 4, 0), -1):
        if re.search(r"\b(raise|assert)\b", lines[i - 1]):
            return f"{path}:{i}"
    return source


def extract(repo: str) -> dict[str, Any]:
    rules: dict[str, dict[str, Any]] = {}
    for key, fn in RULES.items():
        per: dict[str, Any] = {}
        for release in RELEASES:
            tag = TAG_FOR[release]
            found = fn(Source(repo, tag))
            if found is None:
                continue
            found["tag"] = tag
            found["source"] = _raise_line(Source(repo, tag), found["source"])
            if tag != f"v{release}":
                found["note"] = f"verl {release} has no git tag; the rule is that of {tag}"
            per[release] = found
        rules[key] = per
    return {
        "extracted_by": "scripts/extract_verl_values.py",
        "repository": "https://github.com/verl-project/verl",
        "rules": rules,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default="/work/.mirror/verl-project+verl/repo", help="a git clone of verl")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    data = extract(args.repo)
    Path(args.out).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
