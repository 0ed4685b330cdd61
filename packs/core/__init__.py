"""The core pack: introspection (``verbs``), a no-op (``ping``) and the audit trail (``audit.query``)."""

from __future__ import annotations

from collections.abc import Sequence

from khive import __version__
from khive.hookspecs import PackInfo, hookimpl
from khive.verbs import Verb
from packs.core.verbs import VERBS


@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="core", version=__version__, description="introspection and audit")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    return VERBS
