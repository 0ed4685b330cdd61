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
from ruamel.yaml import YAML

pytestmark = pytest.mark.anyio
SEVERITY = ["high", "medium", "low", "info"]
DIMENSIONS = ("reachability", "connectivity", "benchmark", "scanned", "links", "described", "history")


def cover_billing(project: Path) -> None:
    write_page(project, "billing/invoices", "summary: invoices", "Invoices live in main.invoices.")


def describe_tables(project: Path) -> None:
    """What people add beside the scan's keys: a description per table (re-scans keep it)."""
    yaml = YAML()
    for shard in sorted((project / "_schema").rglob("*.yaml")):
        data = yaml.load(shard.read_text())
        for name, entry in data["tables"].items():
            entry["description"] = f"the {name} of the shop"
        with shard.open("w") as handle:
            yaml.dump(data, handle)


def suite(project: Path, document: dict) -> None:
    (project / "bench").mkdir(exist_ok=True)
    (project / "bench" / "retrieval-suite.json").write_text(json.dumps(document))


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
    describe_tables(project)
    (project / "bench").mkdir()
    (project / "bench" / "retrieval-suite.json").write_text(json.dumps({"cases": [
        {"query": "shipment carrier", "expected": ["main.shipments"]},
        {"query": "invoice amount", "expected": ["main.invoices"], "kinds": ["table"]},
        {"query": "orders status", "expected": ["orders", "main.orders"]}]}))
    result = await scanned("discover.doctor()")
    assert result["benchmark"] == {"status": "measured", "suite": "bench/retrieval-suite.json", "hitAt3": 1.0,
                                   "cases": 3, "points": 10.0, "of": 10}
    assert result["grade"] == "A", result["summary"]
    assert result["score"] >= 90 and result["summary"] == f"grade A ({result['score']:g}/100)"


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


async def test_the_score_and_the_summary_name_what_kept_it_from_an_a(scanned: Call, project: Path) -> None:
    cover_billing(project)
    suite(project, {"cases": [{"query": "shipment carrier", "expected": ["main.shipments"]}]})
    result = await scanned("discover.doctor()")
    assert result["described"]["value"] == 0.0 and result["described"]["points"] == 0
    assert result["score"] == round(sum(result[d]["points"] for d in DIMENSIONS), 1) < 90
    assert result["grade"] == "B" and "described lost 10" in result["summary"]
    assert result["summary"].startswith(f"grade B ({result['score']:g}/100): kept from an A by")
    describe_tables(project)
    assert (await scanned('sl.bootstrap(connection="billing")'))["errors"] == []
    (project / "bench" / "retrieval-suite.json").unlink()
    result = await scanned("discover.doctor()")
    assert result["score"] >= 90 and result["grade"] == "B", result["summary"]  # 90 or more, a gate missed
    assert result["summary"].endswith("benchmark: hit@3 is not-analyzed (an A needs a measured 80%; add "
                                      "bench/retrieval-suite.json)")
    assert result["scanned"]["value"] == 1.0 and result["links"]["value"] == 1.0
    assert result["history"] == {"value": None, "enabled": 0, "ingested": 0, "points": 10.0, "of": 10,
                                 "status": "not-applicable"}


async def test_findings_carry_category_ref_metadata_and_confidence(scanned: Call, project: Path) -> None:
    write_page(project, "notes/pointers", "summary: pointers\nrefs: [no-such-page]", "see the other page")
    result = await scanned("discover.doctor()")
    for item in result["findings"]:
        assert {"severity", "code", "title", "detail", "location", "category", "ref", "metadata",
                "confidence"} <= set(item)
        assert item["ref"] == item["code"] and 0 < item["confidence"] <= 1
        assert item["category"] in (*DIMENSIONS, "grade") and item["metadata"]["dimension"] == item["category"]
    by_code = {item["code"]: item for item in result["findings"]}
    assert set(by_code["table_undescribed"]["metadata"]["tables"]) >= {"main.orders", "main.invoices"}
    assert by_code["link_broken"]["metadata"]["broken"] == ["wiki:notes/pointers refs wiki:no-such-page"]
    assert result["links"]["broken"] == 1 and result["links"]["value"] < 1.0
    assert by_code["table_uncovered"]["confidence"] < 1.0  # read from names in text, not measured exactly


