"""The guide's markdown: the generated part (this project, then how to use khive on it, around the examples
that ran) and the merge that keeps what a person wrote outside the markers.

Runnable examples are fenced as ```` ```khive ```` blocks, one request each, so a test (or an agent)
can run every one as written. Advice that would change the project (``wiki.write``) stays in prose.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from khive.agent_guide import BEGIN, EARLIER_GUIDES, END, FRONTMATTER, NOTES
from khive.guide.facts import Facts
from khive.guide.verify import BudgetFigures, Checked

FENCE = "```"
_OPERATOR_HINTS = ("scan.run", "historic_sql.ingest", "sl.bootstrap", "sl.import_dbt", "wiki.delete", "audit.query")


def merge_guide(existing: str | None, generated: str) -> str:
    """The file to write: ``existing`` with its generated part replaced; a new file when there is none."""
    block = f"{BEGIN}\n{generated.strip()}\n{END}"
    fresh = f"{FRONTMATTER}\n# Working with khive\n\n{block}\n\n{NOTES}"
    if existing is None or hashlib.sha256(existing.encode()).hexdigest() in EARLIER_GUIDES:
        return fresh
    start, end = existing.find(BEGIN), existing.find(END)
    if start >= 0 and end > start:
        return existing[:start] + block + existing[end + len(END):]
    return existing.rstrip("\n") + "\n\n" + block + "\n"  # a file of the person's own: add ours after it


def render_generated(facts: Facts, checked: Sequence[Checked]) -> str:
    ran = {item.example.key: item for item in checked}
    out: list[str] = [
        "khive has ONE tool, `request`. Its `ops` argument is a small DSL; the answer is an envelope whose",
        "`results[i]` is `{ok, verb, result}` or `{ok: false, verb, error: {code, message, details}}`.",
        "Every `khive` block below is one request that ran on this project when this guide was written.",
        "",
    ]
    out += _project(facts)
    out += _section("Start with overview and discover", ran, [
        ("overview", "says what is here: each connection and what it holds, when it was last scanned and its "
                     "history read, counts of tables, sources, pages and patterns, and what is stale. It is "
                     "cheap: call it first."),
        ("search", "ranks wiki pages, semantic-layer sources and measures, tables and columns together. Read the "
                   "`floor` first: warnings and rules that always apply. When `coverage.thin` is true or "
                   "`questions` is not empty, the best refs miss part of the question: put those questions to "
                   "your user rather than guess (`possiblyRelevant` lists pages that only mention the missing "
                   "words)."),
        ("search_bodies", "also returns the text of the best pages and semantic-layer sources (`delivered`, "
                          "capped), so one call replaces a read per hit."),
        ("lookup", "returns one entity with its neighbours, its usage (how people query it) and evidence, cut to "
                   "the budget." + _figures(ran.get("lookup"))),
    ])
    out += _section("Query", ran, [
        ("entity", "everything known about one table: columns with types and sample values, keys, foreign keys "
                   "in and out, and how people use it."),
        ("sql", "runs one read-only statement, row-limited (`limit=`, default 100); the answer says `truncated`."),
        ("sl_query", "computes a semantic-layer measure by a dimension and runs the SQL read-only. Prefer it "
                     "where a measure exists: it carries the agreed definition."),
        ("sl_search", "finds sources, measures and dimensions by meaning."),
    ])
    out += _section("Batch independent questions", ran, [
        ("batch", "runs concurrently (up to 100 ops); one failure never aborts the others. Batch instead of "
                  "calling the tool several times in a row."),
    ])
    out += _section("Chain dependent steps", ran, [
        ("chain", "runs in order; `$prev` is the previous op's result (`$prev.refs[0].id`, `$prev.rows[2]`). "
                  "After a failure the rest of the chain is aborted, and says so."),
    ])
    out += _section("How people use the data", ran, [
        ("usage", "how often a table is queried, by how many people, its common filters, groupings and joins."),
        ("patterns", "tables queried together, each a wiki page (`historic-sql/<slug>`) with its typical SQL."),
        ("page", "reads a page people wrote; pages of kind `warning` and `rule` override what the schema suggests."),
    ])
    others = [(key, "") for key in ran if "@" in key]
    out += _section("The other connections", ran, others)
    out += _budgets(ran)
    out += _errors(facts)
    return "\n".join(out).rstrip() + "\n"


def _project(facts: Facts) -> list[str]:
    overview: Mapping[str, Any] = facts.overview
    if not overview:
        return ["## This project", "", "The `overview` verb is not installed here: call `verbs()` to see what is.",
                ""]
    lines = [f"## This project: {overview.get('project')}", ""]
    for entry in overview.get("connections") or []:
        lines.append(f"- `{entry['id']}` ({entry['driver']}): {_holds(entry)}")
        top = entry.get("topTables") or []
        if top:
            lines.append("  - Most queried: " + ", ".join(f"`{t['table']}` ({_count(t['executions'], 'run')})"
                                                       for t in top))
        elif entry.get("largestTables"):
            lines.append("  - Largest: " + ", ".join(f"`{t['table']}` (about {t.get('estimatedRows') or 0} rows)"
                                                     for t in entry["largestTables"]))
        measures = facts.measures.get(entry["id"]) or []
        if measures:
            lines.append("  - Measures: " + ", ".join(f"`{name}`" for name in measures))
    topics = (overview.get("wiki") or {}).get("topics") or []
    if topics:
        lines.append("- Wiki topics: " + ", ".join(f"`{t['topic']}` ({_count(t['pages'], 'page')})" for t in topics))
    for item in overview.get("stale") or []:
        lines.append(f"- Stale: {item['what']}: {item['why']} (the person can fix it: `{item['fix']}`)")
    if not overview.get("connections"):
        lines.append("- No connections yet: the person adds them to khive.yaml and runs `khive scan <name>`.")
    return [*lines, ""]


def _holds(entry: Mapping[str, Any]) -> str:
    parts = [str(entry["description"])] if entry.get("description") else []
    if entry.get("lastScan"):
        schemas: Mapping[str, int] = entry.get("schemas") or {}
        listed = ", ".join(f"{name} {count}" for name, count in sorted(schemas.items(), key=lambda i: (-i[1], i[0])))
        parts.append(f"{entry.get('tables', 0)} tables" + (f" ({listed})" if listed else "") +
                     f", scanned {entry['lastScan']}")
    else:
        parts.append("not scanned yet")
    if entry.get("lastIngest"):
        parts.append(f"query history read {entry['lastIngest']} ({entry.get('templates') or 0} query templates, "
                     f"{entry.get('patterns') or 0} pattern pages)")
    if entry.get("sources"):
        parts.append(f"{entry['sources']} semantic-layer sources")
    return "; ".join(parts)


def _section(title: str, ran: Mapping[str, Checked], items: Sequence[tuple[str, str]]) -> list[str]:
    present = [(ran[key], text) for key, text in items if key in ran]
    if not present:
        return []
    lines = [f"## {title}", ""]
    for item, text in present:
        lines += [f"{FENCE}khive", item.text, FENCE]
        if text:
            lines.append(text)
        lines.append("")
    return lines


def _figures(item: Checked | None) -> str:
    figures: BudgetFigures | None = item.budget if item else None
    if figures is None:
        return ""
    kept = ", ".join(figures.kept) or "nothing beyond the core"
    dropped = f" and sheds {', '.join(figures.dropped)}" if figures.dropped else ""
    return (f" On this project its core (ids, paths and hashes, never shed) is about {_round(figures.core)} "
            f"tokens and the whole answer about {_round(figures.full)}; `budget_tokens={figures.budget}` keeps "
            f"{kept}{dropped}.")


def _budgets(ran: Mapping[str, Checked]) -> list[str]:
    lines = ["## Budgets and size", ""]
    search = ran.get("search_budget")
    if search is not None:
        lines += [f"{FENCE}khive", search.text, FENCE,
                  "sheds whole sections (excerpts, then related, then neighbours, then summaries) until the answer "
                  "fits, never the ids, paths or hashes, and reports what it dropped." + _figures(search), ""]
    lines += [
        "- The budgets above were measured on this project. When an answer says `fits: false`, its",
        "  `budget.tokens.core` is the least that can fit: ask again with at least that much.",
        "- Pass `limit=` to searches; ask for more only when needed. `presentation=\"agent\"` (the default) is",
        "  compact; `\"verbose\"` is the full canonical form.",
        "- Values in `rows` are exact: decimals (and SUM/AVG results on PostgreSQL) and integers beyond",
        "  2^53 are strings (`\"1234.50\"`), NaN/Infinity too; times are ISO 8601, intervals ISO durations",
        "  (`\"P1M2D\"`), bytes `\"\\x...\"` hex. Parse numbers as decimals, not floats.",
    ]
    if "help" in ran:
        lines += ["- A verb's parameters, with `help=true`:", "", f"{FENCE}khive", ran["help"].text, FENCE]
    return [*lines, ""]


def _errors(facts: Facts) -> list[str]:
    operators = [name for name in _OPERATOR_HINTS if name in facts.operators]
    lines = ["## Errors, permissions and writing back", "",
             "- A DSL syntax error is an MCP `invalid_params` error with line, column and a fix",
             "  (`did you mean query=\"revenue\"?`): fix the text and resend.",
             "- A failed op says why in `error.code` and `error.message`, and `error.details.fix` when there is one.",
             "  A `config_error` about an environment variable is for the person: the server was started without it.",
             "- `limit_exceeded` means an input is over one of the project's limits (a long search query, a huge",
             "  YAML source or page): its message names the limit; send less (fewer, sharper query words)."]
    if operators:
        lines += ["- Operator verbs (" + ", ".join(f"`{name}`" for name in operators) + ") are refused over MCP",
                  "  with `permission_denied`: ask the person to run them with the khive CLI."]
    if "wiki.write" in facts.verbs:
        lines += ["- Write what you learn back with `wiki.write`: a `key` like `<topic>/<page>`, a one-line",
                  "  `summary` and a markdown `body`; `kind=\"warning\"` for traps, and",
                  "  `relations={\"supersedes\": [...]}` to retire a page. Check with `wiki.search` first, to extend",
                  "  a page rather than duplicate it; when you extend one, pass the `sha256` `wiki.read` gave as",
                  "  `base_sha256`, so that an edit made meanwhile by someone else is not overwritten."]
    return lines


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _round(tokens: int) -> int:
    return round(tokens, -1)
