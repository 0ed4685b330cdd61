"""Snowflake: INFORMATION_SCHEMA for tables and columns, SHOW ... KEYS for key columns, via the connector.

Snowflake's INFORMATION_SCHEMA names constraints but not their columns, so keys come from
``SHOW PRIMARY KEYS`` and ``SHOW IMPORTED KEYS`` over the whole database (one statement each,
lower-case result columns, as SHOW returns them). INFORMATION_SCHEMA rows use upper-case names.
Native types are rebuilt the way ``DESCRIBE TABLE`` shows them (``NUMBER(38,0)``, ``VARCHAR(20)``;
an unbounded ``VARCHAR`` stays bare).
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from khive.connections.catalog import CatalogSnapshot, ForeignKey, Table, TableKind
from khive.connections.types import build_column, schema_selected
from khive.connections.warehouse import WarehouseDriver, WarehouseSession

_KINDS: dict[str, TableKind] = {"BASE TABLE": "table", "VIEW": "view", "MATERIALIZED VIEW": "materialized_view",
                                "EXTERNAL TABLE": "external"}
_MAX_VARCHAR = 16_777_216  # VARCHAR without a length
Rows = list[dict[str, Any]]


def native_type(row: dict[str, Any]) -> str:
    """``DATA_TYPE`` plus its parameters, as DESCRIBE TABLE writes it."""
    data_type = str(row["DATA_TYPE"])
    if data_type == "NUMBER" and row.get("NUMERIC_PRECISION") is not None:
        return f"NUMBER({row['NUMERIC_PRECISION']},{row.get('NUMERIC_SCALE') or 0})"
    if data_type == "TEXT":
        length = row.get("CHARACTER_MAXIMUM_LENGTH")
        return "VARCHAR" if length in (None, _MAX_VARCHAR) else f"VARCHAR({length})"
    return data_type


class SnowflakeDriver(WarehouseDriver):
    name = "snowflake"
    dialect = "snowflake"
    client_library = "snowflake-connector-python"
    extra = "snowflake"

    def open_session(self) -> WarehouseSession:
        from khive.connections.sfsession import SnowflakeSession  # imports snowflake-connector-python

        return SnowflakeSession(self.connection, self.config, self.secrets)

    def _info(self, view: str) -> exp.Table:
        database = exp.to_identifier(self.config.database) if self.config.database else None
        return exp.Table(this=exp.to_identifier(view), db=exp.to_identifier("INFORMATION_SCHEMA"), catalog=database)

    def _show(self, what: str) -> str:
        if self.config.database:
            scope: exp.Show = exp.Show(this=what, scope=exp.Table(this=exp.to_identifier(self.config.database)),
                                       scope_kind="DATABASE")
        else:
            scope = exp.Show(this=what, scope_kind="ACCOUNT")
        return scope.sql("snowflake")

    def catalog_queries(self) -> dict[str, str]:
        """Query name -> Snowflake SQL; every one covers the whole database."""
        not_info = "TABLE_SCHEMA <> 'INFORMATION_SCHEMA'"
        tables = (sqlglot.select("TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "TABLE_TYPE", "ROW_COUNT", "COMMENT")
                  .from_(self._info("TABLES")).where(not_info, dialect="snowflake")
                  .order_by("TABLE_SCHEMA", "TABLE_NAME", dialect="snowflake"))
        columns = (sqlglot.select("TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "ORDINAL_POSITION",
                                  "IS_NULLABLE", "DATA_TYPE", "CHARACTER_MAXIMUM_LENGTH", "NUMERIC_PRECISION",
                                  "NUMERIC_SCALE", "COLUMN_DEFAULT", "COMMENT")
                   .from_(self._info("COLUMNS")).where(not_info, dialect="snowflake")
                   .order_by("TABLE_SCHEMA", "TABLE_NAME", "ORDINAL_POSITION", dialect="snowflake"))
        return {"tables": tables.sql("snowflake", pretty=True), "columns": columns.sql("snowflake", pretty=True),
                "primary_keys": self._show("PRIMARY KEYS"), "imported_keys": self._show("IMPORTED KEYS")}

    def read_catalog(self) -> CatalogSnapshot:
        return self.parse_catalog({name: self._run(sql) for name, sql in self.catalog_queries().items()})

    def parse_catalog(self, results: dict[str, Rows]) -> CatalogSnapshot:
        """Rows of every query (as the service returns them) -> the catalog snapshot."""
        def selected(schema: str) -> bool:
            return schema != "INFORMATION_SCHEMA" and schema_selected(schema, self.config.schemas)

        tables_rows = [row for row in results.get("tables", []) if selected(row["TABLE_SCHEMA"])]
        catalog = tables_rows[0]["TABLE_CATALOG"] if tables_rows else self.config.database
        in_catalog = {row["TABLE_CATALOG"] for row in tables_rows}
        columns: dict[tuple[str, str], Rows] = {}
        for row in results.get("columns", []):
            if selected(row["TABLE_SCHEMA"]):
                columns.setdefault((row["TABLE_SCHEMA"], row["TABLE_NAME"]), []).append(row)

        primary: dict[tuple[str, str], list[tuple[int, str]]] = {}
        for row in results.get("primary_keys", []):
            if row["database_name"] in in_catalog:
                primary.setdefault((row["schema_name"], row["table_name"]), []).append(
                    (int(row["key_sequence"]), row["column_name"]))
        grouped: dict[tuple[str, str, str], Rows] = {}
        for row in results.get("imported_keys", []):
            if row["fk_database_name"] in in_catalog:
                grouped.setdefault((row["fk_schema_name"], row["fk_table_name"], row["fk_name"]), []).append(row)
        foreign: dict[tuple[str, str], list[ForeignKey]] = {}
        for (schema, table, name), rows in grouped.items():
            rows.sort(key=lambda r: int(r["key_sequence"]))
            first = rows[0]
            foreign.setdefault((schema, table), []).append(ForeignKey(
                name=name, columns=tuple(r["fk_column_name"] for r in rows), refCatalog=first["pk_database_name"],
                refDb=first["pk_schema_name"], refTable=first["pk_table_name"],
                refColumns=tuple(r["pk_column_name"] for r in rows)))

        tables = []
        for row in tables_rows:
            key = (row["TABLE_SCHEMA"], row["TABLE_NAME"])
            pk = {name for _seq, name in primary.get(key, [])}
            fk_columns = {name for fk in foreign.get(key, []) for name in fk.columns}
            built = tuple(
                build_column(col["COLUMN_NAME"], int(col["ORDINAL_POSITION"]), native_type(col), self.dialect,
                             nullable=col["IS_NULLABLE"] == "YES", default=col.get("COLUMN_DEFAULT"),
                             primary_key=col["COLUMN_NAME"] in pk, is_fk=col["COLUMN_NAME"] in fk_columns,
                             comment=col.get("COMMENT"))
                for col in sorted(columns.get(key, []), key=lambda c: int(c["ORDINAL_POSITION"]))
            )
            kind = _KINDS.get(row["TABLE_TYPE"], "table")
            estimate = row.get("ROW_COUNT") if kind in ("table", "materialized_view") else None
            tables.append(Table(catalog=row["TABLE_CATALOG"], db=key[0], name=key[1], kind=kind,
                                comment=row.get("COMMENT") or None,
                                estimatedRows=None if estimate is None else int(estimate), columns=built,
                                foreignKeys=tuple(foreign.get(key, []))))
        return CatalogSnapshot(connection=self.connection, driver=self.name, catalog=catalog, tables=tuple(tables))
