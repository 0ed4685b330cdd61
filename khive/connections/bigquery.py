"""BigQuery: the catalog from INFORMATION_SCHEMA, its SQL generated with sqlglot, run by google-cloud-bigquery.

Two phases, because BigQuery scopes its views differently: region-qualified views
(``project.`region-us`.INFORMATION_SCHEMA.X``) give datasets, tables, columns, column and table
descriptions and row counts for the whole project in one query each (``catalog_queries``); the
key views (TABLE_CONSTRAINTS, KEY_COLUMN_USAGE, CONSTRAINT_COLUMN_USAGE) only answer per dataset,
so ``constraint_queries(datasets)`` unions one select per selected dataset into one query per view.
Keys in BigQuery are declared, never enforced. Result rows use BigQuery's lower-case column names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlglot
from sqlglot import exp

from khive.connections.catalog import CatalogSnapshot, ForeignKey, Table, TableKind
from khive.connections.selection import internal_object
from khive.connections.types import build_column, schema_selected
from khive.connections.warehouse import WarehouseDriver, WarehouseSession

_KINDS: dict[str, TableKind] = {"BASE TABLE": "table", "VIEW": "view", "MATERIALIZED VIEW": "materialized_view",
                                "EXTERNAL": "external", "SNAPSHOT": "table", "CLONE": "table"}
Rows = list[dict[str, Any]]


def _description(literal: str | None) -> str | None:
    """TABLE_OPTIONS holds ``option_value`` as a SQL literal (``"Orders placed"``): read it as one."""
    if not literal:
        return None
    try:
        parsed = sqlglot.parse_one(literal, read="bigquery")
    except sqlglot.errors.ParseError:
        return literal.strip("\"'") or None
    return parsed.name if isinstance(parsed, exp.Literal) and parsed.is_string else literal


class BigQueryDriver(WarehouseDriver):
    name = "bigquery"
    dialect = "bigquery"
    client_library = "google-cloud-bigquery"
    extra = "bigquery"

    def open_session(self) -> WarehouseSession:
        from khive.connections.bqsession import BigQuerySession  # imports google-cloud-bigquery

        return BigQuerySession(self.connection, self.config, self.secrets)

    def _view(self, view: str, dataset: str | None = None) -> exp.Table:
        scope = dataset or f"region-{(self.config.region or 'us').lower()}"
        project = exp.to_identifier(self.config.project) if self.config.project else None
        return exp.Table(this=exp.Identifier(this=f"INFORMATION_SCHEMA.{view}", quoted=False),
                         db=exp.to_identifier(scope), catalog=project)

    def catalog_queries(self) -> dict[str, str]:
        """Phase one: region-qualified views, one query each (names -> BigQuery SQL)."""
        def select(view: str, *columns: str, where: str | None = None, order: Sequence[str] = ()) -> str:
            query = sqlglot.select(*columns).from_(self._view(view))
            if where:
                query = query.where(where, dialect="bigquery")
            return query.order_by(*order).sql("bigquery", pretty=True) if order else query.sql("bigquery", pretty=True)

        return {
            "schemata": select("SCHEMATA", "catalog_name", "schema_name", "location", order=["schema_name"]),
            "tables": select("TABLES", "table_catalog", "table_schema", "table_name", "table_type",
                             order=["table_schema", "table_name"]),
            "columns": select("COLUMNS", "table_catalog", "table_schema", "table_name", "column_name",
                              "ordinal_position", "is_nullable", "data_type", "column_default",
                              order=["table_schema", "table_name", "ordinal_position"]),
            "column_descriptions": select("COLUMN_FIELD_PATHS", "table_schema", "table_name", "column_name",
                                          "description", where="description IS NOT NULL AND field_path = column_name"),
            "table_options": select("TABLE_OPTIONS", "table_schema", "table_name", "option_value",
                                    where="option_name = 'description'"),
            "table_storage": select("TABLE_STORAGE", "table_schema", "table_name", "total_rows",
                                    where="NOT deleted"),
        }

    def constraint_queries(self, datasets: Sequence[str]) -> dict[str, str]:
        """Phase two: the dataset-scoped key views, one UNION ALL query per view."""
        views = {
            "table_constraints": ("TABLE_CONSTRAINTS", ("constraint_schema", "constraint_name", "table_schema",
                                                        "table_name", "constraint_type")),
            "key_column_usage": ("KEY_COLUMN_USAGE", ("constraint_schema", "constraint_name", "table_schema",
                                                      "table_name", "column_name", "ordinal_position",
                                                      "position_in_unique_constraint")),
            "constraint_column_usage": ("CONSTRAINT_COLUMN_USAGE", ("constraint_schema", "constraint_name",
                                                                    "table_schema", "table_name", "column_name")),
        }
        queries = {}
        for name, (view, columns) in views.items():
            selects = [sqlglot.select(*columns).from_(self._view(view, dataset)) for dataset in datasets]
            query: exp.Query = selects[0]
            for other in selects[1:]:
                query = exp.union(query, other, distinct=False)
            queries[name] = query.sql("bigquery", pretty=True)
        return queries

    def read_catalog(self) -> CatalogSnapshot:
        results = {name: self._run(sql) for name, sql in self.catalog_queries().items()}
        datasets = [row["schema_name"] for row in results["schemata"]
                    if schema_selected(row["schema_name"], self.config.schemas)
                    and internal_object(row["schema_name"], "", driver=self.name) is None]  # no hidden datasets
        if datasets:
            results.update({name: self._run(sql) for name, sql in self.constraint_queries(datasets).items()})
        return self.parse_catalog(results)

    def parse_catalog(self, results: dict[str, Rows]) -> CatalogSnapshot:
        """Rows of every query (as the service returns them) -> the catalog snapshot."""
        def selected(row: dict[str, Any]) -> bool:
            return schema_selected(row["table_schema"], self.config.schemas)

        def key(row: dict[str, Any]) -> tuple[str, str]:
            return row["table_schema"], row["table_name"]

        tables_rows = [row for row in results.get("tables", []) if selected(row)]
        catalog = tables_rows[0]["table_catalog"] if tables_rows else self.config.project
        columns: dict[tuple[str, str], Rows] = {}
        for row in results.get("columns", []):
            if selected(row):
                columns.setdefault(key(row), []).append(row)
        described = {(*key(row), row["column_name"]): row["description"]
                     for row in results.get("column_descriptions", [])}
        comments = {key(row): _description(row["option_value"]) for row in results.get("table_options", [])}
        estimates = {key(row): row["total_rows"] for row in results.get("table_storage", [])
                     if row.get("total_rows") is not None}
        primary, foreign = self._keys(results, catalog)

        tables = []
        for row in tables_rows:
            table_key = key(row)
            pk = primary.get(table_key, ())
            fk_columns = {name for fk in foreign.get(table_key, []) for name in fk.columns}
            built = tuple(
                build_column(col["column_name"], int(col["ordinal_position"]), col["data_type"], self.dialect,
                             nullable=col["is_nullable"] == "YES",
                             default=None if col.get("column_default") in (None, "NULL") else col["column_default"],
                             primary_key=col["column_name"] in pk, is_fk=col["column_name"] in fk_columns,
                             comment=described.get((*table_key, col["column_name"])))
                for col in sorted(columns.get(table_key, []), key=lambda c: int(c["ordinal_position"]))
            )
            kind = _KINDS.get(row["table_type"], "table")
            estimate = estimates.get(table_key) if kind in ("table", "materialized_view") else None
            tables.append(Table(catalog=row["table_catalog"], db=row["table_schema"], name=row["table_name"],
                                kind=kind, comment=comments.get(table_key),
                                estimatedRows=None if estimate is None else int(estimate), columns=built,
                                foreignKeys=tuple(foreign.get(table_key, []))))
        return CatalogSnapshot(connection=self.connection, driver=self.name, catalog=catalog, tables=tuple(tables))

    @staticmethod
    def _keys(results: dict[str, Rows], catalog: str | None,
              ) -> tuple[dict[tuple[str, str], tuple[str, ...]], dict[tuple[str, str], list[ForeignKey]]]:
        usage: dict[tuple[str, str, str], Rows] = {}
        for row in results.get("key_column_usage", []):
            usage.setdefault((row["table_schema"], row["table_name"], row["constraint_name"]), []).append(row)
        referenced: dict[tuple[str, str], Rows] = {}
        for row in results.get("constraint_column_usage", []):
            referenced.setdefault((row["constraint_schema"], row["constraint_name"]), []).append(row)

        def ordered(rows: Rows) -> list[dict[str, Any]]:
            return sorted(rows, key=lambda r: int(r["ordinal_position"]))

        primary: dict[tuple[str, str], tuple[str, ...]] = {}
        constraints = results.get("table_constraints", [])
        for row in constraints:
            if row["constraint_type"] == "PRIMARY KEY":
                rows = usage.get((row["table_schema"], row["table_name"], row["constraint_name"]), [])
                primary[(row["table_schema"], row["table_name"])] = tuple(r["column_name"] for r in ordered(rows))
        foreign: dict[tuple[str, str], list[ForeignKey]] = {}
        for row in constraints:
            if row["constraint_type"] != "FOREIGN KEY":
                continue
            rows = ordered(usage.get((row["table_schema"], row["table_name"], row["constraint_name"]), []))
            targets = referenced.get((row["constraint_schema"], row["constraint_name"]), [])
            if not rows or not targets:
                continue
            ref = (targets[0]["table_schema"], targets[0]["table_name"])
            ref_pk = primary.get(ref)
            positions = [r.get("position_in_unique_constraint") for r in rows]
            if ref_pk and all(p is not None and 0 < int(p) <= len(ref_pk) for p in positions):
                ref_columns = tuple(ref_pk[int(p) - 1] for p in positions if p is not None)
            else:  # the referenced key's dataset was not read: CONSTRAINT_COLUMN_USAGE order
                ref_columns = tuple(t["column_name"] for t in targets)
            foreign.setdefault((row["table_schema"], row["table_name"]), []).append(ForeignKey(
                name=row["constraint_name"], columns=tuple(r["column_name"] for r in rows), refCatalog=catalog,
                refDb=ref[0], refTable=ref[1], refColumns=ref_columns))
        return primary, foreign
