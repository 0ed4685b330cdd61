"""A connection as declared in khive.yaml (``connections:`` map). Secrets are env: references."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from khive.envref import is_reference, require_reference

# Personal data a project may choose to sample (the defaults do not). Credentials are not here: columns whose
# name says secret (khive.secretnames: password, api_key, token, ...) are never sampled, whatever this list says.
DEFAULT_SENSITIVE = (
    r"ssn", r"social_security", r"credit_?card", r"card_?num", r"cvv", r"iban", r"salt", r"hash",
    r"dob|birth_?date", r"phone", r"e_?mail", r"address",
)


class SchemaFilter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    include: list[str] = Field(default_factory=list, description="schema globs; empty means all")
    exclude: list[str] = Field(default_factory=list, description="schema globs to skip")


class TableFilter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    include: list[str] = Field(default_factory=list,
                               description="table globs, matched against schema.table and table; empty means all")
    exclude: list[str] = Field(default_factory=list, description="table globs to skip (schema.table or table)")


class SamplePolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    views: bool = Field(default=False,
                        description="sample views too: each scan runs a view's whole query, and what an unordered "
                                    "aggregate in it returns can change with the plan, rewriting the shard's samples")
    max_values: int = Field(default=20, ge=0, le=1000)
    max_text_length: int = Field(default=80, ge=8, le=10_000)
    sample_rows: int = Field(default=10_000, ge=100, le=10_000_000)
    sensitive_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_SENSITIVE),
                                          description="column-name regexes never sampled (personal data); "
                                                      "columns named like credentials are never sampled anyway")


# The one list of drivers (each is also a sqlglot dialect name); khive.connections.driver maps each to its class.
DriverName = Literal["sqlite", "duckdb", "postgres", "mysql", "bigquery", "snowflake"]


class ConnectionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    driver: DriverName
    url: str | None = Field(default=None, description="env:VAR holding the connection string")
    path: str | None = Field(default=None, description="database file, relative to the project")
    description: str = ""
    schemas: SchemaFilter = Field(default_factory=SchemaFilter)
    tables: TableFilter = Field(default_factory=TableFilter)
    sample_values: SamplePolicy = Field(default_factory=SamplePolicy)
    project: str | None = None  # bigquery
    region: str | None = None  # bigquery
    credentials: str | None = Field(default=None, description="bigquery: env:VAR naming a service-account key file "
                                                              "(default: Application Default Credentials), or "
                                                              "anonymous (an emulator)")
    endpoint: str | None = Field(default=None, description="bigquery: the API endpoint, for a private endpoint or "
                                                           "an emulator (default: Google's)")
    database: str | None = None  # snowflake
    statement_timeout_s: float = Field(default=30.0, gt=0, le=3600,
                                       description="the longest any statement may run; an agent's timeout_s "
                                                   "can only lower it")
    pool_size: int | None = Field(default=None, ge=2, le=1000,
                                  description="drivers (database connections) open at most at once; default "
                                              "twice server.max_parallel_ops")
    allow_functions: list[str] = Field(default_factory=list,
                                       description="extra SQL functions sql.execute may call here")
    allowPrivilegedRole: bool = Field(default=False,
                                      description="let agents' SQL run although the role is a superuser or may "
                                                  "read server files or run programs (not recommended)")
    # the historic_sql pack's block: validated by that pack when the runtime is built (khive_config_sections)
    historicSql: dict[str, Any] | None = None

    @field_validator("url")
    @classmethod
    def _url_is_env(cls, value: str | None) -> str | None:
        return None if value is None else require_reference(value, "connection strings hold secrets",
                                                              "env:DATABASE_URL")

    @field_validator("credentials")
    @classmethod
    def _credentials_is_env(cls, value: str | None) -> str | None:
        if value is not None and value != "anonymous" and not is_reference(value):
            raise ValueError("must be env:VAR naming a service-account key file (key files hold secrets), "
                             "or anonymous for an emulator")
        return value

    @model_validator(mode="after")
    def _target(self) -> ConnectionConfig:
        if self.driver in ("sqlite", "duckdb") and not self.path:
            raise ValueError(f"a {self.driver} connection needs path: (the database file)")
        if self.driver in ("postgres", "mysql") and not self.url:
            raise ValueError(f"a {self.driver} connection needs url: env:VAR")
        return self
