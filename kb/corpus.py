"""Load corpus entries from Markdown files with YAML front matter.

Every problem is reported as a :class:`EntryProblem` naming the file and line; a broken entry is
skipped and the rest still load, so one bad file never hides the others.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
import yaml
from pydantic import ValidationError

from kb.cache import cache_dir, prune, read_private, write_atomically
from kb.corpus_files import corpus_digest, iter_entry_files
from kb.entry import BODY_SECTIONS, Entry, FrontMatter

#: Entries are small documents; anything bigger is a mistake or an attack on the YAML parser.
MAX_ENTRY_BYTES = 256 * 1024


@dataclass(frozen=True, order=True)
class EntryProblem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class Corpus:
    root: Path
    entries: list[Entry] = field(default_factory=list)
    problems: list[EntryProblem] = field(default_factory=list)
    _fingerprint: str | None = field(default=None, repr=False, compare=False)

    def by_id(self) -> dict[str, Entry]:
        return {e.id: e for e in self.entries}

    def get(self, entry_id: str) -> Entry | None:
        return self.by_id().get(entry_id)

    @property
    def fingerprint(self) -> str:
        """A hash of every entry's source, for cache keys (index staleness, kb_version)."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            for entry in sorted(self.entries, key=lambda e: e.id):
                digest.update(entry.id.encode())
                digest.update(Path(entry.path).read_bytes() if Path(entry.path).exists() else b"")
            self._fingerprint = digest.hexdigest()[:16]
        return self._fingerprint


class CorpusError(Exception):
    """The corpus as a whole cannot be read (missing or empty directory)."""


_FastLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_aliases(text: str) -> None:
    """Aliases (*name) are never needed in an entry and are how a 'billion laughs' document explodes."""
    for event in yaml.parse(text, Loader=_FastLoader):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.MarkedYAMLError(
                problem="YAML aliases (*name) are not allowed in entries",
                problem_mark=event.start_mark,  # type: ignore[arg-type]
            )


_md: Any = None


