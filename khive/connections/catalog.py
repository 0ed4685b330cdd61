"""The catalog a driver reads from a live database, in one shape for every driver.

Names follow the scan artifacts' established JSON names (``estimatedRows``, ``foreignKeys``) through
aliases; Python code uses snake_case.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

NormalizedType = Literal["string", "number", "integer", "boolean", "date", "timestamp", "time", "binary",
                         "json", "array", "uuid", "interval", "other"]
DimensionType = Literal["categorical", "time", "numeric", "identifier", "boolean", "text", "other"]
TableKind = Literal["table", "view", "materialized_view", "foreign_table", "external"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Column(_Model):
    name: str
    ordinal: int
    native_type: str = Field(alias="nativeType")
    normalized_type: NormalizedType = Field(alias="normalizedType")
    dimension_type: DimensionType = Field(alias="dimensionType")
    nullable: bool = True
    default: str | None = None
    primary_key: bool = Field(default=False, alias="primaryKey")
    comment: str | None = None


class ForeignKey(_Model):
    name: str | None = None
    columns: tuple[str, ...]
    ref_catalog: str | None = Field(default=None, alias="refCatalog")
    ref_db: str = Field(alias="refDb")  # the referenced table's schema (database in MySQL terms)
    ref_table: str = Field(alias="refTable")
    ref_columns: tuple[str, ...] = Field(alias="refColumns")


class Table(_Model):
    catalog: str | None = None  # database name (PostgreSQL), project (BigQuery), file stem (SQLite/DuckDB)
    db: str  # schema
    name: str
    kind: TableKind = "table"
    comment: str | None = None
    estimated_rows: int | None = Field(default=None, alias="estimatedRows")
    columns: tuple[Column, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = Field(default=(), alias="foreignKeys")

    @property
    def qualified(self) -> str:
        return f"{self.db}.{self.name}"


class ColumnSample(_Model):
    """Bounded sample of one column: distinct count seen, most frequent values (truncated text)."""

    db: str
    table: str
    column: str
    values: tuple[str | int | float | bool | None, ...] = ()
    frequencies: tuple[int, ...] = ()
    distinct: int | None = None
    nulls: int | None = None
    sampled_rows: int | None = Field(default=None, alias="sampledRows")
    skipped: str | None = None  # why none: "secret-name", "sensitive-name", "sensitive-type", "binary", "view",
    # "no-privilege" (the role may not read it), "error", "timeout", ...


class ExcludedObject(_Model):
    """A catalog object a scan left out, and why (``khive.connections.selection``)."""

    db: str
    name: str
    reason: str  # "extension <name>", "system", "tables filter"

    @property
    def qualified(self) -> str:
        return f"{self.db}.{self.name}"


class CatalogSnapshot(_Model):
    """Everything one scan reads: tables with columns and keys, plus samples when collected."""

    connection: str
    driver: str
    catalog: str | None = None
    tables: tuple[Table, ...] = ()
    samples: tuple[ColumnSample, ...] = ()
    warnings: tuple[str, ...] = ()
    excluded: tuple[ExcludedObject, ...] = ()  # extension members and server internals the driver left out
    capability_gaps: tuple[str, ...] = Field(default=(), alias="capabilityGaps")
