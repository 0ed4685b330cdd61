"""``khive site build``: every page of the site written to a folder (default ``.khive/site/``, derived state
that is never committed), readable offline from ``file://``.

The whole tree is rendered in memory, written to a sibling folder and then swapped in, so a reader never
sees half a site and a failed build leaves the previous one. A folder that holds something other than a
site built here is refused rather than replaced.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.resources import files as package_files
from pathlib import Path

import orjson

from khive import __version__
from khive.errors import ConfigError
from khive.site import paths
from khive.site.catalog import Catalog, load_catalog
from khive.site.layout import Page, document
from khive.site.markup import highlight_css
from khive.site.pages.common import Links, Site
from khive.site.pages.search import normalized, results, search_call, static_search
from khive.site.reader import Failure, Reader
from khive.site.routes import routes
from khive.threads import run_blocking

DEFAULT_DIR = ".khive/site"
MARKER = ".khive-site"  # names a folder this builder wrote (and may replace)
SUITE = "bench/retrieval-suite.json"
MAX_QUESTIONS = 300


@dataclass
class BuildReport:
    root: Path
    pages: int
    questions: int
    seconds: float
    failures: list[str] = field(default_factory=list)

    @property
    def index(self) -> Path:
        return self.root / paths.OVERVIEW


def asset(name: str) -> str:
    return (package_files("khive.site") / "static" / name).read_text(encoding="utf-8")


def stylesheet() -> str:
    return asset("site.css") + highlight_css()


def suite_questions(reader: Reader) -> list[str]:
    """The questions of the project's retrieval suite (``bench/retrieval-suite.json``), when it has one."""
    text = reader.ctx.runtime.files.read_text(SUITE)
    if not text:
        return []
    try:
        cases = orjson.loads(text).get("cases") or []
    except (orjson.JSONDecodeError, AttributeError):
        return []
    return [str(case["query"]) for case in cases if isinstance(case, dict) and isinstance(case.get("query"), str)]


def static_questions(catalog: Catalog, suite: Sequence[str]) -> list[str]:
    """What a static build answers: the suite's questions, then every table, source and wiki page by name."""
    candidates = [*suite, *(ref.id for ref in catalog.table_refs()), *(s["name"] for s in catalog.sources),
                  *(str(page["key"]).replace("/", " ").replace("-", " ") for page in catalog.pages)]
    chosen: dict[str, str] = {}
    for question in candidates:
        chosen.setdefault(normalized(question), question)
    return list(chosen.values())[:MAX_QUESTIONS]


def footer(principal: str, served: bool) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    how = "served live" if served else f"built {when}"
    return f"khive {__version__} · {how} as {principal} · every page is read through the public verbs"


async def render_site(reader: Reader, suite: Sequence[str] = ()) -> tuple[dict[str, bytes], int, list[str]]:
    """Every file of the static site by path, the number of questions it answers, the verbs that failed."""
    catalog = await load_catalog(reader)
    site = Site(reader, catalog)
    # One batch for every table up front: the table pages and the review list then read from the reader's memo.
    await reader.many([("scan.entity", {"connection": r.connection, "table": r.id}) for r in catalog.table_refs()])
    shown = footer(reader.principal, served=False)
    out: dict[str, bytes] = {}
    pages: list[Page] = [await render(site) for render in routes(catalog).values()]
    questions = static_questions(catalog, suite)
    answers = await reader.many([search_call(question) for question in questions])
    links = Links(paths.SEARCH, catalog)
    index = {normalized(q): str(results(links, q, answer)) for q, answer in zip(questions, answers, strict=True)}
    pages.append(static_search(questions))
    for page in pages:
        out[page.path] = document(page, catalog.project, shown).encode("utf-8")
    out[paths.SEARCH_INDEX] = b"window.KHIVE_SEARCH = " + orjson.dumps({"answers": index}) + b";\n"
    out[paths.STYLESHEET] = stylesheet().encode("utf-8")
    out[paths.SEARCH_SCRIPT] = asset("search.js").encode("utf-8")
    out[paths.AUDIT_SCRIPT] = asset("audit.js").encode("utf-8")
    failed = [failure.describe() for failure in catalog.failures]
    failed += [a.describe() for a in answers if isinstance(a, Failure)]
    return out, len(questions), failed


async def build_site(reader: Reader, target: Path) -> BuildReport:
    started = time.perf_counter()
    suite = await run_blocking(suite_questions, reader)
    tree, questions, failed = await render_site(reader, suite)
    await run_blocking(write_tree, target, tree)
    pages = sum(1 for path in tree if path.endswith(".html"))
    return BuildReport(target, pages, questions, time.perf_counter() - started, failed)


def write_tree(target: Path, tree: dict[str, bytes]) -> None:
    """Write ``tree`` beside ``target``, then swap it in; refuse a folder this builder did not write."""
    target = target.resolve()
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not (target / MARKER).exists())):
        raise ConfigError(f"{target} exists and is not a site khive built; it is left alone",
                          details={"field": "DIR", "fix": "name a new or empty folder, or the default .khive/site"})
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = target.with_name(f".{target.name}.new-{os.getpid()}")
    stale = target.with_name(f".{target.name}.old-{os.getpid()}")
    shutil.rmtree(fresh, ignore_errors=True)
    try:
        for path, data in tree.items():
            file = fresh / path
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(data)
        (fresh / MARKER).write_text("written by `khive site build`; rebuilt, never edited\n", encoding="utf-8")
        if target.exists():
            os.replace(target, stale)
        os.replace(fresh, target)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)
