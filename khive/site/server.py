"""The site served live: an ASGI app that renders each page when it is asked for, as the caller's principal.

The pages are the static build's pages (the same routes and renderers); what differs is search, which
asks ``discover.search`` for any question, and who reads: ``khive site serve`` reads as the operator,
``khive serve --http --site`` as the principal the bearer token names, so the gate decides what each
page may show (an agent's token gets no audit view). A browser cannot send an ``Authorization``
header from an address bar, so ``?token=`` is accepted once and turned into an HttpOnly cookie; the
token is then dropped from the address (and ``Referrer-Policy: no-referrer`` keeps it from leaking).
Read-only: only GET and HEAD are answered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode

from khive.bearer import match_token
from khive.context import MCP_HTTP
from khive.runtime import Runtime
from khive.site import paths
from khive.site.build import asset, footer, stylesheet
from khive.site.catalog import load_catalog
from khive.site.layout import Page, document
from khive.site.pages.common import Site
from khive.site.pages.search import served_search
from khive.site.reader import Reader, operator_reader, principal_reader
from khive.site.routes import routes

COOKIE = "khive_site"
ANONYMOUS = "agent:http-local"  # `khive serve --http --no-auth` on loopback: as the MCP endpoint names it
ASSETS = {paths.STYLESHEET: "text/css; charset=utf-8", paths.AUDIT_SCRIPT: "text/javascript; charset=utf-8"}
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
                                 b"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store"),
]

Send = Callable[[dict[str, Any]], Awaitable[None]]


def site_app(runtime: Runtime, *, tokens: Mapping[str, str] | None, operator: bool = False, prefix: str = "") -> Any:
    """The ASGI app; ``tokens`` maps token -> principal (None: no auth, loopback only, checked by the caller);
    ``operator`` reads as the operator whatever the token names; ``prefix`` is where it is mounted."""
    return SiteApp(runtime, tokens, operator, prefix.rstrip("/"))


class SiteApp:
    def __init__(self, runtime: Runtime, tokens: Mapping[str, str] | None, operator: bool, prefix: str):
        self.runtime = runtime
        self.tokens = dict(tokens) if tokens is not None else None
        self.operator = operator
        self.prefix = prefix
        self.assets = {path: (stylesheet() if path == paths.STYLESHEET else asset(path.rpartition("/")[2]))
                       .encode("utf-8") for path in ASSETS}  # read once, not per request

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"read-only: GET and HEAD only", extra=[(b"allow", b"GET, HEAD")])
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = (query.get("token") or [""])[0]
        if given and self.tokens is not None and match_token(given, self.tokens):
            await self._adopt_token(scope, send, given, query)
            return
        principal = self._principal(scope)
        if principal is None:
            await _respond(send, 401, b"missing or invalid bearer token: open the address khive printed "
                                      b"(it ends in ?token=...), or send Authorization: Bearer <token>",
                           extra=[(b"www-authenticate", b'Bearer realm="khive"')])
            return
        path = scope["path"].removeprefix(self.prefix).lstrip("/")
        if not path or path.endswith("/"):
            path += paths.OVERVIEW
        await self._page(path, query, principal, send, head=scope["method"] == "HEAD")

    def _principal(self, scope: dict[str, Any]) -> str | None:
        if self.tokens is None:
            return ANONYMOUS
        headers = dict(scope.get("headers") or [])
        scheme, _, presented = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        found = match_token(presented, self.tokens) if scheme.lower() == "bearer" else None
        if found is None:
            found = match_token(_cookie(headers.get(b"cookie", b"").decode("latin-1")), self.tokens)
        return found[0] if found else None

    async def _adopt_token(self, scope: dict[str, Any], send: Send, token: str, query: dict[str, list[str]]) -> None:
        rest = {name: values for name, values in query.items() if name != "token"}
        location = quote(scope["path"]) + (f"?{urlencode(rest, doseq=True)}" if rest else "")
        value = quote(token, safe="")  # a token may hold characters a cookie value may not
        cookie = f"{COOKIE}={value}; Path={self.prefix or '/'}; HttpOnly; SameSite=Strict"
        await _respond(send, 303, b"", extra=[(b"location", location.encode()), (b"set-cookie", cookie.encode())])

    def _reader(self, principal: str) -> Reader:
        return operator_reader(self.runtime) if self.operator else principal_reader(self.runtime, principal, MCP_HTTP)

    async def _page(self, path: str, query: dict[str, list[str]], principal: str, send: Send, head: bool) -> None:
        if path in ASSETS:
            await _respond(send, 200, self.assets[path], ASSETS[path], head=head)
            return
        reader = self._reader(principal)
        catalog = await load_catalog(reader)
        site = Site(reader, catalog)
        page: Page | None
        if path == paths.SEARCH:
            page = await served_search(site, (query.get("q") or [""])[0])
        else:
            render = routes(catalog).get(path)
            page = await render(site) if render else None
        if page is None:
            await _respond(send, 404, b"no such page on this site", head=head)
            return
        html = document(page, catalog.project, footer(reader.principal, served=True))
        await _respond(send, 200, html.encode("utf-8"), "text/html; charset=utf-8", head=head)


def _cookie(header: str) -> str:
    try:
        jar = SimpleCookie(header)
    except CookieError:
        return ""
    morsel = jar.get(COOKIE)
    return unquote(morsel.value) if morsel else ""


async def _respond(send: Send, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
                   extra: list[tuple[bytes, bytes]] | None = None, head: bool = False) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()),
               *SECURITY_HEADERS, *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def _lifespan(receive: Any, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class Mounted:
    """``khive serve --http --site``: paths under ``prefix`` go to the site, every other path to MCP."""

    def __init__(self, prefix: str, site: Any, rest: Any):
        self.prefix = prefix.rstrip("/")
        self.site = site
        self.rest = rest

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] == "http" and (scope["path"] == self.prefix or scope["path"].startswith(self.prefix + "/")):
            if scope["path"] == self.prefix:  # relative links need the trailing slash
                await _respond(send, 308, b"", extra=[(b"location", (self.prefix + "/").encode())])
                return
            await self.site(scope, receive, send)
            return
        await self.rest(scope, receive, send)


SITE_PREFIX = "/site"


def mount_site(mcp_app: Any, runtime: Runtime, *, tokens: Mapping[str, str] | None) -> Any:
    """The MCP app with the site beside it at ``/site/``, read as each token's principal."""
    return Mounted(SITE_PREFIX, site_app(runtime, tokens=tokens, prefix=SITE_PREFIX), mcp_app)
