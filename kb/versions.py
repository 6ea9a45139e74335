"""verl releases and version ranges.

The releases listed here are the ones whose trainer config key sets ship in ``kb/data/verl_keys``;
version ranges in entries are PEP 440 specifiers evaluated against them.
"""

from __future__ import annotations

from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

#: Releases with a key set on disk, oldest first.
KNOWN_RELEASES: tuple[str, ...] = (
    "0.4.0",
    "0.4.1",
    "0.5.0",
    "0.6.0",
    "0.6.1",
    "0.7.0",
    "0.7.1",
    "0.8.0",
    "0.9.0",
    "0.9.1",
)

LATEST_RELEASE = KNOWN_RELEASES[-1]
#: The span of known releases, as messages name it ("0.4.0 to 0.9.1").
KNOWN_SPAN = f"{KNOWN_RELEASES[0]} to {LATEST_RELEASE}"


class VersionError(ValueError):
    """A version or specifier string that cannot be parsed."""


@lru_cache(maxsize=512)
def parse_spec(spec: str) -> SpecifierSet:
    try:
        return SpecifierSet(spec.strip())
    except InvalidSpecifier as exc:
        raise VersionError(f"{spec!r} is not a version range (write e.g. '>=0.6' or '>=0.4,<0.6')") from exc


@lru_cache(maxsize=512)
def parse_version(text: str) -> Version:
    try:
        return Version(text.strip())
    except InvalidVersion as exc:
        raise VersionError(f"{text!r} is not a version number") from exc


def in_range(version: str, spec: str) -> bool:
    """True when ``version`` satisfies ``spec``; pre-releases (``0.10.0.dev``) count as their release."""
    return parse_spec(spec).contains(parse_version(version), prereleases=True)


def releases_in(spec: str) -> list[str]:
    """The known releases a range covers."""
    specifier = parse_spec(spec)
    return [r for r in KNOWN_RELEASES if specifier.contains(Version(r))]


def nearest_release(version: str) -> str:
    """The newest known release not newer than ``version`` (the oldest one when it predates them all).

    A user on 0.9.2 or on a 0.10 dev build gets the 0.9.1 key set, the closest config we know.
    """
    v = parse_version(version)
    candidates = [r for r in KNOWN_RELEASES if Version(r) <= Version(v.base_version)]
    return candidates[-1] if candidates else KNOWN_RELEASES[0]
