"""``sl.import_dbt``: MetricFlow semantic models and metrics into ``semantic-layer/<connection>/*.yaml``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import Field

from khive.context import Context
from khive.project.store import FileStore, inside
from khive.verbs import Params, Verb, Visibility
from packs.sl.dbt_map import Mapped, map_project
from packs.sl.dbt_merge import SourceFileError, merge_text, render, same_table
from packs.sl.dbt_parse import Note, load_project
from packs.sl.models import Source
from packs.sl.results import ImportResult
from packs.sl.store import list_sources, source_path
from packs.sl.validate import Known, check_text, parse_source

HEADER = ("# Imported by sl.import_dbt from {file} (semantic model {model}). Edit freely: a re-import only\n"
          "# adds what is new in dbt and fills empty descriptions; differences are reported as drift.\n")


class ImportParams(Params):
    path: str = Field(description="a dbt project or a folder of MetricFlow YAML, or a semantic_manifest.json; "
                                  "relative paths start at the khive project")
    connection: str = Field(description="the connection the sources belong to (semantic-layer/<connection>/)")
    schema_: str | None = Field(default=None, alias="schema",
                                description="schema for ref('x') tables: writes table: <schema>.x")
    dry_run: bool = Field(default=False, description="report what would change; write nothing")
    overwrite: bool = Field(default=False, description="replace existing files instead of merging into them")


def import_dbt(params: ImportParams, ctx: Context) -> dict[str, Any]:
    """Import dbt/MetricFlow semantic models and metrics as sources of one connection (operator).

    One source per semantic model, written to semantic-layer/<connection>/<name>.yaml. Existing files
    are merged: people's edits, measures and descriptions are kept, dbt adds what is new, and a
    difference between the file and dbt is reported as drift (overwrite=true takes dbt's version).
    Returns created/updated/unchanged paths, warnings (file, line, element, message, skipped) for
    everything not imported as written, and the counts of sources, measures and metrics.
    """
    runtime = ctx.runtime
    root = Path(params.path)
    if not root.is_absolute():
        root = runtime.project / root
    if ctx.on_wire:  # an explicit path is the operator's; over MCP a path must stay in the project
        root = inside(runtime.project, root)
    result = run_import(runtime.files, root, connection=params.connection, schema=params.schema_,
                        dry_run=params.dry_run, overwrite=params.overwrite, author=ctx.principal,
                        dialect=runtime.connection(params.connection).driver)
    if not params.dry_run and (result["created"] or result["updated"]):
        runtime.index.refresh()  # sl.search and sl.read see the new sources at once (as after sl.write)
    return result


def run_import(files: FileStore, root: Path, *, connection: str, schema: str | None = None, dry_run: bool = False,
               overwrite: bool = False, author: str | None = None, dialect: str | None = None) -> dict[str, Any]:
    """Parse, map, merge and write (the verb without the runtime): the result the verb returns."""
    mapped = map_project(load_project(root), schema=schema)
    warnings = [_warning(note) for note in mapped.notes]
    existing = _existing_sources(files, connection)
    sources = _place(mapped, existing, warnings)
    changes: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": [], "skipped": []}
    texts: dict[str, str] = {}
    for name, source in sources.items():
        path = source_path(connection, name)
        old = files.read_text(path)
        if old is None or overwrite:
            text = render(source, HEADER.format(file=mapped.origins[source.name].file, model=source.name))
        else:
            try:
                text, drift = merge_text(old, source)
            except SourceFileError as exc:
                warnings.append({"file": path, "line": None, "element": f"source:{name}", "skipped": True,
                                 "message": f"{exc}; the file was left as it is: fix it, or re-import with "
                                            "overwrite=true"})
                changes["skipped"].append(path)
                continue
            warnings += [{"file": path, "line": None, "element": f"source:{name}", "skipped": False,
                          "message": f"drift: {item}; kept the file's version (overwrite=true takes dbt's)"}
                         for item in drift]
        texts[path] = text
        changes["unchanged" if text == old else "created" if old is None else "updated"].append(path)
    warnings += _problems(texts, connection, dialect, existing)
    commit_errors = []
    for path in [*changes["created"], *changes["updated"]]:
        if not dry_run:
            written = files.write_text(path, texts[path], author=author, message=f"sl: import {path} from dbt")
            if written.commit_error:
                commit_errors.append(f"{path}: {written.commit_error}")
    result: dict[str, Any] = {
        **changes, "warnings": warnings, "sources": len(mapped.sources), "measures": mapped.measures,
        "metrics": mapped.metrics, "dryRun": dry_run, "root": str(root)}
    if commit_errors:
        result["commitErrors"] = commit_errors
    return result


def _existing_sources(files: FileStore, connection: str) -> dict[str, Source | None]:
    """The connection's source files by name (None when a file does not parse)."""
    out: dict[str, Source | None] = {}
    for _, name, path in list_sources(files, connection):
        try:
            out[name] = parse_source(files.read_text(path) or "", path)
        except ValueError:
            out[name] = None
    return out


def _place(mapped: Mapped, existing: dict[str, Source | None], warnings: list[dict[str, Any]]) -> dict[str, Source]:
    """Sources by the file they go to: their own name, or a differently named source reading the same table
    (as sl.bootstrap names them); joins follow the renames."""
    tables = Counter((s.table or "").lower() for s in mapped.sources.values())
    renamed: dict[str, str] = {}
    for name, source in mapped.sources.items():
        if name in existing or tables[(source.table or "").lower()] > 1:
            continue
        same = [other for other, found in existing.items() if found is not None and other not in mapped.sources
                and same_table(found.table, source.table)]
        if len(same) == 1 and same[0] not in renamed.values():
            renamed[name] = same[0]
            where = mapped.origins[name]
            warnings.append({"file": where.file, "line": where.line, "element": f"semantic_model:{name}",
                             "skipped": False, "message": f"merged into source {same[0]}, which reads the same "
                                                          f"table {source.table}"})
    placed: dict[str, Source] = {}
    for name, source in mapped.sources.items():
        joins = [join.model_copy(update={"to": renamed.get(join.to, join.to)}) for join in source.joins]
        placed[renamed.get(name, name)] = source.model_copy(update={"name": renamed.get(name, name), "joins": joins})
    return placed


def _problems(texts: dict[str, str], connection: str, dialect: str | None,
              existing: dict[str, Source | None]) -> list[dict[str, Any]]:
    """Reference and SQL problems of the files as they will be written (sl.validate's checks)."""
    final = {name: source for name, source in existing.items() if source is not None}
    for path, text in texts.items():
        final[path.rsplit("/", 1)[1].removesuffix(".yaml")] = parse_source(text, path)
    known = {name: Known.of(connection, source) for name, source in final.items()}
    return [{"file": problem.file, "line": problem.line, "element": f"field:{problem.field}", "skipped": False,
             "message": f"{problem.message}; fix: {problem.fix}" if problem.fix else problem.message}
            for path, text in texts.items() for problem in check_text(text, path, dialect=dialect, known=known)[1]]


def _warning(note: Note) -> dict[str, Any]:
    return {"file": note.where.file, "line": note.where.line, "element": note.element, "message": note.message,
            "skipped": note.skipped}


DBT_VERBS = (
    Verb("sl.import_dbt", ImportParams, import_dbt, import_dbt.__doc__ or "", visibility=Visibility.OPERATOR,
         write_keys=lambda params: [f"sl:{params.connection}/*"], write_key_rule="sl:<connection>/*",
         read_only=False, result=ImportResult),
)
