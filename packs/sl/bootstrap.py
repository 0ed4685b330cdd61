"""``sl.bootstrap(connection)``: one source per scanned table, from the ``_schema`` shards of the latest scan.

Generated: typed columns, grain from primary keys, joins from declared foreign keys and accepted
inferred relationships (many_to_one from child to parent, one_to_many back; a second relationship to the
same source is kept under a join ``role``), a row count measure, measures from what the numeric columns'
names say (``guesses.py``: amounts and quantities summed, prices and rates averaged, revenue only when
price x quantity is evident) explained in ``descriptions.bootstrap``, and table/column comments as ``db``
descriptions.

Source names are the table's name, made deterministic across connections (ADR 0033): a name that
several schemas of the connection share is prefixed with the schema, a name that a table of another
scanned connection shares is prefixed with the connection (in every connection that has it, whichever is
bootstrapped first), and a name still taken gets a number. The answer lists every rename with its reason.

A file that exists is merged, never overwritten: missing columns, measures and joins are added and
``db`` descriptions refreshed; everything else (user/ai descriptions, hand-written measures, comments)
is kept. A source that already reads a table (``table:``) is the one extended, whatever its name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from sqlglot import exp

from khive.connections.selection import internal_object
from khive.context import Context
from khive.errors import NotFound, WriteConflict
from khive.gcpause import paused_gc
from khive.project.yamldoc import plain, quick_load, safe_yaml
from packs.sl.guesses import free_name, guess, misread
from packs.sl.index import known_sources
from packs.sl.models import NAME_RE, Source
from packs.sl.store import dump_new, dump_yaml, list_sources, load_yaml, source_path, to_commented
from packs.sl.tableref import folds, table_key, table_sql
from packs.sl.validate import Known, check_model, check_text, check_written, errors, sources_read

if TYPE_CHECKING:
    from khive.index.engine import RetrievalIndex
    from khive.project.store import FileStore

HEADER = ("# Written by sl.bootstrap from the latest scan. Edit freely: a later bootstrap only adds missing\n"
          "# columns, measures and joins and refreshes descriptions.db; everything else you write is kept.\n")
TYPE_MAP = {"number": "number", "integer": "number", "timestamp": "time", "date": "time", "time": "time",
            "boolean": "boolean"}
KEY_ORDER = ("name", "descriptions", "table", "sql", "grain", "columns", "measures", "joins", "segments", "usage")


def read_shards(files: FileStore, connection: str) -> dict[str, dict[str, Any]]:
    """``db.name`` -> shard entry of every live table of the connection (read as files, not through scan);
    server internals a scan recorded before they were left out never become sources. libyaml's parser reads
    them (a pure-Python parse of 10,000 tables takes minutes); what it cannot read goes through the bounded
    loader, which says why."""
    out: dict[str, dict[str, Any]] = {}
    for path in files.list(f"_schema/{connection}/", suffix=".yaml"):
        text = files.read_text(path) or ""
        data = quick_load(text)
        if not isinstance(data, dict):
            data = safe_yaml().load(text) or {}
        for name, entry in (data.get("tables") or {}).items():
            if (isinstance(entry, dict) and not entry.get("droppedInSync")
                    and internal_object(str(data.get("schema")), str(name)) is None):
                out[f"{data.get('schema')}.{name}"] = {**entry, "db": str(data.get("schema")), "name": str(name)}
    return out


def safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "x"
    return name if NAME_RE.match(name) else f"t_{name}"


class _Existing:
    """The connection's source files: which table each reads, and their text."""

    def __init__(self, files: FileStore, connection: str):
        self.texts: dict[str, str] = {}
        self.paths: dict[str, str] = {}
        self.by_table: dict[str, list[str]] = {}
        self.broken: dict[str, list[str]] = {}
        self.data: dict[str, Any] = {}  # each valid file's content as plain data
        self.sources: dict[str, Source] = {}  # and as the model
        for _, name, path in list_sources(files, connection):
            text = files.read_text(path) or ""
            self.texts[name], self.paths[name] = text, path
            source, problems, data = check_model(text, path)
            if source is not None:  # read fast, the data is plain already; read round-trip, a copy is
                self.data[name] = plain(data) if isinstance(data, CommentedMap) else data
                self.sources[name] = source
            table = source.table if source else (data.get("table") if isinstance(data, Mapping) else None)
            if source is None:
                self.broken[name] = [str(p) for p in problems]
            if isinstance(table, str):
                self.by_table.setdefault(table_key(table).casefold(), []).append(name)


