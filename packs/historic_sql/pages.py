"""Pass B of the projection: pattern pages ``wiki/global/historic-sql/<slug>.md``.

Pages are written in the wiki pack's file format (ADR 0014: markdown, YAML frontmatter between ``---``
fences, the frontmatter keys ``packs/wiki/models.py`` allows), so ``wiki.read`` and ``wiki.search``
serve them and the wiki's index source picks up exactly the files that changed. The wiki's frontmatter
admits no keys of ours, so what slug matching needs (connection, tables, template ids) rides at the end
of the body in one HTML comment, invisible when the page is rendered.

Slugs are stable: a new pattern takes the slug of the existing page of the same connection whose tables
plus template ids overlap its own by at least 60 % (Jaccard), best match first, each page at most once;
archived pages take part, so a pattern that comes back takes its old slug. An existing page no pattern
matched gets ``stale_since`` (the run's date) and the ``stale`` tag; after ``staleArchiveAfterDays`` it
moves to ``wiki/global/historic-sql/_archived/<slug>.md``, marked ``archived`` (hidden from search, still
readable under its new key), so the folder people browse holds the live patterns only. A pattern that
comes back moves its page back and clears both marks. A link to an archived page's old key dangles until
then (the wiki resolves keys, not moves).

A definition is written one clause per line (sqlglot's pretty printer in the connection's dialect), so a
page's diff names the clause that changed (ADR 0033).

An unchanged rerun skips the whole pass when no page in the folder changed since the last one
(``projmemo.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import sqlglot
from ruamel.yaml.error import YAMLError
from sqlglot.errors import ParseError, TokenError

from khive.project.store import FileStore
from khive.project.yamldoc import dump_frontmatter, safe_yaml
from packs.historic_sql.projmemo import ProjectionMemo, fingerprint, text_hash

PREFIX = "wiki/global/historic-sql/"
ARCHIVE = f"{PREFIX}_archived/"
TAGS = ["historic-sql", "pattern"]
OVERLAP = 0.6
MEMO_KEY = f"{PREFIX}*.md"  # the pass is one unit in the projection memo: slugs depend on every page
RENDERING = "sql-pretty"  # ADR 0033: definitions one clause per line
_MARK_RE = re.compile(r"<!-- historic-sql: (\{.*?\}) -->", re.S)


@dataclass
class ExistingPage:
    slug: str
    path: str
    front: dict[str, Any]
    tables: list[str]
    templates: list[str]
    archived: bool = False  # under _archived/

    @property
    def members(self) -> set[str]:
        return {*self.tables, *self.templates}

    @property
    def key(self) -> str:
        """The wiki key: ``historic-sql/<slug>``, ``historic-sql/_archived/<slug>`` once archived."""
        return self.path.removeprefix("wiki/global/").removesuffix(".md")


def page_path(slug: str, *, archived: bool = False) -> str:
    return f"{ARCHIVE if archived else PREFIX}{slug}.md"


def existing_pages(files: FileStore, connection: str) -> dict[str, ExistingPage]:
    """This connection's pattern pages by slug, live and archived (a live page wins a slug both hold)."""
    out: dict[str, ExistingPage] = {}
    for path in sorted(files.list(PREFIX, suffix=".md"), key=lambda p: (not p.startswith(ARCHIVE), p)):
        archived = path.startswith(ARCHIVE)
        slug = path[len(ARCHIVE if archived else PREFIX):-3]
        if "/" in slug:
            continue
        text = files.read_text(path) or ""
        front = _frontmatter(text)
        mark = _MARK_RE.search(text)
        if front is None or mark is None:
            continue  # not one of ours (a person's page in the same folder): never touched
        try:
            meta = json.loads(mark.group(1))
        except json.JSONDecodeError:
            continue
        if meta.get("connection") != connection:
            continue
        out[slug] = ExistingPage(slug, path, front, list(meta.get("tables", [])), list(meta.get("templates", [])),
                                 archived)
    return out


def _frontmatter(text: str) -> dict[str, Any] | None:
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---", 3)
    if end < 0:
        return None
    try:
        data = safe_yaml().load(text[4:end + 1]) or {}
    except YAMLError:
        return None
    return data if isinstance(data, dict) else None


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def assign_slugs(patterns: Sequence[Mapping[str, Any]], pages: Mapping[str, ExistingPage]) -> list[str]:
    """The slug each pattern is written under (see the module docstring)."""
    scored = []
    for index, pattern in enumerate(patterns):
        members = {*pattern["tablesInvolved"], *pattern["constituentTemplateIds"]}
        for slug, page in pages.items():
            score = jaccard(members, page.members)
            if score >= OVERLAP:
                scored.append((-score, index, slug))
    scored.sort()
    chosen: dict[int, str] = {}
    used: set[str] = set()
    for _, index, slug in scored:
        if index not in chosen and slug not in used:
            chosen[index] = slug
            used.add(slug)
    out = []
    for index, pattern in enumerate(patterns):
        found = chosen.get(index)
        if found is not None:
            slug = found
        else:
            slug, n = pattern["slug"], 2
            while slug in used or (slug in pages and slug not in chosen.values()):
                slug, n = f"{pattern['slug']}-{n}", n + 1
            used.add(slug)
        out.append(slug)
    return out


def pretty_sql(sql: str, dialect: str | None) -> str:
    """One statement laid out one clause per line (sqlglot's pretty printer), so a page's diff shows what changed;
    anything that does not parse as one statement stays as written."""
    try:
        printed = sqlglot.transpile(sql, read=dialect, write=dialect, pretty=True)
    except (ParseError, TokenError, ValueError):
        return sql.strip()
    return printed[0] if len(printed) == 1 and printed[0] else sql.strip()


