"""The guide's candidate examples, written with this project's names (``facts.py``).

Each example is one request exactly as the guide prints it. A budgeted one carries ``BUDGET`` where
its ``budget_tokens`` goes: ``verify.py`` measures the answer and puts a budget there that fits. An
example whose verb is not installed is not proposed; one that fails when run is left out by
``verify.py``. Nothing here writes: an agent copying an example changes nothing in the project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from khive.dsl import parse
from khive.guide.facts import Facts, Featured, quoted

BUDGET = "__BUDGET__"
_PLAIN_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class Example:
    key: str  # what the guide's text refers to: "lookup", "sql@warehouse", ...
    text: str  # the request; BUDGET marks where a measured budget_tokens goes

    @property
    def budgeted(self) -> bool:
        return BUDGET in self.text

    @property
    def verbs(self) -> set[str]:
        return {op.verb for op in parse(self.text.replace(BUDGET, "1")).ops}


def sql_name(table: str, driver: str) -> str:
    """``schema.table`` as SQL: parts that are not plain lower-case identifiers are quoted for the driver."""
    quote = "`" if driver in ("bigquery", "mysql") else '"'
    return ".".join(part if _PLAIN_IDENTIFIER.match(part) else f"{quote}{part}{quote}" for part in table.split("."))


def plan_examples(facts: Facts) -> list[Example]:
    """Every candidate whose verbs are installed, the main connection's first."""
    examples = [Example("overview", "overview()")]
    if not facts.featured:
        examples += [Example("wiki_search", 'wiki.search(query="how we define revenue", limit=5)')]
        return [example for example in examples if example.verbs <= facts.verbs]
    main = facts.featured[0]
    c, t, word = quoted(main.connection), quoted(main.table), quoted(main.word)
    examples += [
        Example("search", f"discover.search(query={word}, limit=5)"),
        Example("search_budget", f"discover.search(query={word}, connection={c}, limit=10, budget_tokens={BUDGET})"),
        Example("search_bodies", f"discover.search(query={word}, render_bodies=true, limit=3)"),
        Example("lookup", f"discover.lookup(id={t}, connection={c}, budget_tokens={BUDGET})"),
        Example("entity", f"scan.entity(connection={c}, table={t})"),
        Example("sql", f"sql.execute(connection={c}, sql={quoted(_sql(main))})"),
        Example("chain", f'discover.search(query={word}, kinds=["table"], connection={c}, limit=1)\n'
                         f"  | scan.entity(connection={c}, table=$prev.refs[0].id)"),
        Example("help", "sql.execute(help=true)"),
    ]
    if main.measure and main.dimension:
        examples.append(Example("sl_query", f"sl.query(connection={c}, measures={quoted([main.measure])}, "
                                            f"dimensions={quoted([main.dimension])}, limit=10)"))
    if main.source:
        examples.append(Example("sl_search", f"sl.search(query={word}, limit=5)"))
    if main.usage:
        examples.append(Example("usage", f"historic_sql.usage(connection={c}, table={t})"))
    if facts.patterns.get(main.connection):
        examples.append(Example("patterns", f"historic_sql.patterns(connection={c})"))
    if facts.page:
        examples.append(Example("page", f"wiki.read(key={quoted(facts.page)})"))
    batch = [op for verb, op in (("scan.tables", f"scan.tables(connection={c}, query={word}, limit=5)"),
                                 ("sl.search", f"sl.search(query={word}, limit=5)"),
                                 ("wiki.search", f"wiki.search(query={word}, limit=5)")) if verb in facts.verbs]
    if len(batch) >= 2:
        examples.append(Example("batch", "[" + ", ".join(batch) + "]"))
    for other in facts.featured[1:]:
        oc, ot = quoted(other.connection), quoted(other.table)
        examples += [Example(f"entity@{other.connection}", f"scan.entity(connection={oc}, table={ot})"),
                     Example(f"sql@{other.connection}", f"sql.execute(connection={oc}, sql={quoted(_sql(other))})")]
    return [example for example in examples if example.verbs <= facts.verbs]


def _sql(featured: Featured) -> str:
    table = sql_name(featured.table, featured.driver)
    if featured.group_column:
        column = sql_name(featured.group_column, featured.driver)
        return f"SELECT {column}, count(*) AS n FROM {table} GROUP BY {column} ORDER BY n DESC LIMIT 10"
    return f"SELECT * FROM {table} LIMIT 5"
