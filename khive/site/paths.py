"""Where each page of the site lives, and how one page links to another.

Every link is relative to the page that holds it, so the same files work from ``file://`` (offline),
under ``khive site serve`` at ``/`` and under ``khive serve --http --site`` at ``/site/``. Names from
the warehouse (table ids, source names, wiki keys) become file names through :func:`slug`: a name
made only of safe lower-case characters is kept as it is; any other gets a short digest of the
original appended, so ``Orders`` and ``orders`` never land on one file, even on a case-insensitive disk.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from urllib.parse import quote

_UNSAFE = re.compile(r"[^a-z0-9._-]+")
MAX_SLUG_CHARS = 80

OVERVIEW = "index.html"
TABLES = "tables/index.html"
SOURCES = "sources/index.html"
WIKI = "wiki/index.html"
PATTERNS = "patterns.html"
REVIEW = "review.html"
AUDIT = "audit.html"
SEARCH = "search.html"
STYLESHEET = "assets/site.css"
SEARCH_SCRIPT = "assets/search.js"
SEARCH_INDEX = "assets/search-index.js"
AUDIT_SCRIPT = "assets/audit.js"


def slug(name: str) -> str:
    """A file-name-safe form of ``name``: the name itself when it is safe, else a cleaned form plus a digest."""
    cleaned = _UNSAFE.sub("_", name.lower()).strip("._") or "_"
    if cleaned == name and len(name) <= MAX_SLUG_CHARS:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned[:MAX_SLUG_CHARS]}-{digest}"


def table_page(connection: str, table: str) -> str:
    return f"tables/{slug(connection)}/{slug(table)}.html"


def source_page(connection: str, name: str) -> str:
    return f"sources/{slug(connection)}/{slug(name)}.html"


def wiki_page(scope: str, key: str) -> str:
    """``scope`` is ``global`` or ``user``; a key's slashes become folders, each part made safe."""
    parts = [slug(part) for part in key.split("/") if part]
    return f"wiki/{slug(scope)}/{'/'.join(parts) or '_'}.html"


def anchor(name: str) -> str:
    """An element id for a column, measure or dimension: the slug with a prefix, valid in HTML."""
    return "c-" + slug(name)


def href(from_page: str, to_page: str, fragment: str = "") -> str:
    """The relative link from one page to another (both site-relative paths), percent-encoded."""
    base = posixpath.dirname(from_page) or "."
    relative = posixpath.relpath(to_page, base)
    return quote(relative) + (f"#{fragment}" if fragment else "")