def _plan_names(tables: Mapping[str, dict[str, Any]], existing: _Existing, connection: str,
                elsewhere: Mapping[str, str], other_tables: Mapping[str, list[str]], skipped: list[dict[str, Any]],
                renamed: list[dict[str, str]]) -> dict[str, str]:
    """table key -> source name: the source already reading it, else a fresh name by the rules of the module
    docstring; ``elsewhere`` maps other connections' source names to their connection, ``other_tables`` a
    folded table name to the other scanned connections that have such a table."""
    plain_count: dict[str, int] = {}
    for entry in tables.values():
        plain_count[safe_name(entry["name"])] = plain_count.get(safe_name(entry["name"]), 0) + 1
    taken = set(existing.texts) | set(elsewhere)
    names: dict[str, str] = {}
    for key, entry in sorted(tables.items()):
        base = safe_name(entry["name"])
        covering = existing.by_table.get(key.casefold(), [])
        if len(covering) == 1 or base in covering:
            names[key] = base if base in covering else covering[0]
            continue
        if covering:
            skipped.append({"table": key, "reason": f"read by several sources ({', '.join(sorted(covering))}); "
                                                    "none is named after the table, so none was extended"})
            continue
        if base in existing.broken:
            skipped.append({"table": key, "reason": f"{existing.paths[base]} is not a valid source; fix it, then "
                                                    "bootstrap again"})
            continue
        reasons = [] if base == entry["name"] else [f"{entry['name']!r} is not a valid source name"]
        clashes = other_tables.get(base.casefold(), [])
        if plain_count[base] > 1:
            reasons.append(f"several schemas of {connection} have a table {entry['name']}")
            base = safe_name(f"{entry['db']}_{entry['name']}")
        if clashes or base in elsewhere:
            reasons.append(f"connection {', '.join(clashes)} also has a table {entry['name']}" if clashes
                           else f"source {base} belongs to connection {elsewhere[base]}")
            base = safe_name(f"{connection}_{base}")
        names[key] = free_name(base, taken)
        if names[key] != base:
            reasons.append(f"{base} is taken by another source")
        if reasons:
            renamed.append({"table": key, "source": names[key], "reason": "; ".join(reasons)})
    return names


