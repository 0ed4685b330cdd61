"""``overview()``: what is in this project, cheaply, for an agent's first call and the MCP instructions.

Every pack contributes facts read from its own files (``khive_overview_parts``); this module merges
them: one entry per connection (driver, description, then each pack's facts about it), project-wide
counts, each pack's own section, and one list of what is stale, each item with its fix. No part
touches the retrieval index or a database, so the answer costs file reads only.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from khive.errors import KhiveError

if TYPE_CHECKING:
    from khive.services import Services

# What a damaged file can raise while a part reads it (orjson and YAML errors are ValueErrors).
_UNREADABLE = (KhiveError, OSError, ValueError, LookupError, TypeError)


def collect_overview(runtime: Services, *, packs: Collection[str] | None = None) -> dict[str, Any]:
    """The merged facts of every pack's part (or of ``packs`` only); a part that fails is named in ``problems``."""
    connections: dict[str, dict[str, Any]] = {
        name: {"id": name, "driver": config.driver, "description": config.description}
        for name, config in sorted(runtime.config.connections.items())}
    counts: dict[str, int] = {"connections": len(connections)}
    sections: dict[str, Any] = {}
    stale: list[dict[str, str]] = []
    problems: list[dict[str, str]] = []
    for contributed in runtime.plugins.hook.khive_overview_parts():
        for part in contributed:
            if packs is not None and part.name not in packs:
                continue
            try:
                facts = part.collect(runtime)
            except _UNREADABLE as exc:  # one damaged file must not hide what the other packs know
                problems.append({"part": part.name, "error": f"{type(exc).__name__}: {exc}"})
                continue
            for name, values in facts.connections.items():
                if name in connections:
                    connections[name].update(values)
            for key, value in facts.counts.items():
                counts[key] = counts.get(key, 0) + value
            stale.extend(dict(item) for item in facts.stale)
            if facts.extra:
                sections[part.name] = dict(facts.extra)
    return {"project": runtime.config.name or runtime.project.name, "connections": list(connections.values()),
            "counts": counts, **sections, "stale": stale, "problems": problems}
