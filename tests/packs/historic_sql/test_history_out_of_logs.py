"""Query history is other people's statements: sqlglot's warning about a text it reads only as a Command quoted
its first 100 characters to stderr (the daemon's log), a CREATE ROLE's password included (ADR 0058, eighth
session)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hsql_project import make_project, workload, write_log

PASSWORD = "brand-new-secret-42"


def test_ingest_keeps_history_texts_out_of_its_output(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    ddl = [(f"CREATE ROLE third LOGIN PASSWORD '{PASSWORD}'", "dba", 3),
           (f"ALTER ROLE third PASSWORD '{PASSWORD}'", "dba", 3)]
    write_log(project / "logs/queries.jsonl", [*workload(), *ddl])
    khive = Path(sys.executable).parent / "khive"
    subprocess.run([khive, "--project", str(project), "scan", "tpch"], check=True, capture_output=True)
    done = subprocess.run([khive, "--project", str(project), "ingest", "tpch"], capture_output=True, text=True,
                          check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KHIVE_NO_DAEMON": "1"})
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stderr + done.stdout, done.stderr
