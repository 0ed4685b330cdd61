"""Reading a built site the way a browser would: its files, the links and ids in each page, what each page is
about (``data-subject``), and the static search index; plus the verbs' own answers to compare against."""

from __future__ import annotations

import json
import posixpath
import socket
import time
from dataclasses import dataclass, field
from functools import partial
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.identity import operator_principal

SEARCH_LIMIT = 15  # what the site asks discover.search for


@dataclass(frozen=True)
class Demo:
    root: Path
    output: str  # what the demo printed

    @property
    def site(self) -> Path:
        return self.root / ".khive" / "site"


@dataclass
class Parsed:
    links: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    subject: str | None = None
    ref_ids: list[str] = field(default_factory=list)  # ranked search hits, in order
    text: list[str] = field(default_factory=list)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parsed = Parsed()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for name in ("href", "src"):
            if found.get(name) is not None:
                self.parsed.links.append(str(found[name]))
        if found.get("id"):
            self.parsed.ids.add(str(found["id"]))
        if tag == "main" and found.get("data-subject"):
            self.parsed.subject = found["data-subject"]
        if tag == "li" and found.get("data-ref-id") is not None:
            self.parsed.ref_ids.append(str(found["data-ref-id"]))

    def handle_data(self, data: str) -> None:
        self.parsed.text.append(data)


def parse_html(text: str) -> Parsed:
    reader = _Reader()
    reader.feed(text)
    return reader.parsed


def pages(site: Path) -> dict[str, Parsed]:
    return {str(path.relative_to(site)): parse_html(path.read_text(encoding="utf-8"))
            for path in sorted(site.rglob("*.html"))}


def broken_links(site: Path) -> list[str]:
    """Every link inside the site whose file (and fragment) does not exist; web links are not followed."""
    parsed = pages(site)
    broken = []
    for page, content in parsed.items():
        for link in content.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(parts.path))) \
                if parts.path else page
            if not (site / target).is_file():
                broken.append(f"{page} -> {link}")
            elif parts.fragment and target in parsed and parts.fragment not in parsed[target].ids:
                broken.append(f"{page} -> {link} (no id {parts.fragment})")
    return broken


def subjects(site: Path) -> dict[str, str]:
    """What each page is about -> its path."""
    return {content.subject: page for page, content in pages(site).items() if content.subject}


def static_answers(site: Path) -> dict[str, list[str]]:
    """The prebuilt search index: question -> the ref ids it lists, in rank order."""
    text = (site / "assets" / "search-index.js").read_text(encoding="utf-8")
    payload = json.loads(text.removeprefix("window.KHIVE_SEARCH = ").rstrip().removesuffix(";"))
    return {question: parse_html(html).ref_ids for question, html in payload["answers"].items()}


async def operator_results(project: Path, *texts: str) -> list[dict[str, Any]]:
    """Each request's first result, run in-process as the operator (what the site reads as)."""
    runtime = open_runtime(project, {})
    try:
        out = []
        for text in texts:
            envelope = await dispatch(parse(text), Context(runtime, operator_principal(), CLI, presentation="verbose"))
            result = envelope["results"][0]
            assert result["ok"], result
            out.append(json.loads(json.dumps(result["result"], default=_plain)))
        return out
    finally:
        await runtime.aclose()


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True)


async def discover_top_async(project: Path, query: str, n: int = 3) -> list[str]:
    (answer,) = await operator_results(project, f"discover.search(query={json.dumps(query)}, limit={SEARCH_LIMIT})")
    return [str(ref["id"]) for ref in answer["refs"][:n]]


async def expected_subjects_async(project: Path) -> set[str]:
    """Every table, source and wiki page the project holds, as the verbs list them."""
    overview, sources, wiki = await operator_results(project, "overview()", "sl.list(limit=5000)",
                                                     "wiki.list(limit=5000)")
    connections = [str(c["id"]) for c in overview["connections"]]
    listed = await operator_results(project, *(f"scan.tables(connection={json.dumps(c)}, limit=10000)"
                                               for c in connections))
    found = {f"table:{c}:{t['id']}" for c, answer in zip(connections, listed, strict=True) for t in answer["tables"]}
    found |= {f"source:{s['connectionId']}:{s['name']}" for s in sources["sources"]}
    found |= {f"wiki:{p['scope']}:{p['key']}" for p in wiki["pages"]}
    return found


def discover_top(project: Path, query: str, n: int = 3) -> list[str]:
    return anyio.run(partial(discover_top_async, project, query, n))


def expected_subjects(project: Path) -> set[str]:
    return anyio.run(expected_subjects_async, project)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for(port: int, timeout_s: float = 60) -> None:
    """Until something listens on the loopback ``port`` (a server started in a subprocess)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


def operator_results_sync(project: Path, *texts: str) -> list[dict[str, Any]]:
    return anyio.run(partial(operator_results, project, *texts))
