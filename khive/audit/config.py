"""Open the audit store a project's ``khive.yaml`` names (no Runtime needed: the CLI audits a
rejected request text before, or instead of, building one)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from khive.audit.process import this_process
from khive.audit.sqlite import SqliteAuditStore
from khive.audit.store import AuditStore
from khive.envref import resolve
from khive.errors import ConfigError
from khive.project.config import KhiveConfig
from khive.project.locate import STATE_DIR


def open_audit_store(project: Path, config: KhiveConfig, env: Mapping[str, str]) -> AuditStore:
    this_process()  # who we are reads /proc once: here, before any event loop runs a request
    section = config.audit
    if section.store == "postgres":
        from khive.audit.postgres import PostgresAuditStore

        if section.url is None:
            raise ConfigError("audit.store is postgres but audit.url is not set",
                              details={"fix": "set audit.url: env:KHIVE_AUDIT_URL"})
        return PostgresAuditStore(resolve(section.url, env, field="audit.url"), table=section.table)
    path = Path(section.path) if section.path else Path(STATE_DIR) / "audit.sqlite"
    return SqliteAuditStore(path if path.is_absolute() else project / path)