def _markdown() -> Any:
    """The Markdown parser, built on first use: a corpus loaded from the cache never needs it."""
    global _md
    if _md is None:
        from markdown_it import MarkdownIt
        from mdit_py_plugins.front_matter import front_matter_plugin

        _md = MarkdownIt("commonmark").use(front_matter_plugin)
    return _md


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Follow a pydantic error location through the YAML node tree to a 0-based line."""
    line = node.start_mark.line if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == part:
                    node, line = value_node, key_node.start_mark.line
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line
        else:
            return line
    return line


def _describe(error: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in error["loc"] if not str(p).endswith("Check"))
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"'{loc}' is required but missing"
    if error["type"] == "extra_forbidden":
        return f"'{loc}' is not a field of an entry (misspelt?)"
    return f"'{loc}': {message}" if loc else message


def _sections(tokens: list[Any], lines: list[str]) -> tuple[dict[str, str], list[tuple[str, int]]]:
    """The level-2 sections of the body: title -> text, and the titles in order with their lines."""
    heads: list[tuple[str, int]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h2" and tok.map:
            heads.append((tokens[i + 1].content.strip(), tok.map[0]))
    sections: dict[str, str] = {}
    for n, (title, start) in enumerate(heads):
        end = heads[n + 1][1] if n + 1 < len(heads) else len(lines)
        sections[title] = "\n".join(lines[start + 1 : end]).strip()
    return sections, heads


def parse_entry(path: Path, display: str | None = None) -> tuple[Entry | None, list[EntryProblem]]:
    """Parse one entry file. Returns the entry (None when broken) and every problem found."""
    name = display or str(path)
    problems: list[EntryProblem] = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, [EntryProblem(name, 0, f"cannot read the file: {exc.strerror or exc}")]
    if len(raw) > MAX_ENTRY_BYTES:
        return None, [EntryProblem(name, 1, f"file is {len(raw)} bytes; an entry may be at most {MAX_ENTRY_BYTES}")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return None, [EntryProblem(name, line, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})")]

    lines = text.splitlines()
    tokens = _markdown().parse(text)
    if not tokens or tokens[0].type != "front_matter":
        return None, [EntryProblem(name, 1, "no YAML front matter: the file must start with a '---' line")]
    fm_token = tokens[0]
    fm_first_line = (fm_token.map[0] if fm_token.map else 0) + 2  # 1-based line of the first YAML line

    node: yaml.Node | None = None
    try:
        _refuse_aliases(fm_token.content)
        data = yaml.load(fm_token.content, Loader=_FastLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = fm_first_line + (mark.line if mark else 0)
        return None, [EntryProblem(name, line, f"front matter is not valid YAML: {exc.problem or exc.context}")]
    except yaml.YAMLError as exc:
        return None, [EntryProblem(name, fm_first_line, f"front matter is not valid YAML: {exc}")]
    if not isinstance(data, dict):
        return None, [EntryProblem(name, fm_first_line, "front matter must be a mapping of fields (id, title, ...)")]

    meta: FrontMatter | None = None
    try:
        meta = FrontMatter.model_validate(data)
    except ValidationError as exc:
        node = yaml.compose(fm_token.content, Loader=_FastLoader)  # only now: line numbers for the messages
        for err in exc.errors():
            rel = _line_of(node, tuple(err["loc"]))
            problems.append(EntryProblem(name, fm_first_line + (rel or 0), _describe(dict(err))))

    sections, heads = _sections(tokens, lines)
    body_line = (fm_token.map[1] if fm_token.map else 0) + 1
    titles = [t for t, _ in heads]
    for wanted in BODY_SECTIONS:
        if wanted not in sections:
            problems.append(EntryProblem(name, body_line, f"body section '## {wanted}' is missing"))
        elif not sections[wanted]:
            line = dict(heads)[wanted] + 1
            problems.append(EntryProblem(name, line, f"body section '## {wanted}' is empty"))
    present = [t for t in titles if t in BODY_SECTIONS]
    if present != [t for t in BODY_SECTIONS if t in present]:  # also catches a repeated section
        problems.append(
            EntryProblem(
                name, body_line, f"body sections must appear once each, in the order: {', '.join(BODY_SECTIONS)}"
            )
        )

    if meta is not None:
        folder = path.parent.name
        if meta.area != folder or path.stem != meta.id:
            node = yaml.compose(fm_token.content, Loader=_FastLoader)
        if meta.area != folder:
            line = fm_first_line + (_line_of(node, ("area",)) or 0)
            problems.append(EntryProblem(name, line, f"area '{meta.area}' does not match the folder '{folder}/'"))
        if path.stem != meta.id:
            line = fm_first_line + (_line_of(node, ("id",)) or 0)
            problems.append(EntryProblem(name, line, f"id '{meta.id}' does not match the file name '{path.name}'"))

    if meta is None or problems:
        return None, problems
    return Entry(meta=meta, sections=sections, path=str(path)), problems


def load_corpus(root: Path, *, use_cache: bool = True) -> Corpus:
    """Load every entry under ``root``. Raises :class:`CorpusError` when there is nothing to load.

    A corpus that loads without problems is kept, parsed, in the cache, keyed on the bytes of every
    entry file and of the code that parses them; loading it again then skips Markdown, YAML and
    validation (most of a cold start).
    """
    if not root.exists():
        raise CorpusError(f"corpus directory {root} does not exist")
    if not root.is_dir():
        raise CorpusError(f"{root} is not a directory")
    files = list(iter_entry_files(root))
    if not files:
        raise CorpusError(f"no entries under {root}: expected Markdown files in area folders like {root}/ray/")
    cached_at = _cache_path(root, files) if use_cache else None
    if cached_at is not None:
        corpus = _read_cached(cached_at, root)
        if corpus is not None:
            return corpus
    corpus = Corpus(root=root)
    for path in files:
        display = os.path.relpath(path)
        entry, problems = parse_entry(path, display)
        corpus.problems.extend(problems)
        if entry is not None:
            corpus.entries.append(entry)
    corpus.problems.sort()
    if cached_at is not None and not corpus.problems:
        _ = corpus.fingerprint
        write_atomically(cached_at, pickle.dumps(corpus, protocol=pickle.HIGHEST_PROTOCOL))
        prune(cached_at.parent, "corpus-*.pickle", keep=8)
    return corpus


#: Bump when the cached form changes in a way the key below cannot see.
_CACHE_FORMAT = b"corpus-cache-1"
_PARSER_SOURCES = ("corpus.py", "entry.py", "versions.py")


def _cache_path(root: Path, files: list[Path]) -> Path | None:
    """The cache file for this exact corpus content and parser code; None when a file cannot be read."""
    here = Path(__file__).resolve().parent
    code = [here / name for name in _PARSER_SOURCES]
    key = corpus_digest(root, files, code, salt=_CACHE_FORMAT + pydantic.VERSION.encode())
    return cache_dir() / f"corpus-{key}.pickle" if key else None


def _read_cached(path: Path, root: Path) -> Corpus | None:
    data = read_private(path)
    if data is None:
        return None
    try:
        corpus = pickle.loads(data)
    except Exception:  # a cache written by other code: rebuild it
        return None
    if not isinstance(corpus, Corpus):
        return None
    corpus.root = root
    return corpus
