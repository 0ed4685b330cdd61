"""Verbs of the sl pack: list, search, read, write, validate, dictionary search, bootstrap (+ compile, dbt)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from khive.context import Context
from khive.errors import InvalidArgs, NotFound, OpError, quoted
from khive.index.documents import words
from khive.limits import OptionalQueryText, QueryText, capped, check
from khive.project.yamldoc import YamlLimitError, plain, safe_yaml
from khive.verbs import Params, Verb, Visibility
from packs.sl import results
from packs.sl.bootstrap import bootstrap_connection
from packs.sl.compile_verbs import COMPILE_VERBS
from packs.sl.dbt_verbs import DBT_VERBS
from packs.sl.dictionary import dictionary_search
from packs.sl.index import (
    SOURCE_KIND,
    indexed_sources,
    known_sources,
    source_id,
)
from packs.sl.models import NAME_RE, Source
from packs.sl.store import (
    SL_ROOT,
    apply,
    dump_data,
    dump_yaml,
    file_data,
    list_sources,
    load_yaml,
    source_path,
    write_key,
)
from packs.sl.validate import Problem, check_model, check_text, errors, invalid_source

CANONICAL_KEYS = tuple(field.alias or name for name, field in Source.model_fields.items())


def _dialect(ctx: Context, connection: str) -> str:
    return ctx.runtime.connection(connection).driver  # driver names are sqlglot dialect names


# -- list / search ---------------------------------------------------------------------------

class ListParams(Params):
    connection: str | None = None
    query: OptionalQueryText = Field(default=None, description="keep sources whose name, table or description "
                                                               "contains this text (case-insensitive)")
    limit: int = Field(default=200, ge=1, le=5000)


def _summary(meta: dict[str, Any]) -> dict[str, Any]:
    return {"name": meta["name"], "connectionId": meta["connectionId"], "table": meta.get("table"),
            "description": meta.get("description"), "columnCount": meta.get("columnCount", 0),
            "measureCount": meta.get("measureCount", 0), "joinCount": meta.get("joinCount", 0),
            "frequencyTier": meta.get("frequencyTier")}


def list_sources_verb(params: ListParams, ctx: Context) -> dict[str, Any]:
    """List sources: name, connectionId, table, description, counts of columns/measures/joins."""
    index = ctx.runtime.index
    needle = (params.query or "").casefold()
    rows = []
    for meta in indexed_sources(index):
        if params.connection and meta["connectionId"] != params.connection:
            continue
        text = " ".join(str(meta.get(key) or "") for key in ("name", "table", "description")).casefold()
        if needle and needle not in text:
            continue
        rows.append(_summary(meta))
    rows.sort(key=lambda row: (row["connectionId"], row["name"]))
    errors = {path: error for path, error in index.item_errors().items() if path.startswith(SL_ROOT + "/")}
    return {"sources": rows[: params.limit], "count": len(rows), "errors": errors}


class SearchParams(Params):
    query: QueryText
    connection: str | None = None
    limit: int = Field(default=10, ge=1, le=100)


def search(params: SearchParams, ctx: Context) -> dict[str, Any]:
    """Search sources (names, descriptions, columns, measures, usage): score 0..1 and a snippet with **marks**."""
    index = ctx.runtime.index
    hits = index.search(params.query, kinds=[SOURCE_KIND], connection=params.connection, limit=params.limit)
    asked = {_stem(word) for word in words(params.query).split()}
    results = []
    for hit in hits:
        meta = hit.metadata
        # Which of the source's own measures and columns the question names (from the hit: no second search).
        matches = [name for name in [*meta.get("measures", []), *meta.get("columns", [])]
                   if asked & {_stem(word) for word in words(name).split()}]
        results.append({**_summary(meta), "score": hit.score, "snippet": hit.snippet, "matches": matches})
    return {"hits": results, "count": len(results)}


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


# -- read ------------------------------------------------------------------------------------

class ReadParams(Params):
    name: str
    connection: str | None = Field(default=None, description="needed only when two connections share the name")
    format: Literal["yaml", "json"] = "yaml"


def _locate(ctx: Context, name: str, connection: str | None) -> tuple[str, str]:
    """(connection, path) of source ``name``."""
    files = ctx.runtime.files
    found = [(conn, path) for conn, source, path in list_sources(files, connection) if source == name]
    if len(found) == 1:
        return found[0]
    if found:
        raise NotFound(f"source {name!r} exists in connections {', '.join(c for c, _ in found)}; pass connection=",
                       code="source_ambiguous", details={"connections": [c for c, _ in found]})
    import difflib

    names = sorted({source for _, source, _ in list_sources(files, connection)})
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; sl.list() shows the sources"
    raise NotFound(f"no source {quoted(name)}" + (f" in connection {quoted(connection)}" if connection else "") + hint,
                   code="source_not_found", details={"name": name, "closest": close})


def read(params: ReadParams, ctx: Context) -> dict[str, Any]:
    """Read a source as YAML (comments kept) or JSON, with its reference problems and wiki backlinks."""
    connection, path = _locate(ctx, params.name, params.connection)
    text = ctx.runtime.files.read_text(path) or ""
    dialect = ctx.runtime.config.connections[connection].driver if connection in ctx.runtime.config.connections \
        else None
    source, problems = check_text(text, path, dialect=dialect, known=known_sources(ctx.runtime.index))
    out: dict[str, Any] = {"name": params.name, "connectionId": connection, "path": path, "format": params.format}
    if params.format == "yaml":
        out["yaml"] = text
    elif source is None:
        raise OpError(f"{path} is not a valid source: {problems[0]}", code="invalid_source",
                      details={"problems": [p.to_dict() for p in problems]})
    else:
        out["source"] = file_data(source)
    out["description"] = source.descriptions.resolved() if source else None
    out["problems"] = [p.to_dict() for p in problems]
    out["backlinks"] = ctx.runtime.index.edges(source_id(params.name), direction="in", refresh=False)
    return out


# -- write / validate ------------------------------------------------------------------------

class WriteParams(Params):
    connection: str
    source: dict[str, Any] | None = Field(default=None, description="the source as an object (see sl.read format=json)")
    yaml: Annotated[str | None, capped("sl_source_chars", "the source YAML")] = Field(
        default=None, description="the whole source file as YAML text")
    merge: bool = Field(default=False, description="source= only: patch the existing file (lists matched by name) "
                                                   "instead of replacing it")

    @model_validator(mode="after")
    def _one_form(self) -> WriteParams:
        if (self.source is None) == (self.yaml is None):
            raise ValueError("pass exactly one of source={...} or yaml=\"...\"")
        if self.merge and self.source is None:
            raise ValueError("merge=true needs source={...}")
        return self

    def target_name(self) -> str | None:
        if self.source is not None:
            name = self.source.get("name")
        else:
            try:
                data = safe_yaml().load(self.yaml or "")
            except YamlLimitError:
                raise  # an alias bomb or a document too deep: refused as limit_exceeded, never walked
            except YAMLError:
                return None
            name = data.get("name") if isinstance(data, dict) else None
        return name if isinstance(name, str) and NAME_RE.match(name) else None

    def claimed_name(self) -> str | None:
        """The name the write key claims, read without parsing: keys are claimed on the event loop."""
        if self.source is not None:
            return self.target_name()
        found = _TOP_NAME_RE.search(self.yaml or "")
        return next((group for group in found.groups() if group), None) if found else None


# A top-level `name:` line of a block-style source, its value plain or quoted: what sl.write's write key claims.
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_TOP_NAME_RE = re.compile(rf"""^name:[ \t]+(?:({_NAME})|"({_NAME})"|'({_NAME})')[ \t]*(?:#.*)?$""", re.MULTILINE)


def _render(old: str | None, params: WriteParams) -> str:
    """The file text a write would leave: YAML as given, or the object merged into the file."""
    if params.yaml is not None:
        return params.yaml
    assert params.source is not None
    document = None
    if old is not None:
        try:
            document = load_yaml(old)
        except YAMLError:
            if params.merge:
                raise OpError("the existing file is not valid YAML, so it cannot be patched; write it whole "
                              "(merge=false) or fix it", code="invalid_source") from None
    if not isinstance(document, CommentedMap):
        ordered = {key: params.source[key] for key in CANONICAL_KEYS if key in params.source}
        ordered.update({key: value for key, value in params.source.items() if key not in ordered})
        return dump_data(ordered)
    before = plain(document)
    apply(document, params.source, prune=not params.merge)
    return old if plain(document) == before and old is not None else dump_yaml(document)


def _check(ctx: Context, params: WriteParams, old: str | None) -> tuple[str, str, list[Problem]]:
    """(path, text, problems) of the write ``params`` describes."""
    name = params.target_name()
    text = _render(old, params)
    check("sl_source_chars", len(text), "the source as YAML")
    if name is None:
        path = f"{SL_ROOT}/{params.connection}/(unnamed).yaml"
        _, problems, _ = check_model(text, path)
        return path, text, problems or [_no_name(path)]
    path = source_path(params.connection, name)
    _, problems = check_text(text, path, dialect=_dialect(ctx, params.connection),
                             known=known_sources(ctx.runtime.index))
    return path, text, problems


def _no_name(path: str) -> Problem:
    return Problem(path, 1, "name", "the source has no valid name", "add name: (letters, digits and _)")


def write(params: WriteParams, ctx: Context) -> dict[str, Any]:
    """Create or change a source (YAML comments kept); invalid sources are refused with file:line and fix."""
    _dialect(ctx, params.connection)
    name = params.target_name()
    if name is None:
        raise invalid_source(_check(ctx, params, None)[2])
    if name != params.claimed_name():
        raise InvalidArgs(f"sl.write: the source's name {name!r} must be on a top-level `name: {name}` line of "
                          "its own (block style), so the write can claim it before the YAML is parsed",
                          details={"field": "yaml", "name": name, "fix": f"start the YAML with `name: {name}`"})
    files = ctx.runtime.files
    path = source_path(params.connection, name)
    existed: list[bool] = []

    def update(old: str | None) -> str:
        existed.append(old is not None)
        _, text, problems = _check(ctx, params, old)
        if errors(problems):
            raise invalid_source(errors(problems))
        return text

    result = files.update(path, update, author=ctx.principal, message=f"sl: write {path}")
    ctx.runtime.index.refresh()
    return {"name": name, "connectionId": params.connection, "path": path, "created": not existed[0],
            "changed": result.changed, "sha256": result.sha256, "commitError": result.commit_error}


def validate(params: WriteParams, ctx: Context) -> dict[str, Any]:
    """Check a source without writing it: every problem with file, line and fix."""
    _dialect(ctx, params.connection)
    name = params.target_name()
    old = ctx.runtime.files.read_text(source_path(params.connection, name)) if name else None
    path, _, problems = _check(ctx, params, old)
    return {"valid": not errors(problems), "name": name, "path": path, "exists": old is not None,
            "problems": [p.to_dict() for p in problems]}


def _write_keys(params: Any) -> list[str]:
    return [write_key(params.connection, params.claimed_name() or "(unnamed)")]


# -- dictionary / bootstrap ------------------------------------------------------------------

class DictionaryParams(Params):
    query: QueryText = Field(description="a value to find, e.g. Acme Corp or refunded")
    connection: str | None = None
    limit: int = Field(default=20, ge=1, le=200)


def dictionary(params: DictionaryParams, ctx: Context) -> dict[str, Any]:
    """Which columns hold a value: profiled samples of the latest scan and sources' values hints."""
    return dictionary_search(ctx.runtime, params.query, params.connection, params.limit)


class BootstrapParams(Params):
    connection: str


def bootstrap(params: BootstrapParams, ctx: Context) -> dict[str, Any]:
    """Generate or extend one source per scanned table from the latest scan; never drops what people wrote."""
    return bootstrap_connection(ctx, params.connection)


VERBS = (
    Verb("sl.list", ListParams, list_sources_verb, list_sources_verb.__doc__ or "", result=results.ListResult),
    Verb("sl.search", SearchParams, search, search.__doc__ or "", result=results.SearchResult),
    Verb("sl.read", ReadParams, read, read.__doc__ or "", result=results.ReadResult),
    Verb("sl.write", WriteParams, write, write.__doc__ or "", write_keys=_write_keys,
         write_key_rule="sl:<connection>/<name>", read_only=False, result=results.WriteResult),
    Verb("sl.validate", WriteParams, validate, validate.__doc__ or "", result=results.ValidateResult),
    Verb("sl.dictionary_search", DictionaryParams, dictionary, dictionary.__doc__ or "",
         result=results.DictionaryResult),
    Verb("sl.bootstrap", BootstrapParams, bootstrap, bootstrap.__doc__ or "", visibility=Visibility.OPERATOR,
         write_keys=lambda p: [f"sl:{p.connection}/*"], write_key_rule="sl:<connection>/*", read_only=False,
         result=results.BootstrapResult),
    *COMPILE_VERBS,
    *DBT_VERBS,
)
