"""``khive init``'s project: the folders every installed pack declares, a starter khive.yaml, a .gitignore.

The folders come from the packs (``khive_project_directories``), so a pack adds its own folder without a change
to the core's layout; khive.yaml and .gitignore are written by ``khive.project.layout``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from khive.plugins import build_plugin_manager, collect_project_directories
from khive.project.layout import init_layout


def init_project(root: Path, user: str, packs: Sequence[str] | None = None,
                 extra_plugins: Iterable[object] = ()) -> list[str]:
    """Create what is missing (never overwrite) for ``packs`` (default: every installed pack) and
    ``extra_plugins``; returns the paths created."""
    pm, _ = build_plugin_manager(packs, extra=extra_plugins)
    return init_layout(root, user, collect_project_directories(pm))
