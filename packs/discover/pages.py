"""Which wiki pages a search may return, and which it lifts: hard filters, relevance phases, scope inference.

* ``scopes`` is a hard filter on pages: each item is a tier (``global``, ``user``: the caller's own pages),
  a key prefix (``sales``: pages under ``sales/``), or both as a path (``wiki/global/sales``); a page stays
  when it matches any item. ``page_kind`` keeps pages of that kind. Tables and semantic-layer refs are not
  pages and are never dropped by them (``kinds=`` does that).
* ``relevance_phases`` names the phase(s) of the work: a page marked for one of them (``relevance:``) is
  lifted; a page marked only for other phases is dropped; unmarked pages and ``always`` pages stay.
* Without ``scopes``, the question's words infer them: a folder of the wiki whose name the question uses
  (``sales`` in "sales targets"), or whose pages carry a tag the question uses and no other folder's pages
  carry (its domain words); pages there are lifted, never filtered. Nothing inferred falls back to
  ``global``: no page is lifted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from khive.errors import InvalidArgs
from khive.index.morph import key
from packs.discover.forms import Term
from packs.discover.rank import Candidate, first_rank
from packs.discover.relations import GLOBAL
from packs.discover.text import split_words

USER = "user"
_PREFIX = re.compile(r"[a-z0-9][a-z0-9_\-]*(/[a-z0-9][a-z0-9_\-]*)*\Z")
SCOPE_LIFT = 0.5  # first ranks for a page in an inferred scope
PHASE_LIFT = 0.5  # first ranks for a page marked for the current phase
DOMAIN_HITS = 1  # tag words, found on no other folder's pages, a question must hold to infer the folder
ALWAYS = "always"


@dataclass(frozen=True)
class Scope:
    tier: str | None  # "global", a user name, or None for either
    prefix: str | None  # a key prefix without a trailing slash, or None for any

    def holds(self, meta: dict[str, Any]) -> bool:
        if self.tier is not None and meta.get("scope") != self.tier:
            return False
        page = str(meta.get("key", ""))
        return self.prefix is None or page == self.prefix or page.startswith(self.prefix + "/")

    def label(self) -> str:
        tier = {None: "", GLOBAL: "wiki/global/"}.get(self.tier, f"wiki/users/{self.tier}/")
        return (tier + (self.prefix or "")).rstrip("/") or "any"


def parse_scopes(items: Sequence[str], user: str) -> list[Scope]:
    """Scope items as (tier, prefix) pairs; InvalidArgs naming ``scopes`` for one that is neither."""
    out = []
    for raw in items:
        item = raw.strip().strip("/")
        tier: str | None = None
        if item in (GLOBAL, USER):
            out.append(Scope(GLOBAL if item == GLOBAL else user, None))
            continue
        if item == "wiki/global" or item.startswith("wiki/global/"):
            tier, item = GLOBAL, item.removeprefix("wiki/global").strip("/")
        elif item.startswith("wiki/users/"):
            owner, _, item = item.removeprefix("wiki/users/").partition("/")
            if owner != user:
                raise InvalidArgs(f"scopes: {raw!r} is {owner}'s tier; only your own pages are searched (use "
                                  "'user')", details={"field": "scopes", "value": raw})
            tier = user
        if item and not _PREFIX.match(item):
            raise InvalidArgs(f"scopes: {raw!r} is not a tier or a wiki path prefix; use 'global', 'user', a key "
                              "prefix such as 'sales' or a path such as 'wiki/global/sales'",
                              details={"field": "scopes", "value": raw})
        out.append(Scope(tier, item or None))
    return out


@dataclass
class PageFilter:
    scopes: list[Scope] | None = None
    page_kind: str | None = None
    phases: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return bool(self.scopes or self.page_kind or self.phases)

    def keeps(self, meta: dict[str, Any], *, pattern: bool = False) -> bool:
        if self.scopes is not None and not any(scope.holds(meta) for scope in self.scopes):
            return False
        if self.page_kind and meta.get("page_kind") != self.page_kind and not (pattern and self.page_kind == "pattern"):
            return False
        marked = [str(p) for p in meta.get("relevance") or []]
        if self.phases and marked and ALWAYS not in marked and not set(marked) & set(self.phases):
            return False  # declared for another phase of the work
        return True

    def for_phase(self, meta: dict[str, Any]) -> bool:
        return bool(set(self.phases) & {str(p) for p in meta.get("relevance") or []})


def apply(found: dict[str, Candidate], page_filter: PageFilter, inferred: Iterable[Scope]) -> None:
    """Drop the pages the filter refuses; lift those of the current phase and of the inferred scopes."""
    inferred = list(inferred)
    for doc_id, candidate in list(found.items()):
        if candidate.index_kind != "wiki":
            continue
        meta = candidate.metadata
        if not page_filter.keeps(meta, pattern=candidate.kind == "pattern"):
            del found[doc_id]
            continue
        if page_filter.for_phase(meta):
            candidate.add_bonus("phase", PHASE_LIFT * first_rank())
        if any(scope.holds(meta) for scope in inferred):
            candidate.add_bonus("scope", SCOPE_LIFT * first_rank())


@dataclass(frozen=True)
class Folders:
    """The wiki's folders (key prefixes) and the domain words of the top-level ones, built once per index
    generation."""

    names: tuple[str, ...]
    domains: dict[str, dict[str, str]]  # top-level folder -> {key: tag word} no other folder's pages carry


def folders_of(pages: Sequence[dict[str, Any]]) -> Folders:
    members: dict[str, list[dict[str, Any]]] = {}
    for meta in pages:
        parts = str(meta.get("key", "")).split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            members.setdefault("/".join(parts[:depth]), []).append(meta)
    return Folders(tuple(sorted(members)), _domain_words(members))


def infer(folders: Folders, query: str, terms: Sequence[Term]) -> tuple[list[Scope], dict[str, str]]:
    """Scopes the question points at, from the wiki's folders: (scopes, folder -> why)."""
    asked = {form for term in terms for form in term.forms}
    text = query.lower()
    why: dict[str, str] = {}
    for folder in folders.names:
        name = folder.rsplit("/", 1)[-1]
        domain = folders.domains.get(folder, {})
        if folder + "/" in text:
            why[folder] = f"the question names {folder}/"
        elif {key(word) for word in split_words(name)} & asked:
            why[folder] = f"the question uses the folder's name ({name})"
        elif len(domain.keys() & asked) >= DOMAIN_HITS:
            why[folder] = f"its pages are tagged {', '.join(sorted({domain[k] for k in domain.keys() & asked}))}"
    chosen = [f for f in why if not any(f != other and f.startswith(other + "/") for other in why)]
    return [Scope(None, folder) for folder in chosen], {folder: why[folder] for folder in chosen}


def _domain_words(folders: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, str]]:
    """Top-level folder -> {key: tag word} of the tags its pages carry and no other folder's pages do."""
    tops = {folder: members for folder, members in folders.items() if "/" not in folder}
    words: dict[str, dict[str, str]] = {}
    for folder, members in tops.items():
        own = {key(p) for p in split_words(folder)}
        words[folder] = {key(w): w for meta in members for tag in meta.get("tags") or []
                         for w in split_words(str(tag)) if key(w) not in own}
    owners: dict[str, int] = {}
    for found in words.values():
        for k in found:
            owners[k] = owners.get(k, 0) + 1
    return {folder: {k: w for k, w in found.items() if owners[k] == 1} for folder, found in words.items()}
