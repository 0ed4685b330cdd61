"""The historic_sql pack: query history into per-table usage and cross-table patterns.

Pattern pages are wiki files and usage lives in the ``_schema`` shards and SL sources, so the wiki,
scan and sl index sources already index what this pack writes; it contributes no source of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from khive import __version__
from khive.hookspecs import ConfigSection, OverviewPart, PackInfo, ProjectDirectory, WarmTask, hookimpl
from khive.verbs import Verb
from packs.historic_sql.evidence import DIGESTS

if TYPE_CHECKING:
    from khive.services import Services


@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="historic_sql", version=__version__, description="query history into usage and patterns")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    from packs.historic_sql.verbs import VERBS

    return VERBS


@hookimpl
def khive_warm(runtime: Services) -> Sequence[WarmTask]:
    """In a warm daemon, load sqlglot's dialects and the analyzer before the first ingest needs them."""
    drivers = sorted({c.driver for c in runtime.config.connections.values() if c.historicSql})

    async def load() -> None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(_load_parser, drivers)

    return [WarmTask("historic_sql.parser", load)]


def _load_parser(drivers: Sequence[str]) -> None:
    from packs.historic_sql.analyze import analyze_tree  # noqa: F401 -- importing is the work
    from packs.historic_sql.history import DIALECTS
    from packs.historic_sql.normalize import Normalizer

    for driver in drivers:
        Normalizer(DIALECTS[driver]).normalize("SELECT 1 FROM t WHERE a = 1")  # builds the dialect's tables


@hookimpl
def khive_config_sections() -> Sequence[ConfigSection]:
    from packs.historic_sql.config import connection_settings

    return [ConfigSection("historicSql", connection_settings)]


@hookimpl
def khive_overview_parts() -> Sequence[OverviewPart]:
    from packs.historic_sql.overview import PART

    return [PART]


@hookimpl
def khive_project_directories() -> Sequence[ProjectDirectory]:
    return (ProjectDirectory(f"raw-sources/*/{DIGESTS}", purpose="usage and pattern digests: they cost work to make"),
            ProjectDirectory("raw-sources/*/historic-sql", committed=False,
                             purpose="ingest runs: machine-local evidence the next ingest writes again"))
