"""Permalinks of a diagnosis: the pasted text itself, carried in the URL's fragment (``/#diagnose=...``).

No server state: opening the link puts the text back in the paste box and diagnoses it again (static/app.js
decodes it; this module writes the same format for the page that the plain, JavaScript-off form returns).
The fragment is never sent to a server, so the paste stays out of access logs and proxies. Format: ``z.``
and the base64url (unpadded) of the UTF-8 text compressed with raw DEFLATE; app.js also reads ``u.`` (the
text uncompressed), which it writes where the browser has no CompressionStream.
"""

from __future__ import annotations

import base64
import zlib

#: The fragment key, and the longest payload written or read, in characters. Browsers take URLs of a few
#: MB, but chat tools, issue trackers and mail clients cut or refuse them long before that; a Ray
#: traceback of a few hundred lines compresses to well under this. app.js holds the same number.
KEY = "diagnose"
MAX_PERMALINK = 32_000


def encode(text: str) -> str | None:
    """The fragment payload for ``text`` (``z.<base64url>``), or None when it would be longer than
    :data:`MAX_PERMALINK`."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw = packer.compress(text.encode("utf-8")) + packer.flush()
    payload = "z." + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    return payload if len(payload) <= MAX_PERMALINK else None


def href(root: str, text: str) -> str | None:
    """The link to the FAQ page that diagnoses ``text`` again, or None when the text is too long for one."""
    payload = encode(text)
    return f"{root}/#{KEY}={payload}" if payload is not None else None
