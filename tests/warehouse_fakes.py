"""Local stand-ins for the BigQuery and Snowflake services: HTTP servers on 127.0.0.1 that speak each
service's documented REST shapes, so the real client libraries (google-cloud-bigquery,
snowflake-connector-python) run unmodified against them.

    BigQuery    POST /bigquery/v2/projects/{project}/queries (jobs.query): a QueryResponse with the
                schema and rows as ``{"f": [{"v": cell}]}``, cells in the REST encoding (INT64 and
                NUMERIC as text, BYTES base64, TIMESTAMP as int64 microseconds since the epoch, ARRAY
                as ``[{"v": ...}]``, STRUCT as ``{"f": [...]}``); errors as ``{"error": {"code",
                "message", "errors": [{"reason", ...}], "status"}}`` with the HTTP status.
    Snowflake   POST /session/v1/login-request, /queries/v1/query-request (a JSON ``rowset`` of text
                cells with its ``rowtype``: NUMBER as text, DATE as days since the epoch, TIME and
                TIMESTAMP_NTZ/LTZ as seconds, TIMESTAMP_TZ as "seconds minutes+1440", BINARY as hex,
                VARIANT/OBJECT/ARRAY as JSON text), /session?delete=true, /telemetry/send; errors as
                ``{"success": false, "code", "message", "data": {"errorCode", "sqlState"}}``.

Answers are recorded per statement: ``service.on(match, answer)`` where ``match`` is the exact SQL, a
compiled regex searched in it, or a predicate; the first match wins. A statement nothing matches gets
the service's own "not found" error, so a test never passes on an answer it did not set up.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Match = str | re.Pattern[str] | Callable[[str], bool]


@dataclass(frozen=True)
class Result:
    """A result table: column names with the service's type names, and rows of Python values."""

    columns: Sequence[tuple[str, str]]
    rows: Sequence[Sequence[Any]] = ()


@dataclass(frozen=True)
class Failure:
    """A refused statement. BigQuery: HTTP status and error reason; Snowflake: error code and SQLSTATE."""

    message: str
    status: int = 400
    reason: str = "invalidQuery"
    code: str = "002003"
    sqlstate: str = "02000"


def result_of(rows: Sequence[Mapping[str, Any]], types: Mapping[str, str]) -> Result:
    """Recorded rows (dicts) as a Result; ``types`` names each column's type."""
    names = list(rows[0]) if rows else list(types)
    return Result([(name, types[name]) for name in names], [[row.get(name) for name in names] for row in rows])


