"""The scan pack's share of ``overview()``: per connection the last scan, its tables by schema and the
largest tables; a connection never scanned is stale."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from khive.hookspecs import OverviewFacts, OverviewPart
from khive.project.runs import sync_time
from packs.scan.artifacts import cached_run_tables, latest_sync, read_report

if TYPE_CHECKING:
    from khive.services import Services

LARGEST = 3


def collect(runtime: Services) -> OverviewFacts:
    per: dict[str, dict[str, Any]] = {}
    stale: list[dict[str, str]] = []
    total = 0
    for name in sorted(runtime.config.connections):
        sync = latest_sync(runtime.project, name)
        if sync is None:
            per[name] = {"lastScan": None, "tables": 0}
            stale.append({"what": f"connection {name}", "why": "never scanned: nothing to search, look up or query",
                          "fix": f"khive scan {name}"})
            continue
        counts = read_report(runtime.project, name, sync)["counts"]
        tables = cached_run_tables(runtime, name, sync)
        schemas = Counter(str(table["db"]) for table in tables.values())
        largest = sorted(tables, key=lambda key: (-(tables[key].get("estimatedRows") or 0), key))[:LARGEST]
        per[name] = {"lastScan": sync_time(sync), "tables": counts["tables"] + counts["views"],
                     "columns": counts["columns"], "schemas": dict(sorted(schemas.items())),
                     "largestTables": [{"table": key, "estimatedRows": tables[key].get("estimatedRows")}
                                       for key in largest]}
        total += counts["tables"] + counts["views"]
    return OverviewFacts(connections=per, counts={"tables": total}, stale=stale)


PART = OverviewPart("scan", collect)