async def test_a_suite_can_name_its_connection(scanned: Call, project: Path) -> None:
    suite(project, {"connection": "billing", "cases": [
        {"query": "amount", "expected": ["main.invoices"], "kinds": ["table"]},
        {"query": "orders", "expected": ["main.orders"], "kinds": ["table"], "connection": "shop"}]})
    result = await scanned("discover.doctor()")
    assert result["benchmark"]["hitAt3"] == 1.0 and result["benchmark"]["cases"] == 2
    suite(project, {"connection": "billing", "cases": [{"query": "orders", "expected": ["main.orders"],
                                                        "kinds": ["table"]}]})
    missed = await scanned("discover.doctor()")  # scoped to billing, orders is not there
    assert missed["benchmark"]["hitAt3"] == 0.0
    (miss,) = [f for f in missed["findings"] if f["code"] == "benchmark_miss"]
    assert miss["metadata"]["connection"] == "billing"
    suite(project, {"cases": [{"query": "orders", "expected": ["main.orders"], "connection": "warehouse"}]})
    invalid = await scanned("discover.doctor()")
    (problem,) = [f for f in invalid["findings"] if f["code"] == "benchmark_invalid"]
    assert invalid["benchmark"]["status"] == "invalid" and invalid["ok"] is False
    assert "case 1 names connection 'warehouse'" in problem["detail"] and "billing, shop" in problem["detail"]


def khive_doctor(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KHIVE_PROJECT": str(project), "KHIVE_PACKS": "core,wiki,scan,sl,discover"}
    env.pop("COLUMNS", None)  # piped, as in `khive doctor | less`: nothing may be cut to a width
    return subprocess.run([sys.executable, "-m", "khive.cli", "doctor", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


@pytest.mark.slow
async def test_khive_doctor_prints_findings_and_exits_by_severity(scanned: Call, project: Path) -> None:
    healthy = khive_doctor(project)
    assert healthy.returncode == 0, healthy.stderr
    assert "discover.doctor()" in healthy.stdout and "benchmark_not_analyzed" in healthy.stdout
    summary = next(line for line in healthy.stdout.splitlines() if line.startswith("grade "))
    assert summary.startswith("grade B (") and "kept from an A by" in summary and "benchmark" in summary
    assert "described 0% (0/10)" in healthy.stdout and "history not-applicable (10/10)" in healthy.stdout
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
async def test_doctor_format_finding_and_the_connections_it_checks(scanned: Call, project: Path) -> None:
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace(
        "    path: shop.sqlite\n", "    path: shop.sqlite\n    historicSql: {enabled: true, queryLog: q.jsonl}\n")
        + "  spare:\n    driver: sqlite\n    path: billing.sqlite\n")
    document = json.loads(khive_doctor(project, "--json").stdout)
    result = document["checks"][0]["result"]
    assert result["scanned"] == {"value": 0.6667, "connections": 3, "scanned": 2, "points": 13.33, "of": 20}
    assert result["history"]["value"] == 0.0 and result["history"]["enabled"] == 1
    codes = {item["code"]: item for item in result["findings"]}
    assert codes["not_scanned"]["metadata"]["connection"] == "spare"
    assert codes["history_not_ingested"]["metadata"]["connection"] == "shop"
    listed = khive_doctor(project, "--format", "finding")
    assert listed.returncode == 0, listed.stderr
    findings = json.loads(listed.stdout)
    assert len(findings) == len(result["findings"])
    assert [f["severity"] for f in findings] == sorted((f["severity"] for f in findings), key=SEVERITY.index)
    for item in findings:
        assert set(item) == {"id", "severity", "title", "detail", "category", "location", "ref", "metadata",
                             "confidence"}
        assert item["id"].startswith("discover.doctor/") and item["metadata"]["check"] == "discover.doctor()"
    not_scanned = next(f for f in findings if f["ref"] == "not_scanned")
    assert not_scanned["location"] == {"path": "khive.yaml", "line": None} and not_scanned["category"] == "scanned"
    assert "khive scan spare" in not_scanned["detail"]


@pytest.mark.slow
@pytest.mark.postgres
def test_khive_doctor_probes_each_postgres_connection(tmp_path: Path, pg_database: str) -> None:
    from khive.scaffold import init_project

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
    headline = next(line for line in done.stdout.splitlines() if "extension_missing:" in line)
    assert headline.split("extension_missing:", 1)[1].strip()  # a probe's message is the headline, not blank
    assert done.returncode == 1
    listed = subprocess.run([sys.executable, "-m", "khive.cli", "doctor", "--format", "finding"], capture_output=True,
                            text=True, env=env, timeout=120, check=False)
    probe = [f for f in json.loads(listed.stdout) if f["metadata"]["check"].startswith("historic_sql.probe")]
    missing = next(f for f in probe if f["ref"] == "extension_missing")
    assert missing["severity"] == "high" and missing["metadata"]["severity"] == "error"  # error -> high
    assert missing["id"].startswith("historic_sql.probe/") and "CREATE EXTENSION" in missing["detail"]