def generate(tables: Mapping[str, dict[str, Any]], names: Mapping[str, str], dialect: str,
             notes: list[str]) -> dict[str, dict[str, Any]]:
    """Source name -> the source bootstrap would write for it (plain data, canonical key order)."""
    sources: dict[str, dict[str, Any]] = {}
    column_names: dict[str, dict[str, str]] = {}  # table key -> db column -> source column name
    for key, name in names.items():
        entry = tables[key]
        columns: list[dict[str, Any]] = []
        renamed: dict[str, str] = {}
        taken: set[str] = set()
        for column in entry.get("columns") or []:
            original = str(column["name"])
            cname = free_name(safe_name(original), taken)
            renamed[original] = cname
            item: dict[str, Any] = {"name": cname, "type": TYPE_MAP.get(str(column.get("type")), "string")}
            if cname != original or folds(original, dialect):
                item["expr"] = exp.column(original, quoted=True).sql(dialect)
            if column.get("comment"):
                item["descriptions"] = {"db": str(column["comment"])}
            columns.append(item)
        column_names[key] = renamed
        keys = {c for fk in entry.get("foreignKeys") or [] for c in fk.get("columns") or []}
        guessed = guess(str(entry["name"]), list(entry.get("columns") or []), renamed, {c["name"] for c in columns},
                        f"{name}_count", keys)
        data: dict[str, Any] = {"name": name}
        descriptions = {key: text for key, text in (("db", entry.get("comment")),
                                                    ("bootstrap", guessed.description())) if text}
        if descriptions:
            data["descriptions"] = {key: str(text) for key, text in descriptions.items()}
        data["table"] = table_sql(str(entry["db"]), str(entry["name"]), dialect)
        grain = [renamed[str(c["name"])] for c in entry.get("columns") or [] if c.get("primaryKey")]
        if grain:
            data["grain"] = grain
        data["columns"] = columns
        data["measures"] = guessed.measures
        sources[name] = data
    reverse: list[tuple[str, str, list[tuple[str, str]], str, str]] = []
    for child_key, rels in _relationships(tables).items():
        for parent_key, child_cols, parent_cols in rels:
            child, parent = names.get(child_key), names.get(parent_key)
            if child is None or parent is None:
                continue  # the parent is outside the scan, or its table was skipped
            on: list[tuple[str, str]] = []
            for c, p in zip(child_cols, parent_cols, strict=False):
                a, b = column_names[child_key].get(c), column_names[parent_key].get(p)
                if a is not None and b is not None:
                    on.append((a, b))
            if not on or len(on) != len(child_cols):
                continue
            one = set(sources[child].get("grain") or []) == {a for a, _ in on}
            role = _role(child_cols)
            _add_join(sources[child], parent, on, "one_to_one" if one else "many_to_one", role)
            if child != parent:  # the way back, added after every source's own keys
                reverse.append((parent, child, [(b, a) for a, b in on], "one_to_one" if one else "one_to_many",
                                f"{child}_by_{role}"))
    for parent, child, on, relationship, role in reverse:
        _add_join(sources[parent], child, on, relationship, role)
    for source in sources.values():
        _name_roles(source, notes)
    return sources


def _role(columns: list[str]) -> str:
    """A join's role from its columns: ``original_language_id`` -> ``original_language``."""
    parts = [re.sub(r"(?i)_?id$", "", column) or column for column in columns]
    return safe_name("_".join(parts))


def _relationships(tables: Mapping[str, dict[str, Any]]) -> dict[str, list[tuple[str, list[str], list[str]]]]:
    """child table key -> [(parent key, child columns, parent columns)] from FKs (by parent and columns, so the
    first declared of two joins to one source does not depend on the driver) and accepted inferences."""
    out: dict[str, list[tuple[str, list[str], list[str]]]] = {}
    for key, entry in sorted(tables.items()):
        rels = sorted((f"{fk['refDb']}.{fk['refTable']}", list(fk["columns"]), list(fk["refColumns"]))
                      for fk in entry.get("foreignKeys") or [])  # drivers list keys in their own orders
        rels += [(f"{rel['toDb']}.{rel['toTable']}", list(rel["fromColumns"]), list(rel["toColumns"]))
                 for rel in entry.get("inferredRelationships") or [] if rel.get("tier", "accepted") == "accepted"]
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for parent, child_cols, parent_cols in rels:
            if (parent, tuple(child_cols)) not in seen:
                seen.add((parent, tuple(child_cols)))
                out.setdefault(key, []).append((parent, child_cols, parent_cols))
    return out


def _add_join(source: dict[str, Any], to: str, on: list[tuple[str, str]], relationship: str, role: str) -> None:
    """Add a join unless the same one is there; ``_role`` (kept aside) names it if another join has its target."""
    joins = source.setdefault("joins", [])
    keys = [{"from": a, "to": b} for a, b in on]
    if any(join["to"] == to and join["on"] == keys for join in joins):
        return
    joins.append({"to": to, "on": keys, "relationship": relationship, "_role": role})


def _name_roles(source: dict[str, Any], notes: list[str]) -> None:
    """Give every join whose target another join shares its role (unique within the source); drop the rest."""
    joins = source.get("joins") or []
    targets = [join["to"] for join in joins]
    used: set[str] = set()
    for join in joins:
        role = join.pop("_role")
        if targets.count(join["to"]) > 1:
            join["role"] = free_name(role, used)
    shared = sorted({t for t in targets if targets.count(t) > 1})
    for target in shared:
        roles = ", ".join(j["role"] for j in joins if j["to"] == target)
        notes.append(f"{source['name']} joins {target} {targets.count(target)} ways (roles {roles}); a query picks "
                     f"one with via=[role], else the first declared is used")


