"""Streaming, line-aligned reads of raw bytes: plain, gzip and zstd, with bounded memory.

A reader never holds more than one chunk plus one capped line. Every buffer it yields ends with a
newline, so a line-oriented multi-pattern scan never sees half a line. Lines longer than
``MAX_LINE_BYTES`` are cut (the rest of the line is skipped), compressed streams that end early are
read up to where they end, and a file that grows or shrinks while it is read is read up to the size
it had when it was opened.
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Bytes per read. Large enough for the pattern engine to run at full speed, small enough for flat memory.
CHUNK = 8 * 1024 * 1024
#: A line longer than this is cut; nothing a verl failure prints needs more.
MAX_LINE_BYTES = 1024 * 1024
#: Compressed bytes per decompress call: small, because one call can inflate a thousandfold.
RAW_COMPRESSED = 64 * 1024
#: How much of the first buffer is sniffed for binary content.
SNIFF = 8 * 1024


class ByteStream(Protocol):
    """What the reader needs of a file: plain files, ``io.BytesIO`` and pipes all have it."""

    def read(self, n: int = -1, /) -> bytes: ...

    def readinto(self, buffer: memoryview, /) -> int | None: ...


class ReadError(Exception):
    """The file cannot be read at all; the message says why."""


@dataclass
class ReadState:
    """What happened while reading: cut lines, early ends, growth. Filled in as the stream is consumed."""

    bytes_in: int = 0  # bytes read from the file (compressed size for .gz/.zst)
    bytes_out: int = 0  # bytes given to the scanner
    long_lines: int = 0
    partial: str | None = None  # why the file was only partly read
    notes: list[str] = field(default_factory=list)


_CONTROL = bytes((1, 2, 3, 4, 5, 6, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25))
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROL)


def looks_binary(sample: bytes) -> bool:
    if not sample:
        return False
    nul = sample.count(b"\x00")
    if nul > len(sample) // 100:
        return True
    # Mostly non-text control bytes also means binary (UTF-8 multibyte is fine). One pass: delete
    # every other byte and count what is left.
    ctrl = len(sample.translate(None, _NOT_CONTROL))
    return ctrl > len(sample) // 20


class _Source:
    """Raw byte source of decompressed data, read in chunks."""

    def __init__(self, fh: ByteStream, compression: str | None, limit: int | None, state: ReadState) -> None:
        self.fh = fh
        self.compression = compression
        self.limit = limit
        self.state = state
        self._done = False
        self._pending = b""
        self._dec: Any = None
        if compression == "gzip":
            self._dec = zlib.decompressobj(wbits=47)  # gzip or zlib header, auto-detected
        elif compression == "zstd":
            import zstandard

            self._dec = zstandard.ZstdDecompressor().decompressobj()

    def _raw(self, n: int) -> bytes:
        if self.limit is not None:
            n = min(n, self.limit - self.state.bytes_in)
            if n <= 0:
                return b""
        data = self.fh.read(n)
        self.state.bytes_in += len(data)
        return data

    def readinto(self, view: memoryview) -> int:
        """Fill the front of ``view``; returns how many bytes were written (0 at the end)."""
        if self._dec is None:
            if self._done:
                return 0
            n = len(view)
            if self.limit is not None:
                n = min(n, self.limit - self.state.bytes_in)
            got = self.fh.readinto(view[:n]) if n > 0 else 0
            if not got:
                self._done = True
                return 0
            self.state.bytes_in += got
            return got
        if not self._pending and not self._done:
            self._pending = self._read_compressed(len(view))
        if not self._pending:
            return 0
        data = self._pending[: len(view)]  # decompression can overshoot what was asked for
        self._pending = self._pending[len(data) :]
        view[: len(data)] = data
        return len(data)

    def _read_compressed(self, n: int) -> bytes:
        out: list[bytes] = []
        size = 0
        while size < n:
            raw = self._raw(RAW_COMPRESSED)
            if not raw:
                self._finish_compressed()
                break
            try:
                piece = self._dec.decompress(raw)
            except (zlib.error, Exception) as exc:  # zstd raises its own ZstdError
                if size or self.state.bytes_out:
                    self.state.partial = f"corrupt {self.compression} data after {self.state.bytes_in} bytes ({exc})"
                    self._done = True
                    break
                raise ReadError(f"not valid {self.compression} data ({exc})") from None
            if piece:
                out.append(piece)
                size += len(piece)
            if self.compression == "gzip":
                # Concatenated gzip members: start a new decompressor on what is left.
                while self._dec.eof and self._dec.unused_data:
                    rest = self._dec.unused_data
                    self._dec = zlib.decompressobj(wbits=47)
                    more = self._dec.decompress(rest)
                    if more:
                        out.append(more)
                        size += len(more)
        return b"".join(out)

    def _finish_compressed(self) -> None:
        self._done = True
        eof = bool(getattr(self._dec, "eof", True))
        if not eof:
            self.state.partial = (
                f"truncated {self.compression} stream: it ends after {self.state.bytes_in} compressed bytes "
                "without its end marker; scanned what could be decompressed"
            )


Span = tuple[bytes | bytearray, int]


def iter_spans(
    fh: ByteStream,
    *,
    compression: str | None = None,
    limit: int | None = None,
    state: ReadState | None = None,
    chunk: int = CHUNK,
    max_line: int = MAX_LINE_BYTES,
    check_binary: bool = True,
    finish_line: bool = False,
) -> Iterator[Span]:
    """Yield ``(buffer, end)``: ``buffer[:end]`` is the next line-aligned run of content (it ends with
    ``\\n``). The buffer is reused: it is valid only until the next item is asked for, so a consumer
    copies what it keeps. Reading into one buffer spares the allocation, and the page faults, of a
    fresh multi-megabyte object per read, which cost more than the pattern scan itself.

    ``limit`` caps the raw bytes read (the file's size when it was opened); with ``finish_line`` the line
    that crosses the limit is read to its end (segments of one file). Raises :class:`ReadError`
    when the content is binary or not what its compression says.
    """
    state = state if state is not None else ReadState()
    src = _Source(fh, compression, limit, state)
    if limit is not None and compression is None:  # a small file gets a small buffer (it is zero-filled)
        chunk, max_line = max(1, min(chunk, limit)), max(1, min(max_line, limit))
    buf = bytearray(chunk + max_line + 1)
    view = memoryview(buf)
    carry = 0  # bytes of an unfinished line at buf[:carry]
    skipping = False  # inside a line that was cut; drop bytes up to its newline
    first = True
    try:
        while True:
            n = src.readinto(view[carry : carry + chunk])
            if not n:
                break
            if first:
                first = False
                if check_binary and looks_binary(bytes(view[carry : carry + min(n, SNIFF)])):
                    raise ReadError("binary content (NUL or control bytes), not a log")
            total = carry + n
            begin = 0
            if skipping:
                nl = buf.find(b"\n", 0, total)
                if nl < 0:
                    continue
                begin, skipping = nl + 1, False
            last = buf.rfind(b"\n", begin, total)
            if last < 0:
                if total - begin > max_line:
                    state.long_lines += 1
                    state.bytes_out += max_line + 1
                    yield bytes(view[begin : begin + max_line]) + b"\n", max_line + 1
                    carry, skipping = 0, True
                else:
                    carry = _to_front(buf, view, begin, total)
                continue
            if begin:  # only after a cut line: rare, so a copy is fine
                state.bytes_out += last + 1 - begin
                yield bytes(view[begin : last + 1]), last + 1 - begin
            else:
                state.bytes_out += last + 1
                yield buf, last + 1
            if total - (last + 1) > max_line:
                state.long_lines += 1
                state.bytes_out += max_line + 1
                yield bytes(view[last + 1 : last + 1 + max_line]) + b"\n", max_line + 1
                carry, skipping = 0, True
            else:
                carry = _to_front(buf, view, last + 1, total)
        rest = bytes(view[:carry])
        if finish_line and (carry or skipping):
            more = _rest_of_line(fh, max(0, max_line - carry))
            state.bytes_in += len(more)
            rest = b"" if skipping else rest + more
        if rest:
            if not rest.endswith(b"\n"):
                rest += b"\n"
            state.bytes_out += len(rest)
            yield rest, len(rest)
    finally:
        view.release()
    if state.long_lines:
        state.notes.append(
            f"{state.long_lines} line(s) longer than {max_line // 1024} KB were cut at {max_line // 1024} KB"
        )


def _to_front(buf: bytearray, view: memoryview, start: int, end: int) -> int:
    """Move ``buf[start:end]`` (an unfinished line) to the front; returns its length."""
    size = end - start
    if size and start:
        buf[:size] = bytes(view[start:end])  # a line, not a chunk: the temporary copy is small
    return size


def _rest_of_line(fh: ByteStream, cap: int) -> bytes:
    """Read on to the next newline, keeping at most ``cap`` bytes of it."""
    out = bytearray()
    while True:
        piece = fh.read(64 * 1024)
        if not piece:
            return bytes(out)
        nl = piece.find(b"\n")
        if len(out) < cap:
            out += piece[: min(cap - len(out), nl + 1 if nl >= 0 else len(piece))]
        if nl >= 0:
            return bytes(out)


def open_for_scan(path: str, start: int = 0) -> tuple[io.FileIO, int]:
    """Open ``path`` for reading (no blocking on FIFOs), seek to ``start``; returns (file, size at open)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        import stat as _stat

        if not _stat.S_ISREG(st.st_mode):
            raise ReadError("not a regular file")
        fh = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    if start:
        fh.seek(start)
    return fh, st.st_size
