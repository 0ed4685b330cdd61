"""discover's lexicon kept beside the index (``.khive/discover/lexicon.npz``), so a new process (a CLI call, a
restarted daemon) reads it instead of building it again from every table and column document.

* The file is numpy's ``.npz`` (a zip of arrays, read with ``allow_pickle=False``: it never runs code): the
  postings as flat arrays with their bounds, and the rest of the lexicon as one JSON member.
* Its ``key`` member is the digest of what the index's documents were made from
  (``RetrievalIndex.content_digest``: every indexed file's content hash and every source's version) and of
  the code that builds the lexicon (this package's word rules, ``khive.index.morph`` and its word list). A
  file with another key, another format, or that does not read back whole is ignored; the lexicon is built
  and the file rewritten (atomically: a temporary file renamed over it).
* The file is written after the answer, in a thread of its own; the pack's close hook
  (``khive_runtime_closing``) waits for it, so a closed runtime's lexicon is on disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import weakref
import zipfile
from functools import lru_cache, partial
from importlib import metadata
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import orjson

from khive.atomicfile import replace_with
from khive.gcpause import paused_gc
from khive.index import morph
from khive.project.locate import STATE_DIR
from packs.discover import comment_weights, later, lexicon, text
from packs.discover.lexicon import Lexicon, Posting, Table

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex

FORMAT = 3  # 2: no column_ids member (they are the tables' columns in order); 3: tables say whether they are views
_POSTING_ARRAYS = ("tables", "where", "evidence", "columns")


def path_for(index: RetrievalIndex) -> Path:
    return index.project / STATE_DIR / "discover" / "lexicon.npz"


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """The code a lexicon is built by (and the word list ``morph`` segments with): a change to a word rule
    makes every kept lexicon stale."""
    try:
        words = metadata.version("wordninja")
    except metadata.PackageNotFoundError:
        words = "none"
    digest = hashlib.sha256(f"format {FORMAT}, wordninja {words}".encode())
    for module in (lexicon, comment_weights, text, morph):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()


def key_of(index: RetrievalIndex) -> str:
    return hashlib.sha256(f"{index.content_digest()} {_code_digest()}".encode()).hexdigest()


_CACHE: weakref.WeakKeyDictionary[Any, Lexicon] = weakref.WeakKeyDictionary()


def of(index: RetrievalIndex) -> Lexicon:
    """The lexicon of ``index`` at its current generation: this process's, else the kept one, else a new one."""
    cached = _CACHE.get(index)
    if cached is None or cached.generation != index.generation:
        cached = load_or_build(index)
        _CACHE[index] = cached
    return cached


def load_or_build(index: RetrievalIndex) -> Lexicon:
    """The kept lexicon when it was made from what the index holds now, else a new one (then kept)."""
    with paused_gc():  # a lexicon is a few hundred thousand acyclic objects (see khive.gcpause)
        return _load_or_build(index)


def _load_or_build(index: RetrievalIndex) -> Lexicon:
    generation = index.generation
    key = key_of(index)
    target = path_for(index)
    kept = read(target, key, generation)
    if kept is not None:
        return kept
    built = lexicon.build(index)
    if index.generation == generation == built.generation:  # nothing was indexed meanwhile: it is this key's
        later.write(index.project, target, partial(write, target, key, built))
    return built


# ---- the file ------------------------------------------------------------------------------------------------


def write(target: Path, key: str, lex: Lexicon) -> None:
    """Keep ``lex`` under ``key``; a failure to write is not the search's problem (the next one builds)."""
    arrays: dict[str, np.ndarray[Any, Any]] = {"key": np.frombuffer(key.encode(), dtype=np.uint8)}
    arrays.update(_packed("posting", list(lex.postings.values())))
    arrays.update(_packed("phrase", list(lex.phrases.values())))
    parts = list(lex.name_part_tables.values())
    arrays["parts"] = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    arrays["parts_bounds"] = _bounds(parts)
    arrays["part_counts"] = lex.part_counts
    rest = {
        "format": FORMAT,
        "tables": [[t.doc_id, t.connection, t.db, t.name, t.unit, t.rows, sorted(t.name_keys), sorted(t.name_parts),
                    list(t.columns), sorted(t.borrowed), t.copies, t.view] for t in lex.tables.values()],
        "words": list(lex.postings), "phrases": list(lex.phrases), "parts": list(lex.name_part_tables),
        "tokens": sorted(lex.tokens), "units": list(lex.units.items()),
        "unit_keys": [[unit, sorted(words)] for unit, words in lex.unit_keys.items()], "folded": lex.folded,
        "adjacent": {table: sorted(found) for table, found in lex.adjacent.items()}, "unit_df": lex.unit_df,
        "by_initial": lex.by_initial,
    }
    arrays["rest"] = np.frombuffer(orjson.dumps(rest), dtype=np.uint8)
    def save(handle: BinaryIO) -> None:
        np.savez(handle, **arrays)  # type: ignore[arg-type]  # (the stub fears a member named allow_pickle)

    with contextlib.suppress(OSError):  # a failure to keep it is not the search's problem
        replace_with(target, save)


