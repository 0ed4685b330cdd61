"""``khive site build`` on a real warehouse: ``realworld-pg up --with-secrets`` (northwind, sakila, chinook,
their query history holding other roles' fake secrets). Every table, source and page has a page, every link
resolves, the review list holds exactly the relationships the scan left for review, and no fake secret is in
any file of the site."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from realworld import DATABASES, history_config, realworld_cluster
from sitecheck import broken_links, expected_subjects, operator_results, pages, subjects

from khive.cli import main
from khive.scaffold import init_project

pytestmark = [pytest.mark.data, pytest.mark.slow]

@pytest.fixture(scope="module")
def warehouse() -> Iterator[tuple[dict[str, str], Path]]:
    with realworld_cluster("rwsite-", "--with-secrets") as cluster:
        yield cluster


def test_a_real_warehouse_gets_a_whole_site_without_a_secret(warehouse: tuple[dict[str, str], Path],
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variables, directory = warehouse
    for name, value in variables.items():
        if name.endswith("_URL"):
            monkeypatch.setenv(name, value)
    secrets = [line for line in (directory / "secrets.txt").read_text().splitlines() if line]
    assert secrets and all("FAKE" in secret for secret in secrets)
    project = tmp_path / "rw"
    init_project(project, "analyst")
    (project / "khive.yaml").write_text(history_config(), encoding="utf-8")
    for name in DATABASES:
        assert main(["--project", str(project), "scan", name]) == 0
        assert main(["--project", str(project), "request", f'sl.bootstrap(connection="{name}")']) == 0
        assert main(["--project", str(project), "ingest", name]) == 0
    assert main(["--project", str(project), "site", "build"]) == 0
    site = project / ".khive" / "site"

    expected = expected_subjects(project)
    assert sum(subject.startswith("table:") for subject in expected) > 30
    assert expected <= subjects(site).keys()
    assert broken_links(site) == []
    leaked = [str(p.relative_to(site)) for p in site.rglob("*") if p.is_file()
              and any(secret.encode() in p.read_bytes() for secret in secrets)]
    assert leaked == []

    tables = [s.split(":", 2)[1:] for s in expected if s.startswith("table:")]
    entities = anyio.run(operator_results, project, *(f'scan.entity(connection="{c}", table="{t}")' for c, t in tables))
    in_review = sum(rel.get("tier") == "review" for entity in entities
                    for rel in (entity.get("inferredRelationships") or {}).get("out") or [])
    review = pages(site)["review.html"]
    assert f"Relationships awaiting review ({in_review})" in "".join(review.text)