def render(pattern: Mapping[str, Any], connection: str, *, stale_since: str | None = None,
           archived: bool = False, dialect: str | None = None) -> str:
    tags = [*TAGS, *(["stale"] if stale_since else []), *(["archived"] if archived else [])]
    narrative = pattern["narrative"].strip()
    front: dict[str, Any] = {"title": pattern["title"], "summary": narrative.split(". ")[0].rstrip(".") + ".",
                             "tags": tags, "kind": "pattern"}
    if pattern.get("slRefs"):
        front["sl_refs"] = list(pattern["slRefs"])
    if stale_since:
        front["stale_since"] = stale_since
    if archived:
        front["archived"] = True
    tables = "\n".join(f"- `{table}`" for table in pattern["tablesInvolved"])
    templates = pattern["constituentTemplateIds"]
    mark = json.dumps({"connection": connection, "tables": list(pattern["tablesInvolved"]),
                       "templates": list(templates)}, sort_keys=True)
    body = (f"# {pattern['title']}\n\n{narrative}\n\n## Tables ({connection})\n\n{tables}\n\n"
            f"## Definition\n\n```sql\n{pretty_sql(pattern['definitionSql'], dialect)}\n```\n\n"
            f"Made of {len(templates)} query template{'s' if len(templates) != 1 else ''} from the query history.\n\n"
            f"<!-- historic-sql: {mark} -->\n")
    return f"---\n{dump_frontmatter(front)}---\n\n{body}"


def project_patterns(files: FileStore, connection: str, patterns: Sequence[Mapping[str, Any]], today: date,
                     archive_after_days: int, *, author: str, memo: ProjectionMemo | None = None,
                     dialect: str | None = None) -> dict[str, Any]:
    """Write the pattern pages, mark the unseen ones stale or archived; what happened, by slug.

    With a ``memo``: when the folder's pages are as the last pass left them and the patterns (and the
    day, while an unseen page waits to be archived) are the same, the pass is skipped (``projmemo.py``)."""
    record = memo.get(MEMO_KEY) if memo is not None else None
    if memo is not None and record is not None and memo.holds(MEMO_KEY, _folder(files), lambda meta: _inputs(
            connection, patterns, archive_after_days, today if meta["waiting"] else None, dialect)):
        return {"slugs": list(record.meta["slugs"]), "written": [], "stale": [], "archived": []}
    pages = existing_pages(files, connection)
    slugs = assign_slugs(patterns, pages)
    written: list[str] = []
    stale: list[str] = []
    archived: list[str] = []
    waiting = False  # an unseen page not archived yet: the day decides when it will be
    for slug, pattern in zip(slugs, patterns, strict=True):
        if files.write_text(page_path(slug), render(pattern, connection, dialect=dialect), author=author,
                            message=f"historic_sql: pattern {slug}").changed:
            written.append(slug)
        back = pages.get(slug)
        if back is not None and back.archived:  # the pattern came back: its page too
            files.delete(back.path, author=author, message=f"historic_sql: {slug} back from the archive")
    for slug, page in sorted(pages.items()):
        if slug in slugs or page.archived:
            continue
        since = page.front.get("stale_since")
        since_day = since if isinstance(since, date) else (date.fromisoformat(str(since)) if since else today)
        is_archived = (today - since_day).days >= archive_after_days
        waiting |= not is_archived
        text = files.read_text(page.path) or ""
        updated = _restale(text, page.front, since_day.isoformat(), is_archived)
        if is_archived:  # out of the live folder, in one write and one delete
            files.write_text(page_path(slug, archived=True), updated, author=author,
                             message=f"historic_sql: {slug} archived")
            files.delete(page.path, author=author, message=f"historic_sql: {slug} archived")
            archived.append(slug)
        elif files.write_text(page.path, updated, author=author, message=f"historic_sql: {slug} unseen").changed:
            stale.append(slug)
    if memo is not None:
        inputs = _inputs(connection, patterns, archive_after_days, today if waiting else None, dialect)
        memo.put(MEMO_KEY, _folder(files), inputs, {"slugs": slugs, "waiting": waiting})
    return {"slugs": slugs, "written": written, "stale": stale, "archived": archived}


def _folder(files: FileStore) -> str:
    """One hash over every page in the folder (any connection's, and people's): a change to any may move slugs."""
    return fingerprint([[path, text_hash(files.read_bytes(path))] for path in files.list(PREFIX, suffix=".md")])


def _inputs(connection: str, patterns: Sequence[Mapping[str, Any]], archive_after_days: int,
            day: date | None, dialect: str | None) -> str:
    # RENDERING names how pages are laid out: a page written by an older layout is rewritten once
    return fingerprint([connection, list(patterns), archive_after_days, day.isoformat() if day else None, dialect,
                        RENDERING])


def _restale(text: str, front: dict[str, Any], since: str, archived: bool) -> str:
    """The page with its frontmatter marked stale (and archived); the body untouched."""
    tags = [tag for tag in front.get("tags", []) if tag not in ("stale", "archived")]
    tags += ["stale", *(["archived"] if archived else [])]
    updated = {**front, "tags": tags, "stale_since": since}
    if archived:
        updated["archived"] = True
    for key, value in list(updated.items()):
        if isinstance(value, date):
            updated[key] = value.isoformat()
    end = text.find("\n---", 3)
    return f"---\n{dump_frontmatter(updated)}---{text[end + 4:]}"