def read(target: Path, key: str, generation: int) -> Lexicon | None:
    """The lexicon kept in ``target`` under ``key``, or None (missing, another key, damaged)."""
    try:
        with target.open("rb") as handle, np.load(handle, allow_pickle=False) as kept:
            if kept["key"].tobytes().decode() != key:
                return None
            return _unpacked({name: kept[name] for name in kept.files}, generation)
    except (OSError, ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError, zipfile.BadZipFile,
            orjson.JSONDecodeError):
        return None


def _bounds(parts: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    return np.concatenate(([0], np.cumsum([len(p) for p in parts], dtype=np.int64))).astype(np.int64)


def _packed(prefix: str, postings: list[Posting]) -> dict[str, np.ndarray[Any, Any]]:
    out = {f"{prefix}_bounds": _bounds([p.tables for p in postings])}
    for name, dtype in zip(_POSTING_ARRAYS, (np.int32, np.float32, np.float32, np.int32), strict=True):
        values = [getattr(p, name) for p in postings]
        out[f"{prefix}_{name}"] = np.concatenate(values) if values else np.zeros(0, dtype=dtype)
    return out


def _postings(arrays: dict[str, np.ndarray[Any, Any]], prefix: str, count: int) -> list[Posting]:
    bounds = arrays[f"{prefix}_bounds"].tolist()
    if len(bounds) != count + 1:
        raise ValueError(f"{prefix}: {len(bounds) - 1} postings for {count} words")
    flat = [arrays[f"{prefix}_{name}"] for name in _POSTING_ARRAYS]
    if any(len(values) != bounds[-1] for values in flat):
        raise ValueError(f"{prefix}: arrays of different lengths")
    tables, where, evidence, columns = flat
    return [Posting(tables[a:b], where[a:b], evidence[a:b], columns[a:b]) for a, b in pairwise(bounds)]


def _unpacked(arrays: dict[str, np.ndarray[Any, Any]], generation: int) -> Lexicon:
    rest = orjson.loads(arrays["rest"].tobytes())
    if rest.get("format") != FORMAT:
        raise ValueError("another format")
    tables: dict[str, Table] = {}
    for doc_id, connection, db, name, unit, rows, name_keys, name_parts, columns, borrowed, copies, view \
            in rest["tables"]:
        tables[doc_id] = Table(doc_id, connection, db, name, unit, rows, frozenset(name_keys), frozenset(name_parts),
                               {column: column.rpartition(".")[2] for column in columns}, frozenset(borrowed), copies,
                               view)
    words = rest["words"]
    postings = dict(zip(words, _postings(arrays, "posting", len(words)), strict=True))
    phrases = [(a, b) for a, b in rest["phrases"]]
    parts = rest["parts"]
    part_bounds = arrays["parts_bounds"].tolist()
    if len(part_bounds) != len(parts) + 1:
        raise ValueError("parts: bounds and words differ")
    part_tables = arrays["parts"]
    return Lexicon(
        generation=generation, tables=tables, postings=postings, df={w: len(p.tables) for w, p in postings.items()},
        tokens=frozenset(rest["tokens"]), units={int(unit): found for unit, found in rest["units"]},
        unit_keys={int(unit): frozenset(words) for unit, words in rest["unit_keys"]}, folded=rest["folded"],
        adjacent={table: frozenset(found) for table, found in rest["adjacent"].items()}, unit_df=rest["unit_df"],
        table_ids=list(tables), column_ids=lexicon.column_ids(tables),
        name_part_tables={part: part_tables[a:b] for part, (a, b) in zip(parts, pairwise(part_bounds), strict=True)},
        part_counts=arrays["part_counts"],
        connection_of=np.asarray([t.connection for t in tables.values()], dtype=object),
        by_initial={letter: tuple(found) for letter, found in rest["by_initial"].items()},
        phrases=dict(zip(phrases, _postings(arrays, "phrase", len(phrases)), strict=True)))
