"""The deterministic provider, and the inputs and prompts every provider works from.

Deterministic digests are pure functions of the staged content (bands, never numbers), so the same
staged file always yields the same usage and the same patterns, byte for byte:

* usage: the frequency tier, the higher of the absolute one (executions band: >= 1k high, 10-1k mid, below
  low) and the table's place in its own workload (``workloadTier``: against the busiest table), the WHERE
  and GROUP BY columns of high or mid frequency (the three most frequent when none is), the observed joins,
  and a narrative that says the same in sentences; columns and joins are listed by name, never by how
  often they are used, so a digest changes only when a band does (ADR 0033);
* patterns: one per candidate table set (bucketize: two tables or more, enough distinct users; the
  ``MAX_PATTERNS`` most executed), slug from the table names, the set's most executed template as the
  definition, the semantic-layer sources over its tables as ``slRefs``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from packs.historic_sql.schemas import CommonJoin, PatternOutput, PatternsOutput, UsageOutput, output_schema

MAX_PATTERNS = 25
MAX_COLUMNS = 8
MAX_TEMPLATE_IDS = 200  # per pattern; ids are listed most executed first
_TIERS = {">50k": "high", "5k-50k": "high", "1k-5k": "high", "100-1k": "mid", "10-100": "mid", "<10": "low"}
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_LATE = {"recent": "more than a week", "older": "more than a month"}  # recencyBucket -> words
SQL_PER_SET = 5  # canonical SQL of a set's most executed templates, in what an LLM provider is given


_RANK = ("high", "mid", "low")


def frequency_tier(executions_band: str, workload_tier: str | None = None) -> str:
    """The higher of the absolute tier (by executions band) and the tier within the connection's workload."""
    tiers = [_TIERS.get(executions_band, "low"), workload_tier if workload_tier in _RANK else "low"]
    return min(tiers, key=_RANK.index)


def _columns(entries: Sequence[Sequence[str]]) -> list[str]:
    """Columns of high or mid frequency (staged lists are sorted by band, then name), listed by name: a column
    moving from mid to high is no change in what the digest says, so it must not reorder it."""
    common = [name for name, freq in entries if freq in ("high", "mid")]
    return sorted((common or [name for name, _ in entries[:3]])[:MAX_COLUMNS])


def _short(table: str) -> str:
    return table.rsplit(".", 1)[-1]


