"""The historic_sql pack's share of ``overview()``: per connection with history on, the last ingest, the
most-queried tables and the live pattern pages; an ingest that is missing or older than the latest scan
is stale (pattern pages marked ``stale_since`` are wiki pages: the wiki's part reports them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from khive.errors import ConfigError
from khive.hookspecs import OverviewFacts, OverviewPart
from khive.project.runs import completed_runs, sync_time
from packs.historic_sql import pages
from packs.historic_sql.catalog import LIVE
from packs.historic_sql.config import connection_settings
from packs.historic_sql.stage import read_manifest, sync_ids

if TYPE_CHECKING:
    from khive.services import Services

TOP_TABLES = 5


def collect(runtime: Services) -> OverviewFacts:
    per: dict[str, dict[str, Any]] = {}
    stale: list[dict[str, str]] = []
    patterns_total = 0
    for name, connection in sorted(runtime.config.connections.items()):
        try:
            if not connection.historicSql or not connection_settings(name, connection.historicSql).enabled:
                continue
        except ConfigError:
            continue  # historic_sql.probe and ingest say what is wrong with the block
        ingests = sync_ids(runtime.project, name)
        if not ingests:
            per[name] = {"lastIngest": None}
            stale.append({"what": f"query history of {name}", "why": "never ingested: no usage or join patterns",
                          "fix": f"khive ingest {name}"})
            continue
        manifest = read_manifest(runtime.project, name, ingests[-1])
        totals = manifest.get("tableTotals") or {}
        top = sorted(totals, key=lambda key: (-int(totals[key].get("executions") or 0), key))[:TOP_TABLES]
        found = pages.existing_pages(runtime.files, name)
        live = [page for page in found.values() if not page.front.get("stale_since")]
        per[name] = {"lastIngest": sync_time(ingests[-1]), "templates": (manifest.get("counts") or {}).get("templates"),
                     "topTables": [{"table": key, "executions": totals[key].get("executions")} for key in top],
                     "patterns": len(live)}
        patterns_total += len(live)
        scans = completed_runs(runtime.project / "raw-sources" / name / LIVE)
        if scans and scans[-1] > ingests[-1]:
            stale.append({"what": f"usage of {name}", "why": f"ingested {sync_time(ingests[-1])}, before the latest "
                                                             f"scan ({sync_time(scans[-1])})",
                          "fix": f"khive ingest {name}"})
    return OverviewFacts(connections=per, counts={"patterns": patterns_total}, stale=stale)


PART = OverviewPart("historic_sql", collect)
