"""The demo query log: real SQL over the shop, in the file format historic_sql reads."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import duckdb
import pytest

from khive.cli.demo.querylog import TEMPLATES, generate_log, write_log
from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.readers.logfile import read_logfile

END = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.name)
def test_every_template_runs_on_the_shop(template, shop_path: Path) -> None:  # type: ignore[no-untyped-def]
    sql = template.sql(random.Random(3))
    with duckdb.connect(str(shop_path), read_only=True) as con:
        if template.error_rate == 1.0:
            with pytest.raises(duckdb.BinderException):
                con.execute(sql)
        else:
            con.execute(sql).fetchall()


def test_log_is_deterministic_windowed_and_varied() -> None:
    records = generate_log(END)
    assert records == generate_log(END)
    assert len(records) == 3000
    starts = [dt.datetime.fromisoformat(str(r["started_at"])) for r in records]
    assert starts == sorted(starts) and END - dt.timedelta(days=60) <= starts[0] and starts[-1] <= END
    users = {r["user"] for r in records}
    assert {"svc_reporting", "dbt_runner", "looker_prod"} <= users and len(users) >= 10
    assert len({r["sql"] for r in records}) > 1000  # literals vary
    assert any(r["error"] for r in records) and any(r["sql"] == "SELECT 1" for r in records)


def test_historic_sql_reader_accepts_the_file(tmp_path: Path) -> None:
    path = tmp_path / "query-log.jsonl"
    assert write_log(path, END) == 3000
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0])["sql"]
    config = HistoricSqlConfig(enabled=True, filters={"serviceAccounts": [{"pattern": "^svc_", "mode": "mark-only"}]})
    result = read_logfile(path, config, dialect="duckdb", now=END)
    assert not [f for f in result.findings if f.severity != "info"], result.findings
    markers = {marker for template in result.templates for marker in template.markers}
    assert {"dbt", "looker", "service-account"} <= markers
    # Literals fold into templates: many executions, a few dozen shapes.
    assert 15 <= len(result.templates) <= 120