def _listing(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def usage(content: Mapping[str, Any]) -> UsageOutput:
    stats = content["stats"]
    clauses = content.get("columnsByClause", {})
    filters = _columns(clauses.get("where", []))
    group_bys = _columns(clauses.get("groupBy", []))
    joins = sorted((CommonJoin(table=join["withTable"], on=[f"{mine} = {theirs}" for mine, theirs in join["on"]])
                    for join in content.get("observedJoins", [])[:MAX_COLUMNS]), key=lambda j: (j.table, j.on))
    tier = frequency_tier(stats["executionsBucket"], stats.get("workloadTier"))
    busiest = " among this connection's most-queried tables" if stats.get("workloadTier") == "high" else ""
    sentences = [f"{_short(content['table'])} is queried {stats['executionsBucket']} times in the window by "
                 f"{stats['distinctUsersBucket']} users ({tier} frequency{busiest}; p95 runtime "
                 f"{stats['p95RuntimeBucket']})."]
    if stats.get("recencyBucket") in _LATE:
        sentences.append(f"It was last queried {_LATE[stats['recencyBucket']]} before the newest query in the "
                         "history.")
    if filters:
        sentences.append(f"Queries usually filter on {_listing(filters)}.")
    if group_bys:
        sentences.append(f"They group by {_listing(group_bys)}.")
    if joins:
        sentences.append("Joined to " + "; ".join(f"{j.table} on {', '.join(j.on)}" for j in joins) + ".")
    if stats.get("errorRateBucket") not in (None, "none", "unknown"):
        sentences.append(f"Error rate {stats['errorRateBucket']}.")
    return UsageOutput(narrative=" ".join(sentences), frequencyTier=tier,  # type: ignore[arg-type]
                       commonFilters=filters, commonGroupBys=group_bys, commonJoins=joins)


def patterns(doc: Mapping[str, Any], sl_sources: Mapping[str, Sequence[str]]) -> PatternsOutput:
    """One pattern per co-occurring table set; ``sl_sources`` maps a table key to its SL source names."""
    out: list[PatternOutput] = []
    taken: set[str] = set()
    sql = _sql_by_id(doc)
    for table_set in doc.get("tableSets", [])[:MAX_PATTERNS]:
        tables = list(table_set["tables"])
        slug = _slug(tables, taken)
        taken.add(slug)
        templates = table_set["templates"]
        definition = next((text for t in templates if (text := t.get("canonicalSql") or sql.get(t["id"]))), "")
        names = [_short(t) for t in tables]
        out.append(PatternOutput(
            slug=slug, title=f"{_listing(names)} together",
            narrative=(f"{len(templates)} query template{'s' if len(templates) != 1 else ''} read "
                       f"{_listing(tables)} together, run {table_set['executionsBucket']} times by "
                       f"{table_set['distinctUsersBucket']} users."),
            definitionSql=definition or f"-- {len(templates)} templates over {', '.join(tables)}",
            tablesInvolved=tables,
            slRefs=sorted({name for table in tables for name in sl_sources.get(table, ())}),
            constituentTemplateIds=[t["id"] for t in templates[:MAX_TEMPLATE_IDS]]))
    return PatternsOutput(patterns=out)


def _sql_by_id(doc: Mapping[str, Any]) -> dict[str, str]:
    return {t["id"]: t["canonicalSql"] for t in doc.get("templates", [])}


def _slug(tables: Sequence[str], taken: set[str]) -> str:
    base = "-".join(part for part in (_NOT_SLUG.sub("-", _short(t).lower()).strip("-") for t in tables) if part)
    base = (base or "tables")[:60].strip("-")
    if base not in taken:
        return base
    qualified = "-".join(_NOT_SLUG.sub("-", t.lower()).strip("-") for t in tables)[:80].strip("-")
    candidate, n = qualified, 2
    while candidate in taken:
        candidate, n = f"{qualified}-{n}", n + 1
    return candidate


# ---- what LLM providers (agent, sampling) are given ------------------------------------------------------------

SYSTEM_PROMPT = ("You summarise how analysts use a data warehouse, from aggregated query history. Answer with one "
                 "JSON object that matches the given JSON schema and nothing else. Be concise and concrete: name "
                 "columns and tables exactly as given; never invent ones that are not in the input.")


def usage_input(content: Mapping[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    return {"table": content["table"], "columns": list(columns), "staged": dict(content)}


def patterns_input(doc: Mapping[str, Any], sl_sources: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The candidate table sets, each with the canonical SQL of its most executed templates (the whole
    template list stays in the staged file: it can be tens of megabytes)."""
    sql = _sql_by_id(doc)
    sets = [{**s, "templates": [{**t, "canonicalSql": sql[t["id"]]} if i < SQL_PER_SET and t["id"] in sql else t
                                for i, t in enumerate(s["templates"])]}
            for s in list(doc.get("tableSets", []))[:MAX_PATTERNS]]
    return {"tableSets": sets, "slSources": {t: list(sl_sources.get(t, ())) for s in sets for t in s["tables"]}}


def prompt(kind: str, inputs: Mapping[str, Any]) -> str:
    task = ("Describe how this table is used: a short narrative, its frequency tier, the columns it is commonly "
            "filtered and grouped by, and the tables it is commonly joined to."
            if kind == "usage" else
            "Identify recurring analytical intents that span two tables or more. For each give a slug, a title, a "
            "narrative, a representative definitionSql, the tables involved, the semantic-layer sources involved "
            "(slRefs) and the template ids it is made of.")
    schema = orjson.dumps(output_schema(kind)).decode()
    return f"{task}\n\nJSON schema of the answer:\n{schema}\n\nInput:\n{orjson.dumps(dict(inputs)).decode()}"