@dataclass
class _Service:
    answers: list[tuple[Match, Result | Failure]] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (path, body)
    url: str = ""

    def on(self, match: Match, answer: Result | Failure) -> None:
        self.answers.append((match, answer))

    def answer(self, sql: str) -> Result | Failure:
        self.statements.append(sql)
        for match, answer in self.answers:
            if isinstance(match, str):
                hit = match == sql
            elif isinstance(match, re.Pattern):
                hit = match.search(sql) is not None
            else:
                hit = match(sql)
            if hit:
                return answer
        return self.unknown(sql)

    def unknown(self, sql: str) -> Result | Failure:
        return Failure(f"no recorded answer for: {' '.join(sql.split())[:200]}", status=404, reason="notFound")

    def handle(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        raise NotImplementedError


def _handler(service: _Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                raw = gzip.decompress(raw)
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            service.requests.append((self.path, body))
            status, answer = service.handle(self.command, self.path, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

    return Handler


@contextmanager
def _serving(service: _Service) -> Iterator[None]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(service))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-warehouse", daemon=True)
    thread.start()
    service.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# ---- BigQuery --------------------------------------------------------------------------------------------------


def _bq_field(name: str, kind: str) -> dict[str, Any]:
    if kind.startswith("ARRAY<") and kind.endswith(">"):
        return {**_bq_field(name, kind[6:-1]), "mode": "REPEATED"}
    if kind.startswith("STRUCT<") and kind.endswith(">"):
        members = [part.strip().split(" ", 1) for part in _split_members(kind[7:-1])]
        return {"name": name, "type": "RECORD", "mode": "NULLABLE",
                "fields": [_bq_field(member, member_kind) for member, member_kind in members]}
    return {"name": name, "type": kind, "mode": "NULLABLE"}


def _split_members(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char == "<"
        depth -= char == ">"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _micros(value: Any) -> str:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return str(delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds)


def bq_cell(value: Any, spec: Mapping[str, Any]) -> Any:
    """One Python value in BigQuery's REST row encoding for its schema field."""
    if spec.get("mode") == "REPEATED":  # BigQuery has no NULL arrays: a NULL one reads as []
        return [{"v": bq_cell(item, {**spec, "mode": "NULLABLE"})} for item in value or []]
    if value is None:
        return None
    kind = spec["type"]
    if kind == "RECORD":
        return {"f": [{"v": bq_cell(value.get(member["name"]), member)} for member in spec["fields"]]}
    if kind == "BOOL":
        return "true" if value else "false"
    if kind == "FLOAT64":
        if isinstance(value, float) and value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(float(value))
    if kind == "BYTES":
        return base64.b64encode(value).decode()
    if kind == "TIMESTAMP":
        return _micros(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return str(value)


class FakeBigQuery(_Service):
    def handle(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        found = re.fullmatch(r"/bigquery/v2/projects/([^/]+)/queries(?:\?.*)?", path)
        if method != "POST" or found is None:
            return 404, _bq_error(Failure(f"fake BigQuery serves jobs.query only, not {method} {path}",
                                          status=404, reason="notFound"))
        answer = self.answer(str(body.get("query", "")))
        if isinstance(answer, Failure):
            return answer.status, _bq_error(answer)
        fields = [_bq_field(name, kind) for name, kind in answer.columns]
        limit = body.get("maxResults")
        rows = list(answer.rows)[: int(limit)] if limit else list(answer.rows)
        return 200, {
            "kind": "bigquery#queryResponse",
            "schema": {"fields": fields},
            "jobReference": {"projectId": found.group(1), "jobId": f"job_{uuid.uuid4().hex[:12]}",
                             "location": body.get("location") or "US"},
            "totalRows": str(len(rows)),
            "rows": [{"f": [{"v": bq_cell(value, spec)} for value, spec in zip(row, fields, strict=True)]}
                     for row in rows],
            "totalBytesProcessed": "0",
            "jobComplete": True,
            "cacheHit": False,
            "queryId": uuid.uuid4().hex,
        }


def _bq_error(failure: Failure) -> dict[str, Any]:
    statuses = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
    return {"error": {"code": failure.status, "message": failure.message,
                      "errors": [{"message": failure.message, "domain": "global", "reason": failure.reason}],
                      "status": statuses.get(failure.status, "FAILED_PRECONDITION")}}


@contextmanager
def fake_bigquery() -> Iterator[FakeBigQuery]:
    service = FakeBigQuery()
    with _serving(service):
        yield service


# ---- Snowflake -------------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _seconds(moment: datetime) -> str:
    delta = moment - (_EPOCH if moment.tzinfo else _EPOCH.replace(tzinfo=None))
    return f"{delta.days * 86400 + delta.seconds}.{delta.microseconds:06d}000"


def sf_cell(value: Any, kind: str) -> str | None:
    """One Python value in Snowflake's JSON rowset encoding for its rowtype."""
    if value is None:
        return None
    kind = kind.lower()
    if kind == "boolean":
        return "1" if value else "0"
    if kind == "date":
        day = value if isinstance(value, date) else date.fromisoformat(str(value))
        return str((day - date(1970, 1, 1)).days)
    if kind == "time":
        clock = value if isinstance(value, time) else time.fromisoformat(str(value))
        return f"{clock.hour * 3600 + clock.minute * 60 + clock.second}.{clock.microsecond:06d}000"
    if kind.startswith("timestamp"):
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
        if kind == "timestamp_ntz":
            return _seconds(moment.replace(tzinfo=None))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        if kind == "timestamp_tz":
            offset = moment.utcoffset()
            minutes = int(offset.total_seconds() // 60) if offset is not None else 0
            return f"{_seconds(moment)} {minutes + 1440}"
        return _seconds(moment)
    if kind == "binary":
        return bytes(value).hex().upper()
    if kind in ("variant", "object", "array"):
        return value if isinstance(value, str) else json.dumps(value, indent=2)
    if kind == "real" and isinstance(value, float):
        return "NaN" if value != value else ("inf" if value == float("inf") else
                                             "-inf" if value == float("-inf") else repr(value))
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _rowtype(name: str, kind: str) -> dict[str, Any]:
    """``fixed``, ``fixed(12,2)``, ``text``, ``real``, ``boolean``, ``date``, ``time``, ``timestamp_ntz`` ..."""
    found = re.fullmatch(r"(\w+)(?:\((\d+),(\d+)\))?", kind.lower())
    assert found, kind
    base, precision, scale = found.groups()
    entry: dict[str, Any] = {"name": name, "database": "", "schema": "", "table": "", "nullable": True,
                             "type": base, "length": None, "byteLength": None, "precision": None, "scale": None,
                             "collation": None}
    if base == "fixed":
        entry.update(precision=int(precision or 38), scale=int(scale or 0))
    elif base in ("text", "binary"):
        entry.update(length=16_777_216, byteLength=16_777_216)
    elif base.startswith("timestamp") or base == "time":
        entry.update(scale=9, precision=0)
    return entry


class FakeSnowflake(_Service):
    def __init__(self, *, login_error: Failure | None = None):
        super().__init__()
        self.login_error = login_error
        self.logins: list[dict[str, Any]] = []

    def unknown(self, sql: str) -> Result | Failure:  # type: ignore[override]
        if re.match(r"(ALTER SESSION|ROLLBACK|COMMIT)\b", sql, re.IGNORECASE):  # session statements always succeed
            return Result([("status", "text")], [["Statement executed successfully."]])
        return Failure(f"SQL compilation error: no recorded answer for: {' '.join(sql.split())[:200]}")

    def handle(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path.startswith("/session/v1/login-request"):
            self.logins.append(body.get("data", {}))
            if self.login_error is not None:
                return 200, _sf_error(self.login_error)
            return 200, {"success": True, "code": None, "message": None, "data": {
                "token": "session-token", "masterToken": "master-token", "validityInSeconds": 3600,
                "masterValidityInSeconds": 14400, "sessionId": 1, "parameters": [],
                "sessionInfo": {"databaseName": "ANALYTICS", "schemaName": "PUBLIC", "warehouseName": "WH",
                                "roleName": "READER"}}}
        if path.startswith("/queries/v1/query-request"):
            answer = self.answer(str(body.get("sqlText", "")))
            if isinstance(answer, Failure):
                return 200, _sf_error(answer)
            types = [kind for _, kind in answer.columns]
            return 200, {"success": True, "code": None, "message": None, "data": {
                "parameters": [], "rowtype": [_rowtype(name, kind) for name, kind in answer.columns],
                "rowset": [[sf_cell(value, kind.split("(")[0]) for value, kind in zip(row, types, strict=True)]
                           for row in answer.rows],
                "total": len(answer.rows), "returned": len(answer.rows), "queryId": uuid.uuid4().hex,
                "queryResultFormat": "json", "statementTypeId": 4096, "finalDatabaseName": "ANALYTICS",
                "finalSchemaName": "PUBLIC", "finalWarehouseName": "WH", "finalRoleName": "READER"}}
        return 200, {"success": True, "code": None, "message": None, "data": None}


def _sf_error(failure: Failure) -> dict[str, Any]:
    return {"success": False, "code": failure.code, "message": failure.message,
            "data": {"errorCode": failure.code, "sqlState": failure.sqlstate, "queryId": uuid.uuid4().hex,
                     "internalError": False}}


@contextmanager
def fake_snowflake(*, login_error: Failure | None = None) -> Iterator[FakeSnowflake]:
    service = FakeSnowflake(login_error=login_error)
    with _serving(service):
        yield service


def snowflake_url(service: FakeSnowflake, *, database: str = "ANALYTICS", password: str = "s3cret") -> str:
    port = service.url.rsplit(":", 1)[1]
    return (f"snowflake://reader:{password}@acme-test/{database}?warehouse=WH&role=READER"
            f"&host=127.0.0.1&port={port}&protocol=http")
