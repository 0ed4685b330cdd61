"""discover.search routes by what a question's words are, through the dispatcher on a made-up pool of databases
(one schema each, keys declared, no rows)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from discover_project import PACKS

from khive.bootstrap import open_runtime
from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.scaffold import init_project

pytestmark = pytest.mark.anyio

# A payroll whose payments are named with a derived form of "pay", and a one-table survey whose columns hold
# "pay" and "region" as they are written.
PAYROLL_DDL = """
CREATE SCHEMA payroll;
CREATE TABLE payroll.department (id INTEGER PRIMARY KEY, label VARCHAR);
CREATE TABLE payroll.employee (id INTEGER PRIMARY KEY, department_id INTEGER REFERENCES payroll.department (id),
                               region VARCHAR);
CREATE TABLE payroll.payment (id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES payroll.employee (id),
                              amount DECIMAL(10, 2));
CREATE TABLE payroll.timesheet (id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES payroll.employee (id),
                                hours INTEGER);
CREATE TABLE payroll.holiday (id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES payroll.employee (id),
                              days INTEGER);
CREATE TABLE payroll.pension (id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES payroll.employee (id),
                              scheme VARCHAR);
CREATE SCHEMA survey;
CREATE TABLE survey.zones (id INTEGER PRIMARY KEY, pay_band VARCHAR, region VARCHAR);
CREATE SCHEMA kennel;
CREATE TABLE kennel.dog (id INTEGER PRIMARY KEY, name VARCHAR, breed VARCHAR);
"""


async def test_a_table_named_by_a_derived_form_is_routing_evidence_like_its_word(tmp_path: Path) -> None:
    # "pay" reaches payroll.payment by a derived form (DERIVED, 0.85). As routing evidence it counts once, as the
    # word spelled otherwise; only hints (synonyms, a value's class: weight <= route.HINT) count squared. Squared
    # (0.72) it lost to two column matches in the one-table survey (ADR 0031, eighth session).
    root = tmp_path / "payroll"
    init_project(root, "ann")
    duckdb.connect(str(root / "wh.duckdb")).execute(PAYROLL_DDL).close()
    config = root / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}",
                                                 "connections:\n  wh: {driver: duckdb, path: wh.duckdb}"))
    runtime = open_runtime(root, {"KHIVE_PACKS": PACKS})
    try:
        ctx = Context(runtime, "operator:ann", CLI, presentation="verbose")
        scanned = await dispatch(parse('scan.run(connection="wh")'), ctx)
        assert scanned["results"][0]["ok"], scanned
        found = await dispatch(parse('discover.search(query="total pay per region", kinds=["table"], limit=10)'), ctx)
    finally:
        await runtime.aclose()
    ids = [ref["id"] for ref in found["results"][0]["result"]["refs"]]
    assert ids[:2] == ["payroll.payment", "payroll.employee"], ids
