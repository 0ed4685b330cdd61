"""The khive command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

KHIVE = str(Path(sys.executable).parent / "khive")


def khive(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
          ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "KHIVE_NO_DAEMON": "1", **(env or {})}
    full_env.pop("KHIVE_PROJECT", None)
    full_env.update(env or {})
    return subprocess.run([KHIVE, *args], cwd=cwd, env=full_env, input=stdin, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    assert khive("init", str(tmp_path / "proj"), cwd=tmp_path).returncode == 0
    return tmp_path / "proj"


def test_request_exit_codes(project: Path) -> None:
    ok = khive("request", "ping(echo=1)", cwd=project)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["results"][0]["result"] == {"pong": True, "echo": 1}

    failed = khive("request", "[ping(), nope()]", cwd=project)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["status"] == "partial"

    bad = khive("request", "ping(echo=abc)", cwd=project)
    assert bad.returncode == 2
    assert json.loads(bad.stdout)["error"]["details"]["reason"] == "bareword-value"
    assert 'did you mean echo="abc"?' in bad.stderr


def test_a_request_that_does_not_parse_is_audited_without_its_text(project: Path) -> None:
    text = "sql.execute(connection=wh, sql=SELECT card_number FROM payments)"
    bad = khive("request", text, "--request-id", "cli-unparsed", cwd=project)
    assert bad.returncode == 2
    listed = khive("audit", "--json", "--outcome", "parse_error", cwd=project)
    [event] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (event["requestId"], event["verb"], event["transport"]) == ("cli-unparsed", "(parse)", "cli")
    assert event["principal"].startswith("operator:") and event["args"]["text_chars"] == len(text)
    trail = b"".join(path.read_bytes() for path in (project / ".khive").glob("audit.sqlite*"))
    assert b"cli-unparsed" in trail and b"card_number" not in trail
    outside = khive("request", text, cwd=project.parent)  # no project: nothing to audit into, same answer
    assert outside.returncode == 2 and "Traceback" not in outside.stderr


def test_request_from_stdin_and_presentation(project: Path) -> None:
    verbose = khive("request", "-", "--presentation", "verbose", cwd=project, stdin='ping(echo={"a": null})')
    assert json.loads(verbose.stdout)["results"][0]["result"]["echo"] == {"a": None}
    agent = khive("request", "-", cwd=project, stdin='ping(echo={"a": null})')
    assert "echo" not in json.loads(agent.stdout)["results"][0]["result"]


def test_cli_runs_as_local_operator_so_operator_verbs_work(project: Path) -> None:
    result = khive("request", "audit.query(limit=5)", cwd=project)
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["results"][0]["result"]["count"] >= 0


def test_verbs_lists_catalogue(project: Path) -> None:
    result = khive("verbs", cwd=project)
    assert result.returncode == 0
    assert "ping" in result.stdout and "audit.query" in result.stdout and "[operator]" in result.stdout


def test_audit_reads_back_events(project: Path) -> None:
    khive("request", '[ping(echo="x"), nope()]', "--request-id", "cli-req", cwd=project)
    result = khive("audit", "--json", "--limit", "10", cwd=project)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    mine = [event for event in events if event["requestId"] == "cli-req"]
    assert sorted(event["outcome"] for event in mine) == ["ok", "unknown_verb"]
    assert all(event["transport"] == "cli" and event["principal"].startswith("operator:") for event in mine)
    filtered = khive("audit", "--json", "--outcome", "unknown_verb", cwd=project)
    assert all(json.loads(line)["outcome"] == "unknown_verb" for line in filtered.stdout.splitlines())


def test_project_flag_env_and_missing_project(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert khive("--project", str(project), "request", "ping()", cwd=elsewhere).returncode == 0
    assert khive("request", "ping()", cwd=elsewhere, env={"KHIVE_PROJECT": str(project)}).returncode == 0
    missing = khive("request", "ping()", cwd=elsewhere)
    assert missing.returncode == 2 and "no khive project found" in missing.stderr


def test_unknown_pack_aborts_start(project: Path) -> None:
    result = khive("request", "ping()", cwd=project, env={"KHIVE_PACKS": "core,bogus"})
    assert result.returncode == 2
    assert "unknown pack(s) bogus" in result.stderr


def test_bad_config_reports_file_and_line(project: Path) -> None:
    (project / "khive.yaml").write_text("version: 1\naudit:\n  store: mongo\n")
    result = khive("verbs", cwd=project)
    assert result.returncode == 2
    assert "khive.yaml:3" in result.stderr and "audit.store" in result.stderr


def test_scan_command_scans_a_connection(project: Path) -> None:
    import sqlite3

    db = sqlite3.connect(project / "tiny.sqlite")
    db.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, label TEXT); INSERT INTO t VALUES (1, 'a');")
    db.close()
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace(
        "connections: {}", "connections:\n  tiny:\n    driver: sqlite\n    path: tiny.sqlite\n"))
    result = khive("scan", "tiny", cwd=project)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()  # a summary, not the envelope with every column
    assert lines[0].startswith("scan tiny (sqlite): 1 tables, 0 views, 2 columns") and len(lines) <= 6, lines
    assert "first scan of this connection" in result.stdout and "run: raw-sources/tiny/live-database/" in result.stdout
    assert (project / "_schema/tiny/tiny.main.yaml").is_file()
    db = sqlite3.connect(project / "tiny.sqlite")
    db.executescript("ALTER TABLE t ADD COLUMN note TEXT; CREATE TABLE u (id INTEGER PRIMARY KEY);")
    db.close()
    changed = khive("scan", "tiny", cwd=project)
    assert "changes since" in changed.stdout and "tables 1 added, 1 modified; columns 2 added" in changed.stdout, \
        changed.stdout
    again = khive("scan", "tiny", "--json", cwd=project)  # the envelope, every table and column
    report = json.loads(again.stdout)["results"][0]["result"]
    assert report["counts"]["tables"] == 2 and report["diffSummary"]["tables"]["unchanged"] == 2
    missing = khive("scan", "nope", cwd=project)
    assert missing.returncode == 1 and "connection_not_found" in missing.stdout


def test_a_packs_config_block_is_checked_when_the_runtime_starts(project: Path) -> None:
    # the mistake is in historic_sql's block, which that pack validates through khive_config_sections
    config = project / "khive.yaml"
    config.write_text(config.read_text().replace("connections: {}\n", (
        "connections:\n  local:\n    driver: sqlite\n    path: data/shop.sqlite\n"
        "    historicSql: {enabled: true, windowDay: 30}\n")))
    result = khive("request", "ping()", cwd=project)
    assert result.returncode == 2, result.stdout
    assert "connections.local.historicSql.windowDay" in result.stderr and "windowDays" in result.stderr


def test_overview_of_a_new_project_warns_of_nothing(project: Path) -> None:
    """A pack's own section of ``overview()`` (``wiki``) is declared by the open result model: a user's first
    ``khive request 'overview()'`` (and every ``khive site build``) must not warn that it is undeclared."""
    done = khive("request", "overview()", cwd=project, env={"KHIVE_RESULT_CHECK": ""})  # the user's default check
    assert done.returncode == 0, done.stderr
    assert "wiki" in json.loads(done.stdout)["results"][0]["result"], done.stdout
    assert "does not declare" not in done.stderr, done.stderr
