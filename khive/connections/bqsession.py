"""BigQuery through google-cloud-bigquery (the optional extra ``khive[bigquery]``).

Each statement is one ``jobs.query`` call (``Client.query_and_wait``): standard SQL, a job timeout of
the statement's timeout (BigQuery cancels the job itself), a ``khive`` label so the jobs can be told
apart in the project's job history, and at most ``limit + 1`` rows fetched. Credentials: the
connection's ``credentials: env:VAR`` (a service-account key file), else Application Default
Credentials (``gcloud auth application-default login``, a workload identity); ``credentials:
anonymous`` with an ``endpoint:`` reaches an emulator.

The library's errors become khive's codes: no credentials or no route to the API is
``connection_failed``, ``accessDenied`` is ``permission_denied``, a job that ran out of time is
``statement_timeout``, anything else the service refused is ``query_failed``; each message keeps
the service's own reason.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping
from typing import Any

import google.auth.exceptions
import requests.exceptions
from google.api_core import exceptions as api_errors
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials, Credentials
from google.cloud import bigquery
from google.oauth2 import service_account

from khive.connections.config import ConnectionConfig
from khive.connections.warehouse import Fetched
from khive.errors import ConfigError, KhiveError
from khive.values import Converter, Encoder, duration

_ACCESS = frozenset({"accessDenied", "billingNotEnabled", "responseTooLarge"})
_TIMEOUT = frozenset({"timeout", "jobTimeout"})
_CREDENTIALS_FIX = ("run `gcloud auth application-default login`, or set the connection's credentials: "
                    "env:VAR to a service-account key file")


def _interval(value: Any, _encoder: Encoder, _column: str) -> str:
    """dateutil's relativedelta (what the library makes of INTERVAL) -> an ISO 8601 duration."""
    micros = ((value.hours * 60 + value.minutes) * 60 + value.seconds) * 1_000_000 + value.microseconds
    return duration(value.years * 12 + value.months, value.days, micros)


def _type(field: bigquery.SchemaField) -> str:
    base = "STRUCT" if field.field_type == "RECORD" else str(field.field_type)
    return f"ARRAY<{base}>" if field.mode == "REPEATED" else base


def _converter(field: bigquery.SchemaField) -> Converter | None:
    if field.field_type != "INTERVAL":
        return None
    if field.mode == "REPEATED":
        return lambda values, encoder, column: [None if item is None else _interval(item, encoder, column)
                                                for item in values]
    return _interval


class BigQuerySession:
    def __init__(self, connection: str, config: ConnectionConfig, secrets: Mapping[str, str]):
        self.connection = connection
        self.config = config
        options = ClientOptions(api_endpoint=config.endpoint) if config.endpoint else None
        try:
            self.client = bigquery.Client(project=config.project, credentials=self._credentials(secrets),
                                          location=config.region, client_options=options)
        except google.auth.exceptions.GoogleAuthError as exc:
            raise self._unreachable(exc) from None

    def _credentials(self, secrets: Mapping[str, str]) -> Credentials | None:
        if self.config.credentials == "anonymous":
            if not self.config.project:
                raise ConfigError(f"connection {self.connection!r}: anonymous credentials need project: "
                                  "(there is no default project without an identity)",
                                  details={"field": f"connections.{self.connection}.project"})
            return AnonymousCredentials()  # type: ignore[no-untyped-call]
        key_file = secrets.get("credentials")
        if not key_file:
            return None  # Application Default Credentials
        try:
            found: Credentials = service_account.Credentials.from_service_account_file(key_file)  # type: ignore[no-untyped-call]
        except (OSError, ValueError) as exc:
            raise ConfigError(f"connection {self.connection!r}: credentials {self.config.credentials} names "
                              f"{key_file!r}, which is not a readable service-account key file: {exc}",
                              details={"field": f"connections.{self.connection}.credentials",
                                       "fix": "point the variable at the JSON key file of a service account"}
                              ) from None
        return found

    def _job(self, timeout_s: float) -> bigquery.QueryJobConfig:
        return bigquery.QueryJobConfig(use_legacy_sql=False, job_timeout_ms=max(1, round(timeout_s * 1000)),
                                       labels={"khive": "query"})

    def _query(self, sql: str, timeout_s: float, max_results: int | None) -> Any:
        try:
            return self.client.query_and_wait(sql, job_config=self._job(timeout_s), wait_timeout=timeout_s,
                                              api_timeout=timeout_s + 30, max_results=max_results)
        except api_errors.GoogleAPICallError as exc:
            raise self._error(exc, timeout_s) from None
        except (concurrent.futures.TimeoutError, requests.exceptions.Timeout):
            raise KhiveError(f"statement cancelled after {timeout_s:g}s (connection {self.connection!r})",
                             code="statement_timeout",
                             details={"connection": self.connection, "timeout_s": timeout_s}) from None
        except (google.auth.exceptions.GoogleAuthError, requests.exceptions.ConnectionError) as exc:
            raise self._unreachable(exc) from None

    def rows(self, sql: str, timeout_s: float) -> list[dict[str, Any]]:
        return [dict(row.items()) for row in self._query(sql, timeout_s, None)]

    def fetch(self, sql: str, *, limit: int, timeout_s: float) -> Fetched:
        result = self._query(sql, timeout_s, limit + 1)
        schema = list(result.schema or [])
        rows = [tuple(row.values()) for row in result]
        return Fetched(columns=[{"name": field.name, "type": _type(field)} for field in schema], rows=rows,
                       converters=[_converter(field) for field in schema])

    def close(self) -> None:
        self.client.close()  # type: ignore[no-untyped-call]

    # ---- errors ----------------------------------------------------------------------------------------

    def _where(self) -> str:
        return f"project {self.config.project or '(the credentials default)'}" + (
            f", endpoint {self.config.endpoint}" if self.config.endpoint else "")

    def _unreachable(self, exc: Exception) -> KhiveError:
        reason = " ".join(str(exc).split())
        return KhiveError(f"connection {self.connection!r}: cannot reach BigQuery ({self._where()}): {reason}",
                          code="connection_failed",
                          details={"connection": self.connection, "fix": _CREDENTIALS_FIX})

    def _error(self, exc: api_errors.GoogleAPICallError, timeout_s: float) -> KhiveError:
        errors = [item for item in exc.errors or [] if isinstance(item, dict)]
        reasons = {str(item.get("reason")) for item in errors}
        # the service's own words; exc.message starts with the request's method and URL
        message = " ".join(str(errors[0].get("message") if errors and errors[0].get("message") else exc.message)
                           .split())
        details = {"connection": self.connection, "reasons": sorted(reasons), "status": exc.code}
        if reasons & _TIMEOUT:
            return KhiveError(f"statement cancelled after {timeout_s:g}s (connection {self.connection!r}): "
                              f"{message}", code="statement_timeout", details={**details, "timeout_s": timeout_s})
        if reasons & _ACCESS or isinstance(exc, api_errors.Forbidden):
            return KhiveError(f"connection {self.connection!r}: BigQuery denied access ({self._where()}): {message}",
                              code="permission_denied", details=details)
        if isinstance(exc, api_errors.Unauthorized):
            return KhiveError(f"connection {self.connection!r}: BigQuery refused the credentials: {message}",
                              code="connection_failed", details={**details, "fix": _CREDENTIALS_FIX})
        return KhiveError(f"connection {self.connection!r}: {message}", code="query_failed", details=details)
