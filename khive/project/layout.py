"""``khive init``: the project layout and a starter khive.yaml."""

from __future__ import annotations

from pathlib import Path

from khive.project.config import CONFIG_NAME, STATE_DIR

STARTER_CONFIG = """\
# khive project configuration. Secrets are env:VAR references, never literal values.
version: 1

# packs: [core]           # default: every installed pack (KHIVE_PACKS overrides)

auth:
  default: allow          # public verbs; operator verbs are CLI-only unless a rule allows them
  rules: []
  # - {effect: deny, principal: "agent:*", verb: "wiki.delete", reason: "agents do not delete pages"}

audit:
  store: sqlite           # or postgres with url: env:KHIVE_AUDIT_URL

server:
  tokens: []
  # - {token: env:KHIVE_HTTP_TOKEN, principal: "agent:ci-bot"}

connections: {}
"""

DIRECTORIES = ("wiki/global", "semantic-layer", "raw-sources", "_schema", STATE_DIR)


def init_project(root: Path, user: str) -> list[str]:
    """Create what is missing; never overwrite. Returns the paths created."""
    created: list[str] = []
    root.mkdir(parents=True, exist_ok=True)
    for relative in (*DIRECTORIES, f"wiki/users/{user}"):
        path = root / relative
        if not path.exists():
            path.mkdir(parents=True)
            created.append(relative + "/")
    config = root / CONFIG_NAME
    if not config.exists():
        config.write_text(STARTER_CONFIG, encoding="utf-8")
        created.append(CONFIG_NAME)
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text(f"{STATE_DIR}/\n", encoding="utf-8")
        created.append(".gitignore")
    return created
