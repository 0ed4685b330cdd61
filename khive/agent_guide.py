"""Where the agent guide lives in a project and how its generated part is marked.

``khive setup-agents`` writes the guide as a skill at ``SKILL_PATH``; ``khive.guide`` generates it
from the project. Only the text between ``BEGIN`` and ``END`` is regenerated: what a person writes
outside the markers (and the frontmatter, once written) is theirs and survives every rerun.
"""

from __future__ import annotations

SKILL_PATH = ".claude/skills/khive/SKILL.md"

BEGIN = ("<!-- khive:guide:begin -- written by `khive setup-agents` from this project and rewritten on every "
         "run; put your own notes outside these markers, they are kept -->")
END = "<!-- khive:guide:end -->"

FRONTMATTER = """\
---
name: khive
description: Find, understand and query this project's data (tables, metrics, playbooks, query history)
  through khive's one MCP tool, `request`. Use it before writing SQL against the project's databases.
---
"""

NOTES = """\
## Our notes

Write here what agents should know about this project that khive cannot see (who owns which tables,
definitions in dispute, what not to touch). `khive setup-agents` keeps this section as it is.
"""

# The static guides of earlier versions (sha256): replaced whole, since nobody wrote in them.
EARLIER_GUIDES = frozenset({
    "cc20adf7a1431e167e58e3c3a83e0a2ef7c277a24ddb4e5c428a7f812920addd",
    "46b90740a9aeca8d9495742d1e1ba0fdbdb3aa13235abfdf9018dcfc1148b6a4",
})
