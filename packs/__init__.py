"""khive's built-in packs, each registered under the ``khive.packs`` entry points (ADR 0046).

The marker below tells khive that the installed top-level ``packs`` package is this one, not another
distribution's package of the same name (ADR 0047).
"""

KHIVE_BUILTIN_PACKS = True
