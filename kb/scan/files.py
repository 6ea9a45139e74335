"""Finding and classifying the files a verl job writes (verl-facts §6), symlink-loop-safe.

Each path given to ``scan`` is one job. Its tree is walked once; directories reached twice (a
``session_latest`` symlink, a loop) are entered once, files reached twice (hard links, symlinks) are
read once, and everything that cannot be read is recorded with the reason.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

#: Files the scanner reads as logs.
LOG_KINDS = ("driver", "ray", "hydra_log", "file_logger", "wandb_log", "text")

_BINARY_EXT = {
    ".pt",
    ".pth",
    ".bin",
    ".safetensors",
    ".parquet",
    ".arrow",
    ".npy",
    ".npz",
    ".pkl",
    ".pickle",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".svg",
    ".zip",
    ".tar",
    ".whl",
    ".so",
    ".db",
    ".sqlite",
    ".wandb",
    ".pb",
    ".h5",
    ".ckpt",
    ".onnx",
    ".mp4",
    ".pdf",
    ".distcp",
    ".model",
    ".tiktoken",
    ".xz",
    ".bz2",
    ".7z",
}
_RAY_LOG = re.compile(
    r"^(?:worker-[\w-]+\.(?:out|err)|python-core-(?:worker|driver)-[\w-]+\.log|raylet\.(?:out|err)|"
    r"gcs_server\.(?:out|err)|job-driver-[\w-]+\.log|dashboard[\w-]*\.(?:log|out|err)|monitor\.(?:log|out|err)|"
    r"runtime_env[\w-]*\.log|log_monitor\.(?:log|out|err))$"
)
_DRIVER = re.compile(r"^(?:slurm-[\w%.-]+\.(?:out|err)|.+\.(?:log|out|err))$")
_GENERATIONS = re.compile(r"^\d+\.jsonl$")
_RAY_PID = re.compile(r"^worker-[0-9a-f]+-[0-9a-f]+-(\d+)\.(?:out|err)$")
_RANK_IN_NAME = re.compile(r"(?:^|[_.-])rank[_-]?(\d+)(?:[_.-]|$)", re.IGNORECASE)
_STEP_DIR = re.compile(r"^global_step_(\d+)$")


@dataclass
class JobFile:
    path: Path
    rel: str  # relative to the job root, for reports
    kind: str  # one of LOG_KINDS, or hydra_overrides, wandb_metadata, ckpt_tracker
    compression: str | None  # gzip | zstd | None
    size: int
    rank_hint: int | None = None


@dataclass
class Skipped:
    path: str
    reason: str


@dataclass
class Job:
    root: Path
    files: list[JobFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)  # reason -> count (checkpoints, data, dumps)
    checkpoint_steps: list[int] = field(default_factory=list)

    @property
    def log_files(self) -> list[JobFile]:
        return [f for f in self.files if f.kind in LOG_KINDS]


def _compression(name: str) -> tuple[str, str | None]:
    lower = name.lower()
    if lower.endswith(".gz"):
        return name[:-3], "gzip"
    if lower.endswith(".zst") or lower.endswith(".zstd"):
        return name[: name.rfind(".")], "zstd"
    return name, None


def classify(rel: str) -> tuple[str, str | None, str | None]:
    """(kind, compression, ignore reason) for a path relative to the job root."""
    parts = rel.split("/")
    name, compression = _compression(parts[-1])
    lower = name.lower()
    ext = os.path.splitext(lower)[1]
    if any(_STEP_DIR.match(p) for p in parts[:-1]):
        return "checkpoint", compression, "checkpoint files"
    if name == "latest_checkpointed_iteration.txt":
        return "ckpt_tracker", compression, None
    if ext in _BINARY_EXT or "tfevents" in lower:
        return "binary", compression, "binary data (checkpoints, datasets, trackers)"
    if len(parts) >= 2 and parts[-2] == ".hydra":
        if name == "overrides.yaml":
            return "hydra_overrides", compression, None
        return "hydra_config", compression, "Hydra config (read through overrides.yaml)"
    if name == "wandb-metadata.json":
        return "wandb_metadata", compression, None
    if name == "output.log" and "files" in parts[:-1]:
        return "wandb_log", compression, None
    if _GENERATIONS.match(name):
        return "generations", compression, "rollout/validation generation dumps"
    if ext == ".jsonl":
        return "file_logger", compression, None
    if _RAY_LOG.match(name):
        return "ray", compression, None
    if name == "main_ppo.log" or name.endswith("main_ppo.log"):
        return "hydra_log", compression, None
    if _DRIVER.match(name):
        return "driver", compression, None
    if ext in (".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".py", ".sh", ".md", ".csv", ".html", ".css", ".js"):
        return "other", compression, "configuration or source, not a log"
    return "text", compression, None  # unknown name: read it if it is text


def rank_hint(name: str) -> int | None:
    m = _RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None


def ray_pid(name: str) -> int | None:
    m = _RAY_PID.match(name)
    return int(m.group(1)) if m else None


def discover(root: Path, confine_to: list[Path] | None = None) -> Job:
    """Walk ``root`` (a directory, or a single file) into a :class:`Job`. With ``confine_to`` (the server's
    scan roots), every symlink the walk reaches is resolved and anything it leads to outside those roots is
    skipped (and reported) instead of read."""
    job = Job(root=root)
    roots = [r.resolve() for r in confine_to] if confine_to is not None else None
    seen_files: set[tuple[int, int]] = set()
    seen_dirs: set[tuple[int, int]] = set()
    try:
        st = root.stat()
    except OSError as exc:
        job.skipped.append(Skipped(str(root), _why(exc)))
        return job
    if not stat.S_ISDIR(st.st_mode):
        _add_file(job, root, root.name, seen_files)
        return job
    seen_dirs.add((st.st_dev, st.st_ino))
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        directory, rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            job.skipped.append(Skipped(rel_dir or str(directory), f"cannot list directory: {_why(exc)}"))
            continue
        subdirs: list[tuple[Path, str]] = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            path = Path(entry.path)
            if roots is not None and entry.is_symlink():
                real = _inside(path, roots)
                if real is None:
                    job.skipped.append(Skipped(rel, OUTSIDE_ROOTS))
                    continue
                path = real  # read what was checked, not the link (which could be swapped later)
            try:
                est = entry.stat(follow_symlinks=True)
            except OSError as exc:
                if entry.is_symlink():
                    reason = "symlink loop" if _is_loop(exc) else f"broken symlink ({_why(exc)})"
                else:
                    reason = _why(exc)
                job.skipped.append(Skipped(rel, reason))
                continue
            if stat.S_ISDIR(est.st_mode):
                key = (est.st_dev, est.st_ino)
                if key in seen_dirs:
                    if entry.is_symlink() and _points_up(path, directory):
                        job.skipped.append(Skipped(rel, "symlink loop (points to a directory already being walked)"))
                    continue
                seen_dirs.add(key)
                m = _STEP_DIR.match(entry.name)
                if m:
                    job.checkpoint_steps.append(int(m.group(1)))
                    job.ignored["checkpoint files"] = job.ignored.get("checkpoint files", 0) + 1
                    continue  # checkpoint shards are binary; the layout is all we need
                subdirs.append((path, rel))
                continue
            _add_file(job, path, rel, seen_files, est)
        stack.extend(reversed(subdirs))
    job.checkpoint_steps.sort()
    return job


def _add_file(job: Job, path: Path, rel: str, seen: set[tuple[int, int]], st: os.stat_result | None = None) -> None:
    try:
        st = st or path.stat()
    except OSError as exc:
        job.skipped.append(Skipped(rel, _why(exc)))
        return
    if not stat.S_ISREG(st.st_mode):
        what = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
        job.skipped.append(Skipped(rel, f"not a regular file ({what})"))
        return
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return  # the same file through another path (session_latest, hard link)
    seen.add(key)
    kind, compression, ignore = classify(rel)
    if ignore is not None:
        job.ignored[ignore] = job.ignored.get(ignore, 0) + 1
        return
    if st.st_size == 0:
        job.ignored["empty files"] = job.ignored.get("empty files", 0) + 1
        return
    job.files.append(JobFile(path, rel, kind, compression, st.st_size, rank_hint(path.name)))


OUTSIDE_ROOTS = "symlink to a path outside the scan roots (not read)"


def _inside(path: Path, roots: list[Path]) -> Path | None:
    """The real path of ``path`` when it lies inside one of ``roots`` (already resolved), else None; ``path``
    itself when it does not resolve (a loop, a broken link: the walk reports those as such)."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return path
    return real if any(real == r or real.is_relative_to(r) for r in roots) else None


def _is_loop(exc: OSError) -> bool:
    import errno

    return exc.errno == errno.ELOOP


def _points_up(path: Path, directory: Path) -> bool:
    try:
        target = path.resolve()
        return directory.resolve().is_relative_to(target)
    except (OSError, RuntimeError):
        return True


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)
