"""The retrieval index: fresh on every search, at a cost proportional to what changed.

``refresh()`` runs before every search. In a warm process an inotify watcher says which files
changed since the last call (nothing changed: a non-blocking read, microseconds); the first call,
or any call after the watcher loses track, stat-walks the sources' roots and compares stamps.
A file whose stamp changed but whose content hash did not is not re-parsed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson

from khive.gcpause import paused_gc
from khive.index import edgestore, leanrows, links, vectorblob
from khive.index import outline as outline_mod
from khive.index import search as search_mod
from khive.index.build import BuildState, NeedsOneByOne
from khive.index.buildprocess import BuildProcess, ChildWriter, WriterGone, holds_nothing
from khive.index.documents import (
    FIELDS,
    Document,
    DocumentBatch,
    EdgeRule,
    IndexSource,
    Item,
    expand,
    owns,
    owns_relative,
    previous_document,
)
from khive.index.edgerules import EdgeRuleError, EdgeRules
from khive.index.embed import Embedder
from khive.index.newrows import PART_DOCS, FileRows, parts
from khive.index.scanstat import oldest_first, stat_walk_paths
from khive.index.store import (
    BUILD_PAGE_CACHE,
    connect,
    create_id_index,
    create_secondary_indexes,
    delete_item_docs,
    doc_rows,
    drop_secondary_indexes,
    existing_ids,
    insert_doc,
    is_empty,
    is_shadowed,
    kinds_of,
    next_rowid,
    page_cache_size,
    set_page_cache_size,
    shadowed_files,
    stored_item,
    stored_items,
)
from khive.index.vectortables import VectorTables
from khive.index.watch import ChangeWatcher
from khive.limits import DEFAULT_LIMITS, Limits, applied
from khive.sqlite_util import WAL_AUTOCHECKPOINT, checkpoint_in_thread, immediate

log = logging.getLogger(__name__)


@dataclass
class RefreshReport:
    full: bool = False
    checked: int = 0
    reindexed: int = 0
    removed: int = 0
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.reindexed or self.removed)


class RetrievalIndex:
    def __init__(self, project: Path, sources: Sequence[IndexSource], *, embedder: Embedder | None = None,
                 edge_rules: Sequence[EdgeRule] = (), database: Path | None = None, watch: bool = True,
                 limits: Limits = DEFAULT_LIMITS, build_process: BuildProcess | None = None):
        """``build_process``: when a build from nothing writes through a second process (None: never)."""
        self.project = project.resolve()
        self.limits = limits  # sources parse files under these, whoever triggers the refresh
        self.sources = {source.name: source for source in sources}
        self.embedder = embedder
        self._rules = EdgeRules(edge_rules)
        self.edge_rules = self._rules.rules
        self.database = database or self.project / ".khive" / "index.sqlite"
        self.db = connect(self.database)
        self.build_process = build_process
        self._lock = threading.RLock()
        self._watch = watch
        self._watcher: ChangeWatcher | None = None
        self._walked = False
        self._vector_tables = VectorTables()
        self._build: BuildState | None = None  # during a build from nothing: what it wrote
        self._checkpoint: threading.Thread | None = None  # copying a build from nothing's log into the file
        self.generation = 0

    # freshness ------------------------------------------------------------------------------
    def refresh(self) -> RefreshReport:
        with self._lock, applied(self.limits), paused_gc():  # sources parse files (under the limits of
            # whoever triggers it) into many acyclic documents (see khive.gcpause)
            changed: set[Path] | None = None
            if self._walked and self._watcher is not None:
                changed = self._watcher.drain()
            if changed is None:
                return self._full_refresh()
            return self._partial_refresh(changed)

    def _roots(self) -> list[Path]:
        roots = sorted({self.project / root for source in self.sources.values() for root in source.roots})
        roots = [root for root in roots if links.stays_inside(self.project, root)]  # a root linked elsewhere: not ours
        # the watcher does not support nested roots; an outer root already covers an inner one
        return [root for root in roots if not any(root != other and root.is_relative_to(other) for other in roots)]

    def _full_refresh(self) -> RefreshReport:
        if self._watch and self._watcher is None:
            self._watcher = ChangeWatcher(self._roots())
            self._watcher.start()  # before the walk, so nothing written during it is missed
        report = RefreshReport(full=True)
        current: dict[tuple[str, str], tuple[int, int]] = {}
        suffixes = tuple(sorted({s for source in self.sources.values() for s in source.suffixes}))
        prefix = str(self.project) + os.sep  # the roots are under the (resolved) project, so are the paths
        for path, stamp in stat_walk_paths(self._roots(), suffixes).items():
            if not path.startswith(prefix):
                continue
            relative = path[len(prefix):].replace(os.sep, "/")
            for source in self.sources.values():
                if owns_relative(source, relative):
                    current[(source.name, relative)] = stamp
        built = self._build_in_child(current) if self._wants_child(current) else None
        from_nothing = built is not None
        if built is not None:
            report = built
        else:
            cache = page_cache_size(self.db)
            try:
                with self._transaction():
                    # What the index holds, read under the write lock: a process that waited for another's build
                    # sees what it wrote instead of building it again.
                    stored = stored_items(self.db)
                    from_nothing = bool(current) and is_empty(self.db)
                    self._write(current, stored, self._stale_sources(), report, from_nothing=from_nothing)
            finally:
                set_page_cache_size(self.db, cache)  # memory back once written
                self.db.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT}")
                self._build = None
        if from_nothing:  # its commit left the log uncopied: a thread copies it meanwhile (ADR 0059)
            self._checkpoint = checkpoint_in_thread(self.database)
        self._walked = True
        return self._finish(report)

    def _write(self, current: Mapping[tuple[str, str], tuple[int, int]],
               stored: Mapping[tuple[str, str], tuple[int, int, str]], stale_sources: set[str], report: RefreshReport,
               *, from_nothing: bool, in_child: bool = False) -> None:
        """A full refresh's writes, inside the caller's transaction (or the writer process's, ``in_child``)."""
        # A build from nothing (the first search after a scan): the lookup indexes are made once at the end, in the
        # same transaction, so a killed build leaves the index as it was, indexes included; and a page cache that
        # holds what it writes, so no page is written out and read back before the commit.
        if from_nothing:
            set_page_cache_size(self.db, BUILD_PAGE_CACHE)
            # the commit writes the log only; a thread copies it into the file while the first search runs
            self.db.execute("PRAGMA wal_autocheckpoint = 0")
            drop_secondary_indexes(self.db)
            self._build = BuildState(in_child=in_child)
        for key in sorted(stored.keys() - current.keys()):  # first: a renamed file's ids are free again
            self._remove(key[0], key[1], report)
        for key, stamp in sorted(current.items(), key=oldest_first):  # an id in two files: the newest's
            previous = stored.get(key)
            if previous is None or previous[:2] != stamp or key[0] in stale_sources:
                self._reindex(key[0], key[1], previous[2] if previous and key[0] not in stale_sources else None,
                              report, holds_nothing=from_nothing)
        if from_nothing:
            create_secondary_indexes(self.db)
        self._record_source_versions()

    def _wants_child(self, current: Mapping[tuple[str, str], tuple[int, int]]) -> bool:
        return self.build_process is not None and bool(current) \
            and self.build_process.wanted(sum(stamp[1] for stamp in current.values())) and holds_nothing(self.db)

    def _build_in_child(self, current: Mapping[tuple[str, str], tuple[int, int]]) -> RefreshReport | None:
        """A build from nothing whose writes a second process makes (ADR 0056, khive.index.buildprocess). None when
        it did not commit: the index is as it was (nothing of the build in it), and the caller builds in process."""
        assert self.build_process is not None
        try:
            writer = ChildWriter(self.db, self.database, self.build_process.python)
        except OSError as exc:
            log.warning("index: the writer process did not start (%s): building in this process", exc)
            return None
        real, report = self.db, RefreshReport(full=True)
        self.db = cast(sqlite3.Connection, writer)  # the build's surface of a connection (see ChildWriter)
        try:
            self._write(current, {}, set(), report, from_nothing=True, in_child=True)
            writer.commit()
            log.info("index: built from nothing, %d files, written by a second process", report.reindexed)
            return report
        except (WriterGone, NeedsOneByOne) as exc:
            log.warning("index: the build in a second process did not finish (%s): building in this process", exc)
            return None
        finally:
            self.db, self._build = real, None
            writer.close()

    def _partial_refresh(self, changed: set[Path]) -> RefreshReport:
        report = RefreshReport()
        if not changed:
            return report
        with self._transaction():
            for path in sorted(changed):
                matched = False
                for source in self.sources.values():
                    relative = owns(source, self.project, path)
                    if relative is None:
                        continue
                    matched = True
                    previous = stored_item(self.db, source.name, relative)  # one row, not the whole table
                    if path.is_file():
                        self._reindex(source.name, relative, previous[2] if previous else None, report)
                    elif previous is not None:
                        self._remove(source.name, relative, report)
                if not matched and path.is_relative_to(self.project):
                    # A directory that vanished, moved or was recreated: re-check what we hold under it.
                    prefix = path.relative_to(self.project).as_posix().rstrip("/") + "/"
                    stored = stored_items(self.db)
                    for source_name, relative in [k for k in stored if k[1].startswith(prefix)]:
                        if (self.project / relative).is_file():
                            self._reindex(source_name, relative, stored[(source_name, relative)][2], report)
                        else:
                            self._remove(source_name, relative, report)
        return self._finish(report)

    def _finish(self, report: RefreshReport) -> RefreshReport:
        if report.changed:
            self.generation += 1
            self._vector_tables.clear()
        return report

    def _stale_sources(self) -> set[str]:
        known = dict(self.db.execute("SELECT name, version FROM sources").fetchall())
        embedder = self.embedder.name if self.embedder else "none"
        return {name for name, source in self.sources.items() if known.get(name) != f"{source.version}/{embedder}"}

    def _record_source_versions(self) -> None:
        embedder = self.embedder.name if self.embedder else "none"
        self.db.executemany("INSERT OR REPLACE INTO sources VALUES (?, ?)",
                            [(name, f"{source.version}/{embedder}") for name, source in self.sources.items()])

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return immediate(self.db)

    def _reindex(self, source_name: str, relative: str, previous_sha: str | None, report: RefreshReport, *,
                 holds_nothing: bool = False) -> None:
        """``holds_nothing``: the index had no documents when this refresh began, so none of this file's are in it
        (each file is indexed once per refresh); without the item index, looking would scan every document."""
        report.checked += 1
        path = links.readable(self.project, relative)  # never through a symlink
        if isinstance(path, str):
            self._record_unread(source_name, relative, path, report)
            return
        try:
            data = path.read_bytes()
            stat = path.stat()
        except FileNotFoundError:
            self._remove(source_name, relative, report)
            return
        sha = hashlib.sha256(data).hexdigest()
        if sha == previous_sha and not is_shadowed(self.db, source_name, relative):  # touched, not changed
            # (a file with a document behind another file's is read again: written later now, it may win)
            self.db.execute("UPDATE items SET mtime_ns = ?, size = ? WHERE source = ? AND path = ?",
                            (stat.st_mtime_ns, stat.st_size, source_name, relative))
            return
        held = [] if holds_nothing else self._delete_docs(source_name, relative)
        error: str | None = None
        try:
            documents = self.sources[source_name].documents(relative, data.decode("utf-8"))
            self._insert(source_name, relative, documents, stat.st_mtime_ns)
        except (ValueError, UnicodeDecodeError, EdgeRuleError) as exc:
            error = str(exc)
            report.errors[relative] = error
            held += self._delete_docs(source_name, relative)
            log.warning("index: %s: %s", relative, error)
        self.db.execute("INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?)",
                        (source_name, relative, stat.st_mtime_ns, stat.st_size, sha, error))
        report.reindexed += 1
        self._bring_back(held, report)

    def _record_unread(self, source_name: str, relative: str, error: str, report: RefreshReport) -> None:
        """A file the index will not read (a symlink): no documents, and the reason kept for ``item_errors``."""
        self._bring_back(self._delete_docs(source_name, relative), report)
        try:
            stat = os.lstat(self.project / relative)
        except FileNotFoundError:
            self._remove(source_name, relative, report)
            return
        report.errors[relative] = error
        self.db.execute("INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?)",
                        (source_name, relative, stat.st_mtime_ns, stat.st_size, "", error))
        report.reindexed += 1

    def _remove(self, source_name: str, relative: str, report: RefreshReport) -> None:
        held = self._delete_docs(source_name, relative)
        self.db.execute("DELETE FROM items WHERE source = ? AND path = ?", (source_name, relative))
        report.removed += 1
        self._bring_back(held, report)

    def _bring_back(self, held: Sequence[str], report: RefreshReport) -> None:
        """Files whose document of one of ``held`` (ids a file just gave up) waited behind it are read again:
        the index then holds what one built from nothing holds (ADR 0051)."""
        for source_name, relative in shadowed_files(self.db, held):
            if source_name in self.sources:
                self._reindex(source_name, relative, None, report)

    def _delete_docs(self, source_name: str, relative: str) -> list[str]:
        held = delete_item_docs(self.db, source_name, relative)
        if self._build is not None:
            self._build.forget(held)
        return held

    def _insert(self, source_name: str, relative: str, items: Sequence[Item], mtime_ns: int) -> None:
        """One file's documents: checked, then written a table at a time (one by one only when an id clashes)."""
        ids = [doc_id for item in items for doc_id in (item.ids if isinstance(item, DocumentBatch) else (item.id,))]
        own = set(ids)
        build = self._build
        clash = len(own) < len(ids) or bool(own & build.written if build is not None else existing_ids(self.db, ids))
        if build is not None:
            if clash and build.in_child:
                raise NeedsOneByOne(f"{relative}: an id in two files or twice in one")
            build.written |= own
        if clash:
            db = self.db
            if build is not None:  # ids looked up one by one from here on
                create_id_index(db)
            for document in expand(items):  # the newest file wins, in file order the last (insert_doc)
                checked = self._rules.checked(document, self._kind_of)
                rowid = insert_doc(db, source_name, relative, document, checked, mtime_ns)
                if rowid is not None:
                    self._store_vectors([rowid], [document])
            if build is not None:  # what the index now holds of these ids (a loser's id: the other file's)
                build.forget(ids)
                build.kinds.update(kinds_of(db, sorted(own)))
            return
        # none of them is indexed (checked above): only the other targets are looked up
        targets = sorted({edge.target for item in items if isinstance(item, Document) for edge in item.edges
                          if edge.target not in own})
        kinds = {target: build.kinds[target] for target in targets if target in build.kinds} \
            if build is not None else kinds_of(self.db, targets)  # without the docs.id index in a build (ADR 0052)
        edges: list[Sequence[tuple[str, str, Any]]] = []
        for n, item in enumerate(items):  # a target is known once inserted, as one by one
            if isinstance(item, DocumentBatch):  # no edges of its own; those into it checked once
                if item.from_previous:
                    self._rules.check_adopted(previous_document(items, n), item)
                edges.append(())
                kinds.update(dict.fromkeys(item.ids, item.kind))
                continue
            edges.append(self._rules.checked(item, kinds) if item.edges else ())
            kinds[item.id] = item.kind
        self._write_parts(FileRows(source_name, relative, next_rowid(self.db), self._rules.implied), items, edges)
        if build is not None:
            build.kinds.update(kinds)  # the targets' (known already) and these documents'

    def _write_parts(self, rows: FileRows, items: Sequence[Item], edges: Sequence[Sequence[tuple[str, str, Any]]]
                     ) -> None:
        """A file's rows written a part at a time, so a writer process has the first while the next is made (ADR
        0059). A part's vectors are made before it is written; a file that fails after a part was written leaves
        it to the caller's clean-up, which a second process cannot do (its reads see nothing): that build is
        made again in this process."""
        written = False
        try:
            for start, end in parts(items, PART_DOCS):
                made = rows.part(items[start:end], edges[start:end])
                vectors = vectorblob.vector_rows(self.embedder, made.rowids, items[start:end])
                made.write(self.db)
                written = True
                self._write_vectors(vectors)
            rows.rest().write(self.db)
        except (ValueError, UnicodeDecodeError, EdgeRuleError) as exc:
            if written and self._build is not None and self._build.in_child:
                raise NeedsOneByOne(f"a file failed after a part of it was written: {exc}") from exc
            raise

    def _store_vectors(self, rowids: Sequence[int], items: Sequence[Item]) -> None:
        self._write_vectors(vectorblob.vector_rows(self.embedder, rowids, items))

    def _write_vectors(self, rows: list[tuple[int, str, bytes]]) -> None:
        if rows:
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

    # edges ----------------------------------------------------------------------------------
    def edge_problems(self, document: Document, kinds: Mapping[str, str] | None = None) -> list[str]:
        """Why each of ``document``'s edges breaks the declared edge rules (empty: all fine). ``kinds``: the
        kind of every existing target, when the caller looked them up at once (default: one query per edge)."""
        return self._rules.problems(document, kinds if kinds is not None else self._kind_of)

    def _kind_of(self, doc_id: str) -> str | None:
        with self._lock:  # one connection shared by every worker thread
            row = self.db.execute("SELECT kind FROM docs WHERE id = ?", (doc_id,)).fetchone()
        return str(row[0]) if row else None

    def edges(self, doc_id: str, *, direction: str = "out", relation: str | None = None,
              refresh: bool = True) -> list[dict[str, Any]]:
        if refresh:
            self.refresh()
        with self._lock:
            return edgestore.edges_of(self.db, doc_id, direction, relation)

    def incoming(self, doc_ids: Sequence[str], relation: str) -> dict[str, list[str]]:
        """target id -> source ids of ``relation`` edges into any of ``doc_ids`` (one query, no refresh)."""
        if not doc_ids:
            return {}
        with self._lock:
            return edgestore.incoming(self.db, doc_ids, relation)

    def existing(self, doc_ids: Sequence[str]) -> set[str]:
        """Which of ``doc_ids`` are in the index (one query, no refresh)."""
        if not doc_ids:
            return set()
        with self._lock:
            rows = self.db.execute(f"SELECT id FROM docs WHERE id IN ({', '.join('?' * len(doc_ids))})",
                                   tuple(doc_ids)).fetchall()
        return {str(row[0]) for row in rows}

    def edge_map(self, doc_ids: Sequence[str], *, direction: str = "out",
                 relations: Sequence[str] | None = None) -> dict[str, list[tuple[str, str]]]:
        """doc id -> sorted (relation, other id) for the edges of many documents (one query, no refresh)."""
        if not doc_ids:
            return {}
        with self._lock:
            return edgestore.edge_map(self.db, doc_ids, direction, relations)

    def edge_rows(self, doc_ids: Sequence[str], *, direction: str = "out"
                  ) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
        """doc id -> sorted (relation, other id, edge metadata) of many documents (one query, no refresh)."""
        if not doc_ids:
            return {}
        with self._lock:
            return edgestore.edge_rows_of(self.db, doc_ids, direction)

    def degrees(self, doc_ids: Sequence[str], *, relations: Sequence[str]) -> dict[str, int]:
        """doc id -> number of incoming ``relations`` edges (one query, no refresh): how much of a hub it is."""
        if not doc_ids or not relations:
            return {}
        with self._lock:
            return edgestore.degrees(self.db, doc_ids, relations)

    def fields(self, doc_ids: Sequence[str]) -> dict[str, dict[str, str]]:
        """doc id -> its FTS field texts (name, title, summary, tags, body, extra), for these documents only."""
        if not doc_ids:
            return {}
        with self._lock:
            rows = self.db.execute(
                f"SELECT d.id, {', '.join('f.' + name for name in FIELDS)} FROM docs d JOIN docs_fts f "
                f"ON f.rowid = d.rowid WHERE d.id IN ({', '.join('?' * len(doc_ids))})", tuple(doc_ids)).fetchall()
        return {str(r[0]): {name: str(r[i + 1] or "") for i, name in enumerate(FIELDS)} for r in rows}

    def outline(self, kinds: Sequence[str], keys: Sequence[str], *, titles: bool = True) -> list[tuple[Any, ...]]:
        """(id, connection, title, *metadata values of ``keys``) of every document of ``kinds`` in rowid order, or
        (id, *values) without ``titles`` (one query, no refresh; ``khive.index.outline``)."""
        with self._lock:
            return outline_mod.outline(self.db, kinds, keys, titles=titles)

    def relation_pairs(self, relation: str) -> list[tuple[str, str, dict[str, Any]]]:
        """Every (source id, target id, edge metadata) edge of ``relation`` (one query, no refresh)."""
        with self._lock:
            return edgestore.relation_pairs(self.db, relation)

    def covered_terms(self, terms: Sequence[str], *, kinds: Sequence[str] | None = None,
                      connection: str | None = None) -> set[str]:
        """Which of ``terms`` match at least one document (with the kind/connection scope; no refresh)."""
        found = set()
        with self._lock:
            for term in dict.fromkeys(terms):
                if search_mod.fts_search(self.db, term, kinds=kinds, connection=connection, limit=1):
                    found.add(term)
        return found

    def item_hashes(self, paths: Sequence[str] | None = None) -> dict[str, str]:
        """project-relative path -> content sha256 of these (default: all) indexed files (no refresh)."""
        sql, params = "SELECT path, sha256 FROM items", tuple[str, ...]()
        if paths is not None:
            if not paths:
                return {}
            sql, params = sql + f" WHERE path IN ({', '.join('?' * len(paths))})", tuple(paths)
        with self._lock:
            return {str(r[0]): str(r[1]) for r in self.db.execute(sql, params)}

    def content_digest(self) -> str:
        """sha256 of what the documents were made from: every indexed file's (source, path, content hash) and
        every source's version (no refresh). What is derived from the documents alone can be kept under it."""
        with self._lock:
            items = self.db.execute("SELECT source, path, sha256 FROM items ORDER BY source, path").fetchall()
            versions = self.db.execute("SELECT name, version FROM sources ORDER BY name").fetchall()
        return hashlib.sha256(orjson.dumps([items, versions])).hexdigest()

    def rows_at(self, path: str) -> list[dict[str, Any]]:
        """The rows of the documents one project file produced, in id order (no refresh)."""
        sources = sorted(self.sources)
        if not sources:
            return []
        with self._lock:  # the file's own rows by the (source, path) index, then their children (leanrows)
            rows = [row for source in sources for where in (leanrows.OF_FILE, leanrows.CHILD_OF_FILE)
                    for row in doc_rows(self.db, where, (source, path))]
        return sorted(rows, key=lambda row: str(row["id"]))

    def rows_with_alias(self, alias: str) -> list[dict[str, Any]]:
        """Rows whose metadata declares ``alias`` in its ``aliases`` list, compared case-insensitively (no refresh)."""
        with self._lock:
            rows = doc_rows(self.db, f"{leanrows.METADATA} LIKE '%\"aliases\"%' AND EXISTS (SELECT 1 FROM "
                                     f"json_each({leanrows.METADATA}, '$.aliases') a WHERE lower(a.value) = lower(?))",
                            (alias,))
        return sorted(rows, key=lambda row: str(row["id"]))

    def rows_matching(self, patterns: Sequence[str]) -> list[dict[str, Any]]:
        """Rows whose id matches one of these GLOB patterns, in id order (no refresh)."""
        if not patterns:
            return []
        with self._lock:
            rows = doc_rows(self.db, " OR ".join("id GLOB ?" for _ in patterns), tuple(patterns))
        return sorted(rows, key=lambda row: str(row["id"]))

    # reads ----------------------------------------------------------------------------------
    def get(self, doc_id: str, *, refresh: bool = True) -> dict[str, Any] | None:
        if refresh:
            self.refresh()
        with self._lock:
            rows = doc_rows(self.db, "id = ?", (doc_id,))
        return rows[0] if rows else None

    def rows(self, doc_ids: Sequence[str]) -> list[dict[str, Any]]:
        """The stored rows of these documents, in id order (one query, no refresh)."""
        if not doc_ids:
            return []
        with self._lock:
            rows = doc_rows(self.db, f"id IN ({', '.join('?' * len(doc_ids))})", tuple(doc_ids))
        return sorted(rows, key=lambda row: str(row["id"]))

    def documents(self, *, kind: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return doc_rows(self.db, "kind = ?", (kind,)) if kind else doc_rows(self.db)

    def item_errors(self) -> dict[str, str]:
        with self._lock:
            return {r[0]: r[1] for r in self.db.execute("SELECT path, error FROM items WHERE error IS NOT NULL")}

    def count(self, kind: str | None = None) -> int:
        with self._lock:
            if kind is None:
                return int(self.db.execute("SELECT count(*) FROM docs").fetchone()[0])
            return int(self.db.execute("SELECT count(*) FROM docs WHERE kind = ?", (kind,)).fetchone()[0])

    def search(self, query: str, *, kinds: Sequence[str] | None = None, connection: str | None = None,
               limit: int = 20, vector: bool = True, weights: Mapping[str, float] | None = None,
               where: Mapping[str, Any] | None = None, refresh: bool = True,
               snippets: bool = True) -> list[search_mod.Hit]:
        """Fused hits; ``snippets=False`` leaves lexical hits with their lead (see ``add_snippets``)."""
        if refresh:
            self.refresh()
        with self._lock:
            lexical = search_mod.fts_search(self.db, query, kinds=kinds, connection=connection, limit=limit * 2,
                                            weights=weights, where=where)
            semantic: list[tuple[int, float]] = []
            if vector and self.embedder is not None:
                semantic = search_mod.vector_search(self.db, self._vectors(kinds), self.embedder, query,
                                                    kinds=kinds, connection=connection, where=where, limit=limit * 2,
                                                    floor=self.embedder.min_similarity)
            floor = self.embedder.min_similarity if self.embedder is not None else 0.0
            return search_mod.fuse(self.db, lexical, semantic, limit=limit, min_similarity=floor,
                                   query=query if snippets else "")

    def add_snippets(self, query: str, hits: Sequence[search_mod.Hit]) -> None:
        """Give the lexical ones of ``hits`` (from ``search(..., snippets=False)``) their FTS snippets."""
        with self._lock:
            found = search_mod.snippets_by_id(self.db, query, [hit.id for hit in hits if "fts" in hit.lanes])
        for hit in hits:
            if found.get(hit.id):
                hit.snippet = found[hit.id]

    def _vectors(self, kinds: Sequence[str] | None) -> search_mod.VectorTable:
        return self._vector_tables.for_kinds(self.db, kinds, self.embedder.dimensions if self.embedder else 0)

    def close(self) -> None:
        with self._lock:
            if self._checkpoint is not None:
                self._checkpoint.join()
            if self._watcher is not None:
                self._watcher.close()
                self._watcher = None
            self.db.close()

