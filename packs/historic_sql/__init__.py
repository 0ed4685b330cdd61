"""The historic_sql pack: query history into per-table usage and cross-table patterns.

Pattern pages are wiki files and usage lives in the ``_schema`` shards and SL sources, so the wiki,
scan and sl index sources already index what this pack writes; it contributes no source of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from khive import __version__
from khive.hookspecs import PackInfo, hookimpl
from khive.verbs import Verb


@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="historic_sql", version=__version__, description="query history into usage and patterns")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    from packs.historic_sql.verbs import VERBS

    return VERBS
