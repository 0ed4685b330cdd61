"""The agent guide: a short markdown skill on using khive well, written into projects by ``khive setup-agents``.

The ``request`` tool description points agents at it (``SKILL_PATH``); the text itself ships here so
every installation has the same guide and a test can check it names only real verbs.
"""

from __future__ import annotations

SKILL_PATH = ".claude/skills/khive/SKILL.md"

GUIDE = """\
---
name: khive
description: Find, understand and query the company's data (tables, metrics, playbooks, query history) through
  khive's one MCP tool, `request`. Use it before writing SQL against the warehouse.
---

# Working with khive

khive has ONE tool, `request`. Its `ops` argument is a small DSL; the answer is an envelope whose
`results[i]` is `{ok, verb, result}` or `{ok: false, verb, error: {code, message, details}}`.

## Start with discover
- `discover.search(query="net revenue by region")` ranks wiki pages, semantic-layer sources,
  measures and scanned tables/columns together. Read the `floor` first: warnings and rules that
  always apply (e.g. how revenue is defined).
- `discover.lookup(id="table:shop:sales.orders", budget_tokens=800)` returns one entity with its
  neighbours, usage (how people query it) and evidence, cut to fit the budget.
- Only then write SQL: `sql.execute(connection="shop", sql="SELECT ...")` runs read-only, row-limited.
  Prefer `sl.query(connection=..., measures=[...], dimensions=[...])` where a measure exists.

## Batch independent questions
`[scan.tables(connection="shop", query="refunds"), sl.search(query="revenue"), wiki.search(query="refunds")]`
runs concurrently (up to 100 ops); one failure never aborts the others. Batch instead of calling
the tool several times in a row.

## Chain dependent steps
```text
discover.search(query="support tickets", kinds=["table"], limit=1)
  | scan.entity(connection="shop", table=$prev.refs[0].id)
```
runs in order; `$prev` is the previous op's result (`$prev.refs[0].id`, `$prev.rows[2]`). After a
failure the rest of the chain is aborted, and says so.

## Budgets and size
- Pass `budget_tokens=` to discover verbs and `limit=` to searches; ask for more only when needed.
- `presentation="agent"` (the default) is compact; `verbose` is the canonical full form.
- `any.verb(help=true)` returns a verb's parameters; `verbs()` lists every verb.

## Errors and permissions
- A DSL syntax error is an MCP `invalid_params` error with line, column and a fix
  (`did you mean query="revenue"?`): fix the text and resend.
- `limit_exceeded` means an input is over one of the project's limits (a long search query, a huge
  YAML source or page): its message names the limit; send less (fewer, sharper query words).
- Operator verbs (`scan.run`, `sl.bootstrap`, `historic_sql.ingest`, `wiki.delete`, `audit.query`) are
  refused over MCP with `permission_denied`: ask the person to run them with the khive CLI.
- Write what you learn back: `wiki.write(key="sales/<topic>", summary="...", body="...", kind="note")`;
  use `kind="warning"` for traps, and `relations={"supersedes": ["old-key"]}` to retire a page.
"""
