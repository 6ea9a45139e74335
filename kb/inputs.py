"""Reading what users give us, safely: bounded memory and time whatever the size or encoding."""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from typing import BinaryIO

#: A paste is diagnosed from its head and tail; a whole job's logs belong to `verl-doctor scan`.
MAX_INPUT_BYTES = 4 * 1024 * 1024
HEAD_BYTES = 512 * 1024
#: Most bytes read from something that is not a regular file (a pipe, a device, /proc): ``/dev/zero`` never ends.
MAX_STREAM_BYTES = 256 * 1024 * 1024


class InputError(ValueError):
    """Input that cannot be diagnosed, with a sentence saying why."""


@dataclass
class Input:
    text: str
    notes: list[str] = field(default_factory=list)


def read_input(stream: BinaryIO, name: str = "input") -> Input:
    """Read at most the head and the tail of ``stream``; refuse binary data and empty input."""
    limit = _stream_limit(stream)
    head = stream.read(MAX_INPUT_BYTES + 1)
    notes: list[str] = []
    if len(head) > MAX_INPUT_BYTES:
        # Keep the start (command line, versions) and the end (where the failure usually is).
        tail = bytearray(head[-(MAX_INPUT_BYTES - HEAD_BYTES) :])
        total = len(head)
        while True:
            if limit is not None and total >= limit:
                notes.append(f"{name} is not a regular file; stopped reading after {limit // (1 << 20)} MB")
                break
            chunk = stream.read(1 << 20)
            if not chunk:
                break
            total += len(chunk)
            tail += chunk
            del tail[: max(0, len(tail) - (MAX_INPUT_BYTES - HEAD_BYTES))]
        data = head[:HEAD_BYTES] + b"\n" + bytes(tail)
        notes.append(
            f"{name} is {total / 1e6:.1f} MB; diagnosed its first {HEAD_BYTES // 1024} KB and last "
            f"{(MAX_INPUT_BYTES - HEAD_BYTES) // 1024} KB (use `verl-doctor scan` for whole job logs)"
        )
    else:
        data = head
    return decode(data, name, notes)


def _stream_limit(stream: BinaryIO) -> int | None:
    """None for a regular file with a size (it ends); MAX_STREAM_BYTES for a pipe, a device or a /proc file."""
    try:
        st = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None  # an in-memory buffer: already bounded
    if stat.S_ISREG(st.st_mode) and st.st_size > 0:
        return None
    return MAX_STREAM_BYTES


def decode(data: bytes, name: str = "input", notes: list[str] | None = None) -> Input:
    notes = list(notes or [])
    if not data.strip():
        raise InputError(f"{name} is empty: paste a traceback, a log excerpt or a question")
    sample = data[:65536]
    if b"\x00" in sample and sample.count(b"\x00") > len(sample) // 100:
        raise InputError(f"{name} looks binary (NUL bytes), not a log or traceback")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        notes.append(f"{name} is not valid UTF-8; undecodable bytes were replaced")
    longest = max((len(line) for line in text.splitlines()), default=0)
    if longest > 8192:
        notes.append(f"{name} has a line of {longest} characters; long lines are cut at 8192 for matching")
    return Input(text=text, notes=notes)
