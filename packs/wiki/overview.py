"""The wiki pack's share of ``overview()``: how many pages, the top-level topics (the first part of the
keys, e.g. ``sales`` for ``sales/revenue-playbook``) and the pages marked stale but not archived.

Staleness is read from the frontmatter lines, not a full parse: this answer must stay cheap for
thousands of pages, and ``wiki.read`` reports a page that does not parse.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from khive.hookspecs import OverviewFacts, OverviewPart
from packs.wiki.page import GLOBAL, locate, split_frontmatter

if TYPE_CHECKING:
    from khive.services import Services

TOPICS = 12
_STALE = re.compile(r"^stale_since:\s*['\"]?([0-9-]+)", re.M)
_ARCHIVED = re.compile(r"^archived:\s*true\b", re.M | re.I)


def collect(runtime: Services) -> OverviewFacts:
    topics: Counter[str] = Counter()
    personal = 0
    stale: list[dict[str, str]] = []
    for path in runtime.files.list("wiki/", suffix=".md"):
        found = locate(path)
        if found is None:
            continue
        key, scope = found
        if scope != GLOBAL:
            personal += 1
            continue
        topics[key.split("/", 1)[0] if "/" in key else "(top level)"] += 1
        front, _, _ = split_frontmatter(runtime.files.read_text(path) or "")
        since = _STALE.search(front or "")
        if since and not _ARCHIVED.search(front or ""):
            stale.append({"what": f"wiki page {key}", "why": f"marked stale since {since.group(1)}",
                          "fix": f"update or archive it: wiki.read(key=\"{key}\") then wiki.write"})
    ranked = [{"topic": topic, "pages": count} for topic, count in
              sorted(topics.items(), key=lambda item: (-item[1], item[0]))[:TOPICS]]
    return OverviewFacts(counts={"pages": sum(topics.values()), "personalPages": personal}, stale=stale,
                         extra={"topics": ranked, "moreTopics": max(len(topics) - TOPICS, 0)})


PART = OverviewPart("wiki", collect)
