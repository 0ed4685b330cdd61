"""discover.doctor and ``khive doctor``: measured reachability, connectivity, the suite, grades, findings."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from discover_project import Call, write_page

pytestmark = pytest.mark.anyio
SEVERITY = ["high", "medium", "low", "info"]


def cover_billing(project: Path) -> None:
    write_page(project, "billing/invoices", "summary: invoices", "Invoices live in main.invoices.")


async def test_without_a_suite_the_benchmark_is_not_analyzed(scanned: Call, project: Path) -> None:
    cover_billing(project)
    result = await scanned("discover.doctor()")
    assert result["benchmark"]["status"] == "not-analyzed" and result["benchmark"]["hitAt3"] is None
    assert result["reachability"]["value"] == 1.0 and result["connectivity"]["value"] >= 0.8
    assert result["grade"] == "B"  # everything else is fine, but hit@3 was not measured
    codes = [f["code"] for f in result["findings"]]
    assert "benchmark_not_analyzed" in codes and result["ok"] is True
    ranks = [SEVERITY.index(f["severity"]) for f in result["findings"]]
    assert ranks == sorted(ranks)


async def test_a_passing_suite_earns_an_a(scanned: Call, project: Path) -> None:
    cover_billing(project)
    (project / "bench").mkdir()
    (project / "bench" / "retrieval-suite.json").write_text(json.dumps({"cases": [
        {"query": "shipment carrier", "expected": ["main.shipments"]},
        {"query": "invoice amount", "expected": ["main.invoices"], "kinds": ["table"]},
        {"query": "orders status", "expected": ["orders", "main.orders"]}]}))
    result = await scanned("discover.doctor()")
    assert result["benchmark"] == {"status": "measured", "suite": "bench/retrieval-suite.json", "hitAt3": 1.0,
                                   "cases": 3}
    assert result["grade"] == "A"


async def test_misses_lower_the_grade_and_are_listed(scanned: Call, project: Path) -> None:
    cover_billing(project)
    (project / "bench").mkdir()
    (project / "bench" / "retrieval-suite.json").write_text(json.dumps({"cases": [
        {"query": "shipment carrier", "expected": ["main.customers"]}]}))
    result = await scanned("discover.doctor()")
    assert result["benchmark"]["hitAt3"] == 0.0 and result["grade"] == "B"
    assert {"benchmark_low", "benchmark_miss"} <= {f["code"] for f in result["findings"]}


async def test_low_connectivity_and_a_broken_page(scanned: Call, project: Path) -> None:
    for name in ("customers", "orders", "products", "order_items", "shipments"):
        (project / "semantic-layer" / "shop" / f"{name}.yaml").unlink()
    (project / "wiki" / "global").mkdir(parents=True, exist_ok=True)
    (project / "wiki" / "global" / "broken.md").write_text("---\nsummary: [unclosed\n---\nbody\n")
    result = await scanned("discover.doctor()")
    assert result["connectivity"]["tablesCovered"] == 0 and result["reachability"]["value"] < 1.0
    assert result["findings"][0]["severity"] == "high" and result["findings"][0]["code"] == "index_error"
    assert result["findings"][0]["location"] == "wiki/global/broken.md" and result["ok"] is False
    assert result["grade"] in ("C", "D")


def khive_doctor(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KHIVE_PROJECT": str(project), "KHIVE_PACKS": "core,wiki,scan,sl,discover"}
    env.pop("COLUMNS", None)  # piped, as in `khive doctor | less`: nothing may be cut to a width
    return subprocess.run([sys.executable, "-m", "khive.cli", "doctor", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


@pytest.mark.slow
async def test_khive_doctor_prints_findings_and_exits_by_severity(scanned: Call, project: Path) -> None:
    healthy = khive_doctor(project)
    assert healthy.returncode == 0, healthy.stderr
    assert "discover.doctor()" in healthy.stdout and "grade B" in healthy.stdout
    assert "benchmark_not_analyzed" in healthy.stdout
    (project / "wiki" / "global").mkdir(parents=True, exist_ok=True)
    (project / "wiki" / "global" / "broken.md").write_text("---\nsummary: [unclosed\n---\nbody\n")
    broken = khive_doctor(project)
    assert broken.returncode == 1 and "index_error" in broken.stdout


@pytest.mark.slow
async def test_piped_doctor_output_is_whole_and_json_is_the_same_findings(scanned: Call, project: Path) -> None:
    plain = khive_doctor(project)
    wanted = 'add bench/retrieval-suite.json: {"cases": [{"query": "...", "expected": ["schema.table"]}]}'
    # the fix on a line of its own, whole: not wrapped, cut or ellipsized at 80 columns
    assert any(line.strip() == wanted for line in plain.stdout.splitlines()), plain.stdout
    # what each connection's last scan redacted and left out, by kind (ADR 0035)
    assert re.search(r"^\w+: redacted \d+ sample values.*; \d+ columns named like secrets not sampled; "
                     r"\d+ server objects left out$", plain.stdout, re.M), plain.stdout
    document = khive_doctor(project, "--json")
    assert document.returncode == plain.returncode == 0
    parsed = json.loads(document.stdout)
    assert parsed["failing"] is False
    assert [check["request"] for check in parsed["checks"]] == ["discover.doctor()", "scan.connections()"]
    codes = [finding["code"] for finding in parsed["checks"][0]["result"]["findings"]]
    assert all(code in plain.stdout for code in codes) and "benchmark_not_analyzed" in codes


@pytest.mark.slow
@pytest.mark.postgres
def test_khive_doctor_probes_each_postgres_connection(tmp_path: Path, pg_database: str) -> None:
    from khive.project.layout import init_project

    project = tmp_path / "proj"
    init_project(project, "ann")
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  warehouse:\n    driver: postgres\n    url: env:WAREHOUSE_URL\n"))
    env = {**os.environ, "KHIVE_PROJECT": str(project), "WAREHOUSE_URL": pg_database,
           "KHIVE_PACKS": "core,wiki,scan,sl,historic_sql,discover"}
    done = subprocess.run([sys.executable, "-m", "khive.cli", "doctor"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert 'historic_sql.probe(connection="warehouse")' in done.stdout, done.stdout + done.stderr
    # a fresh database has no pg_stat_statements: the probe's error finding fails the doctor, with its fix
    assert "extension_missing" in done.stdout and "CREATE EXTENSION pg_stat_statements" in done.stdout
    assert done.returncode == 1