def merge(document: CommentedMap, fresh: Mapping[str, Any]) -> None:
    """Add what ``document`` lacks from ``fresh`` and refresh ``db`` descriptions; keep everything else."""
    _set_db(document, (fresh.get("descriptions") or {}).get("db"))
    if not document.get("grain") and fresh.get("grain") and document.get("sql") is None:
        _put(document, "grain", to_commented(fresh["grain"]))
    columns = _seq(document, "columns")
    by_name = {item.get("name"): item for item in columns if isinstance(item, CommentedMap)}
    for column in fresh.get("columns") or []:
        current = by_name.get(column["name"])
        if current is None:
            columns.append(to_commented(column))
        else:
            _set_db(current, (column.get("descriptions") or {}).get("db"))
    _set_origin(document, "bootstrap", (fresh.get("descriptions") or {}).get("bootstrap"))
    for key in ("measures", "joins"):
        items = fresh.get(key) or []
        if not items:
            continue
        seq = _seq(document, key)
        have = {_identity(key, plain(item)) for item in seq if isinstance(item, CommentedMap)}
        seq.extend(to_commented(item) for item in items if _identity(key, item) not in have)
    for key in ("columns", "measures", "joins"):
        if key in document and not document[key]:
            del document[key]


def _identity(key: str, item: Mapping[str, Any]) -> Any:
    """A measure is its name; a join its target and columns (two joins to one source differ in their columns)."""
    if key == "measures":
        return item.get("name")
    on = tuple((k.get("from"), k.get("to")) for k in item.get("on") or [] if isinstance(k, Mapping))
    return item.get("to"), on


def _set_db(node: CommentedMap, text: str | None) -> None:
    _set_origin(node, "db", text)


def _set_origin(node: CommentedMap, origin: str, text: str | None) -> None:
    """Refresh the description of ``origin`` (what bootstrap derives: db, bootstrap); other origins stay."""
    descriptions = node.get("descriptions")
    if text:
        if not isinstance(descriptions, CommentedMap):
            descriptions = CommentedMap()
            _put(node, "descriptions", descriptions)
        if descriptions.get(origin) != text:
            descriptions[origin] = text
    elif isinstance(descriptions, CommentedMap) and origin in descriptions:
        del descriptions[origin]
        if not descriptions:
            del node["descriptions"]


def _seq(document: CommentedMap, key: str) -> CommentedSeq:
    if not isinstance(document.get(key), CommentedSeq):
        _put(document, key, CommentedSeq())
    value: CommentedSeq = document[key]
    return value


def _put(node: CommentedMap, key: str, value: Any) -> None:
    """Set ``key``; a new key goes after the keys that precede it in the canonical order."""
    if key in node or key not in KEY_ORDER:
        node[key] = value
        return
    before = set(KEY_ORDER[: KEY_ORDER.index(key)])
    position = max((i + 1 for i, k in enumerate(node) if k in before), default=0)
    node.insert(position, key, value)


def bootstrap_connection(ctx: Context, connection: str) -> dict[str, Any]:
    with paused_gc():  # thousands of generated sources beside the shards' tables (khive.gcpause)
        return _bootstrap(ctx, connection)


