"""The error-code catalogue: every ``code`` an envelope, a daemon frame or an MCP error can carry (ADR 0039).

One entry per code: what it means, when it is raised, what the caller does about it. ``python -m
khive.docgen`` writes docs/errors.md from it; tests/meta/test_error_codes.py checks it against the codes
the code base actually raises, both ways. Codes are lower_snake nouns; renamed spellings are in
``khive.errors.LEGACY_CODES``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ErrorCode:
    code: str
    meaning: str
    when: str
    fix: str


def _c(code: str, meaning: str, when: str, fix: str) -> ErrorCode:
    return ErrorCode(code, meaning, when, fix)


REQUEST = (
    _c("parse_error", "the request text is not valid DSL or JSON form", "before dispatch; over MCP an "
       "invalid_params error with data.reason", "read data.hint and the excerpt's caret; docs/dsl.md"),
    _c("invalid_args", "an argument is missing, mistyped or out of range", "validating a verb's parameters",
       "details.errors names each field and the problem; `verb(help=true)` shows the schema"),
    _c("limit_exceeded", "an input is over a limit of khive.limits", "validating parameters",
       "details names the limit and the field; send less (or narrow the query)"),
    _c("unknown_verb", "no installed pack declares this verb", "resolving an op", "`verbs()` lists them"),
    _c("permission_denied", "the gate or the database refused the caller", "the gate (operator verbs over MCP) "
       "or a warehouse denying the role", "run operator verbs from the khive CLI; grant the role the access"),
    _c("write_conflict", "two ops of one batch write the same key, or a page changed since its base_sha256",
       "claiming write keys in a batch; wiki.write with base_sha256",
       "run them in a chain (`|`) or in separate requests; wiki.read the page again and redo the edit"),
    _c("ref_error", "a `$prev` path names nothing in the previous result", "substituting `$prev` in a chain",
       "check the previous verb's result shape in docs/verbs.md"),
    _c("answer_too_large", "an op's result did not fit in its MCP answer (1 MB with the others)", "after every "
       "op of an MCP request ran: the largest results are left out", "the op ran (details.succeeded): ask for it "
       "alone, narrower, or with save_to"),
    _c("result_too_deep", "a result nests deeper than server.maxResultDepth", "after a handler returns",
       "a pack bug, or raise the limit in khive.yaml"),
    _c("unencodable_value", "a result holds a value the value rule cannot encode", "encoding a result "
       "(khive/values.py)", "a pack bug: report it with the verb and arguments"),
    _c("internal_error", "a bug: an exception no pack turned into a typed error, or a result that breaks its "
       "declared model (details.stage = result_contract)", "anywhere; details.stage names where",
       "report it; `khive audit` shows what ran"),
    _c("not_found", "the named thing does not exist (packs use narrower codes)", "reading by name",
       "list what exists (wiki.list, sl.list, scan.tables)"),
)

BASES = (
    _c("khive_error", "the root class's default code, never meant to reach a caller", "a KhiveError raised "
       "without a code", "a bug: report it"),
    _c("op_error", "OpError's default code, never meant to reach a caller", "an OpError raised without a code",
       "a bug: report it"),
    _c("config_error", "khive.yaml or a pack's config section is invalid", "loading the project",
       "the message names the file, line and fix"),
    _c("pack_load_error", "a pack could not be loaded (unknown pack, missing requirement, duplicate verb)",
       "building the plugin manager", "install the pack's extra or fix KHIVE_PACKS"),
)

DAEMON = (
    _c("daemon_error", "the daemon answered with an error", "forwarding a request", "the message says why"),
    _c("daemon_unavailable", "no daemon answers and one could not be started", "the CLI or MCP server "
       "forwarding", "`khive daemon status`; KHIVE_NO_DAEMON=1 runs in process"),
    _c("daemon_connection_lost", "the daemon went away mid-request; the ops may or may not have run",
       "waiting for an answer", "check `khive audit` before resending a write"),
    _c("daemon_refused", "the daemon serves another user or config, or the hello was missing",
       "the daemon's handshake", "use this project's daemon (`khive daemon status`)"),
    _c("daemon_running", "a daemon already serves this config", "`khive daemon start`",
       "use it, or `khive daemon stop` first"),
    _c("daemon_stopping", "the daemon is shutting down", "a request during shutdown", "resend: a new one starts"),
    _c("daemon_untrusted", "the socket's owner or peer is not this user", "connecting to a daemon socket",
       "remove the foreign socket; never share KHIVE_HOME between users"),
    _c("frame_too_large", "a frame over the wire protocol's size limit", "reading a daemon frame",
       "send smaller requests"),
    _c("bad_frame", "a frame that is not the wire protocol", "reading a daemon frame",
       "a client bug: use khive's client"),
    _c("sampling_failed", "the client's LLM (MCP sampling) did not answer", "historic_sql.digest with sampling",
       "use provider=deterministic, or a client that supports sampling"),
    _c("audit_store_unavailable", "the audit trail cannot be written, so no op runs (write-ahead audit)",
       "starting an op", "fix audit.url or the .khive/ directory's permissions"),
)

DATA = (
    _c("connection_not_found", "khive.yaml declares no connection of this name", "any verb with connection=",
       "`scan.connections()` lists them"),
    _c("connection_failed", "the database did not accept the connection", "opening a driver",
       "check the url (env: references) and that the server accepts this role"),
    _c("driver_unavailable", "the driver's client library is not installed", "opening a connection",
       "install the extra the message names"),
    _c("query_failed", "the database rejected the statement", "sql.execute, sl.query, scan",
       "the message quotes the database (redacted); fix the SQL"),
    _c("statement_timeout", "the statement ran past its timeout", "running SQL", "narrow it, or raise "
       "timeout_s within the connection's ceiling"),
    _c("caller_left", "the client left (cancelled the call, timed out, quit) while its statement ran",
       "running SQL through the daemon; the statement is cancelled, nobody gets the answer", "only the audit "
       "shows it: nothing to do, or ask again"),
    _c("read_only_violation", "the database refused a write on the read-only session", "running SQL",
       "khive runs reads only"),
    _c("sql_refused", "the read-only SQL gate refused the statement (details.gate_code says why)",
       "sql.execute", "`sql.validate` explains; send one read-only SELECT"),
    _c("privileged_role", "the connection's role can read files or run programs through SQL",
       "before running agents' SQL", "connect with a SELECT-only role, or allowPrivilegedRole: true"),
    _c("pool_timeout", "every driver of the connection stayed busy for the op's timeout", "waiting for a driver",
       "retry, or raise the connection's pool size"),
    _c("pool_closed", "the runtime is shutting down", "waiting for a driver", "resend"),
    _c("scan_missing", "the connection has no scan yet", "verbs that read the latest scan",
       "`khive scan <connection>`"),
    _c("table_not_found", "no table of this name in the latest scan or ingest", "scan.entity, historic_sql.usage",
       "`scan.tables(connection=...)` lists them"),
    _c("table_ambiguous", "the table name exists in several schemas", "scan.entity", "qualify it: schema.table"),
    _c("column_not_found", "the table has no column of this name", "scan.entity with column=",
       "scan.entity without column= lists them"),
    _c("invalid_path", "a path outside the allowed folder, or malformed", "project file writes, save_to=",
       "a relative path inside the project"),
    _c("path_outside_project", "a path resolves outside the project", "project file access",
       "a relative path inside the project"),
    _c("path_not_found", "the given path does not exist", "sl.import_dbt", "check the path"),
    _c("invalid_encoding", "a project file is not UTF-8", "reading project files", "re-save it as UTF-8"),
    _c("invalid_author", "a commit author that git would reject", "project writes with git commits",
       "use 'Name <email>' or a plain name"),
)

PACKS = (
    _c("page_not_found", "no wiki page with this key", "wiki.read, wiki.delete", "`wiki.list()`"),
    _c("invalid_page", "the page's frontmatter or body breaks the wiki's rules", "wiki.write",
       "details name the field and the fix"),
    _c("edge_rule_violation", "a link between pages breaks a rule (supersedes, contradicts)", "wiki.write",
       "details.problems lists each"),
    _c("source_not_found", "no semantic-layer source of this name", "sl.read", "`sl.list()`"),
    _c("source_ambiguous", "the source name exists in several connections", "sl.read", "pass connection="),
    _c("sources_not_found", "the connection has no semantic-layer sources", "sl.compile, sl.query",
       "`khive request 'sl.bootstrap(connection=...)'`"),
    _c("invalid_source", "a source file breaks the semantic-layer schema", "sl.write, sl.compile, sl.query",
       "details list each problem with its field and fix"),
    _c("invalid_dbt_project", "the dbt project cannot be read", "sl.import_dbt", "the message names the file"),
    _c("compile_error", "the semantic layer cannot compile the query (narrower codes below)", "sl.compile",
       "the message says what to name instead"),
    _c("unknown_name", "a measure, dimension or source that does not exist", "sl.compile",
       "the message suggests near names"),
    _c("ambiguous_name", "a name that several sources define", "sl.compile", "qualify it: source.name"),
    _c("ambiguous_join_path", "two join paths connect the sources", "sl.compile", "pass via= to pick one"),
    _c("disconnected_sources", "no join path connects the sources", "sl.compile",
       "declare the join in a source's joins:"),
    _c("invalid_via", "via= names a source or role off the join paths", "sl.compile", "details.via"),
    _c("invalid_filter", "a filter the compiler cannot place", "sl.compile", "the message says why"),
    _c("invalid_measure", "an ad-hoc measure's expression is invalid", "sl.compile", "the message says why"),
    _c("invalid_sql", "a source's sql: does not parse", "sl.compile", "fix the source's sql:"),
    _c("derived_cycle", "derived measures refer to each other in a cycle", "sl.compile", "break the cycle"),
    _c("fan_out_filter", "a filter on the many side of a fan-out would change the measure", "sl.compile",
       "filter in a segment of the measure's source, or aggregate first"),
    _c("fan_out_not_reaggregable", "a measure that cannot be re-aggregated across a fan-out", "sl.compile",
       "drop the fanning dimension or use a re-aggregable measure"),
    _c("unsupported_aggregate", "an aggregate the dialect cannot express", "sl.compile", "use another agg"),
    _c("entity_not_found", "nothing matches the id", "discover.lookup", "`discover.search` first; use a ref's id"),
    _c("ambiguous_id", "the id matches several entities", "discover.lookup", "details list the candidates"),
    _c("ingest_missing", "the connection has no historic_sql ingest yet", "historic_sql verbs",
       "`khive ingest <connection>`"),
    _c("historic_sql_disabled", "historic_sql is off for the connection", "historic_sql.ingest",
       "connections.<name>.historicSql.enabled: true"),
    _c("history_unavailable", "the query history cannot be read", "historic_sql.ingest",
       "`historic_sql.probe(connection=...)` names what is missing"),
    _c("unit_not_pending", "the work unit is not pending (done, or superseded)", "historic_sql.submit",
       "`historic_sql.units()` lists the current ones"),
    _c("invalid_output", "a submitted digest does not match the unit's outputSchema", "historic_sql.submit",
       "details list each problem"),
)

CATALOGUE: tuple[ErrorCode, ...] = (*REQUEST, *BASES, *DAEMON, *DATA, *PACKS)
SECTIONS = (("Requests and dispatch", REQUEST), ("Base classes and loading", BASES), ("Daemon", DAEMON),
            ("Data and project files", DATA), ("Packs", PACKS))
CODES = frozenset(entry.code for entry in CATALOGUE)


def render() -> str:
    """docs/errors.md."""
    lines = ["# Error codes", "",
             "Generated from `khive/error_codes.py` by `python -m khive.docgen` (do not edit by hand; a test fails",
             "when this file is stale, and another when a code raised in khive/ or packs/ is missing here).",
             "A failed op carries `{\"code\", \"message\", \"details\"}` in its envelope entry; codes are",
             "lower_snake and stable. `parse-error` was renamed `parse_error` (the audit matches both).", ""]
    for title, entries in SECTIONS:
        lines += [f"## {title}", "", "| code | meaning | when | what to do |", "| --- | --- | --- | --- |"]
        lines += [f"| `{e.code}` | {e.meaning} | {e.when} | {e.fix} |".replace("\n", " ") for e in entries]
        lines.append("")
    return "\n".join(lines)
