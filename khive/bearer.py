"""Which principal a presented bearer token names (``server.tokens``, ``KHIVE_HTTP_TOKEN``; ADR 0032).

One comparison for every HTTP surface (the MCP endpoint, the site): constant-time against each token, so
the time taken says nothing about how much of a token was right.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping


def match_token(presented: str, tokens: Mapping[str, str]) -> tuple[str, str] | None:
    """``(principal, token)`` for the token ``presented`` equals, else None; ``tokens`` maps token -> principal."""
    found = None
    given = presented.strip().encode()
    if not given:
        return None
    for token, principal in tokens.items():
        if hmac.compare_digest(token.encode(), given):
            found = (principal, token)
    return found