def _bootstrap(ctx: Context, connection: str) -> dict[str, Any]:
    runtime = ctx.runtime
    dialect = runtime.connection(connection).driver
    files = runtime.files
    tables = read_shards(files, connection)
    if not tables:
        raise NotFound(f"connection {connection!r} has no scanned tables; run `khive scan {connection}` first",
                       code="scan_missing", details={"connection": connection})
    known = known_sources(runtime.index)  # refreshes the index: the other connections' tables are in it too
    elsewhere = {name: k.connection for name, k in known.items() if k.connection != connection}
    existing = _Existing(files, connection)
    skipped: list[dict[str, Any]] = []
    notes: list[str] = []
    renamed: list[dict[str, str]] = []
    names = _plan_names(tables, existing, connection, elsewhere, _other_tables(runtime.index, connection), skipped,
                        renamed)
    for name, problems in existing.broken.items():
        skipped.append({"source": name, "reason": "the file is not a valid source; fix it, then bootstrap again",
                        "problems": problems})
    fresh = generate(tables, names, dialect, notes)
    planned: dict[str, _Planned] = {}
    for name, data in fresh.items():
        old = existing.texts.get(name)
        if name in existing.broken:
            continue
        if old is None:
            text, exact = dump_new(data)
            planned[name] = _Planned(source_path(connection, name), None, HEADER + text, data if exact else None)
            continue
        current = existing.data.get(name, {})
        notes += [f"{name}: measure {m['name']} sums {m['expr']}, which reads as a price or rate; sl.bootstrap never "
                  "removes a measure: delete it if it was not meant" for m in current.get("measures") or []
                  if isinstance(m, dict) and misread(m)]
        trial = to_commented(current)  # the merge on plain data first: a round-trip parse only for a file it changes
        merge(trial, data)
        if plain(trial) == current:
            planned[name] = _Planned(existing.paths[name], old, old)
            continue
        try:
            document = load_yaml(old)
        except YAMLError:
            continue
        before = plain(document)
        merge(document, data)
        planned[name] = _Planned(existing.paths[name], old, old if plain(document) == before else dump_yaml(document))
    report = _write_plan(ctx, connection, dialect, planned, known, tables, skipped, notes, existing.sources)
    return {**report, "renamed": renamed}


def _changed_meanwhile(path: str) -> WriteConflict:
    return WriteConflict(f"{path} changed while sl.bootstrap ran; run it again", details={"path": path})


def _other_tables(index: RetrievalIndex, connection: str) -> dict[str, list[str]]:
    """Folded source-safe table name -> the other scanned connections that have a table of that name."""
    found: dict[str, set[str]] = {}
    for row in index.documents(kind="table"):
        meta = row["metadata"]
        other, table = meta.get("connectionId"), (meta.get("tableRef") or {}).get("name")
        if other and other != connection and table:
            found.setdefault(safe_name(str(table)).casefold(), set()).add(str(other))
    return {name: sorted(connections) for name, connections in found.items()}


class _Planned(NamedTuple):
    path: str
    old: str | None  # the file's text before, None for a new file
    text: str  # its text after
    data: Mapping[str, Any] | None = None  # a new file's data, when ``text`` is known to read back as it


def _write_plan(ctx: Context, connection: str, dialect: str, planned: dict[str, _Planned],
                known: dict[str, Known], tables: Mapping[str, Any], skipped: list[dict[str, Any]],
                notes: list[str], unchanged: Mapping[str, Source]) -> dict[str, Any]:
    """``unchanged``: the model of each existing file as read before the plan (an unchanged one is not read again)."""
    context = dict(known)
    parsed = {}  # each text read once (a new one not at all): for the context here, then for its own check below
    for name, (path, old, text, data) in planned.items():
        if old is not None and text == old:
            source = unchanged.get(name) or check_model(text, path)[0]
        else:
            parsed[name] = check_model(text, path) if data is None else check_written(text, path, data)
            source = parsed[name][0]
        if isinstance(source, Source):
            context[name] = Known.of(connection, source)
    report: dict[str, Any] = {"connectionId": connection, "tables": len(tables), "created": [], "updated": [],
                              "unchanged": [], "skipped": skipped, "errors": [], "notes": notes}
    writes: list[tuple[str, str | None, str]] = []  # (path, text expected on disk, new text), in name order
    written: dict[str, Source] = {}  # text -> model, for the index's refresh below
    for name, (path, old, text, _) in sorted(planned.items()):
        if old is not None and text == old:
            report["unchanged"].append(path)
            continue
        problems = errors(check_text(text, path, dialect=dialect, known=context, parsed=parsed[name])[1])
        if problems:
            report["errors"].append({"path": path, "problems": [p.to_dict() for p in problems]})
            continue
        writes.append((path, old, text))
        report["created" if old is None else "updated"].append(path)
        source = parsed[name][0]
        if source is not None:
            written[text] = source
    ctx.runtime.files.replace_many(writes, author=ctx.principal, message=lambda path: f"sl: bootstrap {path}",
                                   stale=_changed_meanwhile)
    with sources_read(written):
        ctx.runtime.index.refresh()
    return report
