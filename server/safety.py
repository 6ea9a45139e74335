"""Confining scans to the configured roots and unpacking uploaded job archives safely."""

from __future__ import annotations

import tarfile
from pathlib import Path, PurePosixPath


class Refused(Exception):
    """The request asks for something the server must not do; ``status`` is the HTTP code to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def confine(requested: str, roots: list[Path]) -> Path:
    """The real path of ``requested`` when it lies inside one of ``roots`` (symlinks resolved), else Refused."""
    if not roots:
        raise Refused(403, "this server has no --scan-root; path scans are disabled (upload a .tar.gz instead)")
    if not requested or "\x00" in requested:
        raise Refused(400, "empty or invalid path")
    if ".." in PurePosixPath(requested).parts:
        raise Refused(403, "paths with '..' are refused")
    candidate = Path(requested)
    resolved_roots = [r.resolve() for r in roots]
    bases = [candidate] if candidate.is_absolute() else [r / candidate for r in resolved_roots]
    for base in bases:
        try:
            real = base.resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop
            raise Refused(400, f"cannot resolve {requested}: {exc}") from None
        if any(real == r or real.is_relative_to(r) for r in resolved_roots):
            return real
        raise Refused(403, f"{requested} is outside the scan roots")
    raise Refused(404, f"{requested} does not exist inside the scan roots")


def extract_job_archive(archive: Path, dest: Path, max_total: int, max_members: int = 100_000) -> Path:
    """Unpack a .tar.gz (or .tar) of a job directory into ``dest``: regular files and directories only,
    no absolute paths, no '..', no links, and at most ``max_total`` bytes in all."""
    try:
        tar = tarfile.open(archive, mode="r:*")  # noqa: SIM115 - closed by the 'with' below
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise Refused(400, f"not a readable tar.gz archive: {exc}") from None
    total = 0
    with tar:
        try:
            members = []
            for n, member in enumerate(tar):
                if n >= max_members:
                    raise Refused(413, f"archive has more than {max_members} entries")
                name = PurePosixPath(member.name)
                if name.is_absolute() or ".." in name.parts:
                    raise Refused(400, f"archive member {member.name!r} has an absolute or '..' path")
                if member.issym() or member.islnk():
                    raise Refused(400, f"archive member {member.name!r} is a link; links are not accepted")
                if not (member.isfile() or member.isdir()):
                    raise Refused(400, f"archive member {member.name!r} is not a regular file or directory")
                total += member.size
                if total > max_total:
                    raise Refused(413, f"archive unpacks to more than {max_total} bytes")
                members.append(member)
            tar.extractall(dest, members=members, filter="data")
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise Refused(400, f"archive is damaged: {exc}") from None
    return dest
