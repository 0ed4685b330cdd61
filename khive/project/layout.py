"""``khive init``: the project layout and a starter khive.yaml."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from khive.project.locate import CONFIG_NAME, STATE_DIR

STARTER_CONFIG = """\
# khive project configuration. Secrets are env:VAR references, never literal values.
version: 1

# packs: [core]           # default: every installed pack (KHIVE_PACKS overrides)

auth:
  default: allow          # public verbs; operator verbs are CLI-only unless a rule allows them
  rules: []
  # - {effect: deny, principal: "agent:*", verb: "wiki.delete", reason: "agents do not delete pages"}

audit:
  store: sqlite           # or postgres with url: env:KHIVE_AUDIT_URL

server:
  tokens: []
  # - {token: env:KHIVE_HTTP_TOKEN, principal: "agent:ci-bot"}

# redaction:                # more to redact wherever text leaves the warehouse (built-in: credentials)
#   patterns: ["project (falcon|osprey)"]

connections: {}
# One entry per database (replace the {} above). Connection strings are env:VAR references: export
# the variable, or put VAR=... in .khive/env (git-ignored; `khive setup-agents` explains both).
#   warehouse:                         # PostgreSQL
#     driver: postgres
#     url: env:DATABASE_URL            # e.g. host=db.internal dbname=analytics user=khive_reader
#     description: "analytics replica: orders, customers, payments"
#     schemas: {exclude: ["staging_*"]}
#     tables: {exclude: ["tmp_*", "audit.raw_events"]}   # schema.table or table globs; include: [...] too
#     historicSql:                     # query history from pg_stat_statements (see the README)
#       enabled: true
#       url: env:DATABASE_HISTORY_URL  # optional: a role with pg_read_all_stats, apart from the reader
#   local:                             # DuckDB file, relative to the project
#     driver: duckdb
#     path: data/shop.duckdb
#     historicSql: {enabled: true, queryLog: logs/queries.jsonl}   # an exported query log
#   chinook:                           # SQLite file
#     driver: sqlite
#     path: data/chinook.sqlite
#     sample_values: {enabled: false}
#   shopdb:                            # MySQL or MariaDB (pip install 'khive[mysql]')
#     driver: mysql
#     url: env:MYSQL_URL               # e.g. mysql://khive_reader:...@db.internal:3306/shop
#     historicSql: {enabled: true, queryLog: logs/mysql-queries.jsonl}   # an exported query log
#   bq:                                # BigQuery (pip install 'khive[bigquery]')
#     driver: bigquery
#     project: my-gcp-project
#     region: us                       # where the datasets live: its INFORMATION_SCHEMA and job history
#     credentials: env:GOOGLE_APPLICATION_CREDENTIALS   # optional: a service-account key file; default: ADC
#     historicSql: {enabled: true}     # INFORMATION_SCHEMA.JOBS_BY_PROJECT (roles/bigquery.resourceViewer)
#   snow:                              # Snowflake (pip install 'khive[snowflake]')
#     driver: snowflake
#     url: env:SNOWFLAKE_URL           # snowflake://USER:PASSWORD@ORG-ACCOUNT/ANALYTICS?warehouse=WH&role=READER
#     database: ANALYTICS
#     historicSql: {enabled: true}     # ACCOUNT_USAGE.QUERY_HISTORY (IMPORTED PRIVILEGES on SNOWFLAKE)
"""

@dataclass(frozen=True, slots=True)
class ProjectDirectory:
    """A folder of a project that a pack owns (the ``khive_project_directories`` hook), relative to the root.

    ``path`` may name the operator as ``{user}`` and any connection as ``*``. ``khive init`` creates the
    committed folders (for a ``*`` path, the part before the first ``*``) and writes the machine-local ones
    into the ``.gitignore`` it starts the project with.
    """

    path: str
    committed: bool = True
    purpose: str = ""


# What a project keeps in git (ADR 0033): what people review and what cost work to make. Scan and ingest runs
# are machine-local evidence (the next scan or ingest writes them again), .khive/ is rebuilt state and secrets.
def gitignore_text(directories: Sequence[ProjectDirectory]) -> str:
    committed = sorted({d.path.split("/", 1)[0] + "/" for d in directories if d.committed})
    ignored = [d.path.rstrip("/") + "/" for d in directories if not d.committed]
    return (f"# Written by khive init. Commit {CONFIG_NAME}, {', '.join(committed)}; what follows stays on this\n"
            '# machine (README: "Keeping a project in git").\n'
            + "".join(f"{path}\n" for path in [f"{STATE_DIR}/", *ignored]))


def _created_folder(directory: ProjectDirectory, user: str) -> str | None:
    """The folder init makes for a declared one: committed folders only, up to the first ``*``."""
    if not directory.committed:
        return None
    path = directory.path.format(user=user)
    if "*" in path:
        path = path.split("*", 1)[0].rstrip("/")
    return path or None


def init_layout(root: Path, user: str, directories: Sequence[ProjectDirectory]) -> list[str]:
    """Create what is missing of the packs' folders, khive.yaml and .gitignore; never overwrite. Returns the
    paths created."""
    created: list[str] = []
    root.mkdir(parents=True, exist_ok=True)
    folders = [folder for d in directories if (folder := _created_folder(d, user))]
    for relative in dict.fromkeys([*folders, STATE_DIR]):
        path = root / relative
        if not path.exists():
            path.mkdir(parents=True)
            created.append(relative + "/")
    config = root / CONFIG_NAME
    if not config.exists():
        config.write_text(STARTER_CONFIG, encoding="utf-8")
        created.append(CONFIG_NAME)
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text(gitignore_text(directories), encoding="utf-8")
        created.append(".gitignore")
    return created
