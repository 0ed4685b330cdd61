"""The site served live (``khive site serve``, ``khive serve --http --site``) through its ASGI app: the bearer
token, read-only, search asking ``discover.search`` itself, and the gate deciding per principal."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sitecheck import Demo, discover_top_async, free_port, parse_html, wait_for

from khive.bootstrap import open_runtime
from khive.mcp_server import http_app
from khive.runtime import Runtime
from khive.site.server import COOKIE, mount_site, site_app

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKEN = "site test;token=0123456789"  # characters a cookie value cannot hold as they are
AGENT_TOKEN = "agent-test-token-9876543210"
NEW_QUESTION = "coupon redemptions by campaign"  # not among the static build's questions


@pytest.fixture
async def runtime(demo: Demo) -> AsyncIterator[Runtime]:
    opened = open_runtime(demo.root, {})
    try:
        yield opened
    finally:
        await opened.aclose()


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


async def test_pages_need_the_token_which_the_address_hands_over_as_a_cookie(runtime: Runtime) -> None:
    async with client(site_app(runtime, tokens={TOKEN: "operator"}, operator=True)) as http:
        refused = await http.get("/tables/index.html")
        assert refused.status_code == 401
        assert "sales.orders" not in refused.text
        wrong = await http.get("/tables/index.html", headers={"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 401
        handed = await http.get("/tables/index.html", params={"token": TOKEN})
        assert handed.status_code == 303
        assert handed.headers["location"] == "/tables/index.html"  # the token leaves the address
        assert "HttpOnly" in handed.headers["set-cookie"] and "SameSite=Strict" in handed.headers["set-cookie"]
        page = await http.get("/tables/index.html")  # the client kept the cookie
        assert page.status_code == 200
        assert "sales.orders" in page.text
        assert page.headers["referrer-policy"] == "no-referrer"
        assert COOKIE in http.cookies


async def test_the_site_is_read_only(runtime: Runtime) -> None:
    async with client(site_app(runtime, tokens={TOKEN: "operator"}, operator=True)) as http:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        refused = await http.post("/index.html", headers=headers, content=b"x")
        assert refused.status_code == 405
        assert (await http.get("/no/such/page.html", headers=headers)).status_code == 404
        overview = await http.get("/", headers=headers)
        assert overview.status_code == 200
        assert "what the agents see" in overview.text


async def test_served_search_lists_the_same_top_three_as_discover_search(demo: Demo, runtime: Runtime) -> None:
    expected = await discover_top_async(demo.root, NEW_QUESTION)
    async with client(site_app(runtime, tokens={TOKEN: "operator"}, operator=True)) as http:
        page = await http.get("/search.html", params={"q": NEW_QUESTION},
                              headers={"Authorization": f"Bearer {TOKEN}"})
    assert page.status_code == 200
    assert parse_html(page.text).ref_ids[:3] == expected


async def test_serve_http_mounts_the_site_behind_the_same_tokens(runtime: Runtime) -> None:
    tokens = {AGENT_TOKEN: "agent:http"}
    app = mount_site(http_app(runtime, tokens=tokens), runtime, tokens=tokens)
    async with client(app) as http:
        assert (await http.get("/site/")).status_code == 401
        assert (await http.post("/mcp", json={})).status_code == 401  # MCP still wants its token
        moved = await http.get("/site", headers={"Authorization": f"Bearer {AGENT_TOKEN}"})
        assert moved.status_code == 308 and moved.headers["location"] == "/site/"
        agent = {"Authorization": f"Bearer {AGENT_TOKEN}"}
        table = await http.get("/site/tables/shop/sales.orders.html", headers=agent)
        assert table.status_code == 200
        assert "as agent:http" in table.text  # read as the token's principal
        audit = await http.get("/site/audit.html", headers=agent)
        assert audit.status_code == 200
        assert "audit.query" in audit.text and "did not answer" in audit.text  # the gate refused the agent
    async with client(site_app(runtime, tokens={TOKEN: "operator"}, operator=True)) as http:
        operator = await http.get("/audit.html", headers={"Authorization": f"Bearer {TOKEN}"})
    assert "did not answer" not in operator.text
    refusals = operator.text.split('id="refusals"')[1].split("</section>")[0]
    assert "agent:http" in refusals and "audit.query" in refusals  # the agent's refused read, on the operator's view


def test_site_serve_refuses_an_address_beyond_loopback(demo: Demo, capsys: pytest.CaptureFixture[str]) -> None:
    from khive.cli import main

    assert main(["--project", str(demo.root), "site", "serve", "--host", "0.0.0.0"]) == 2
    assert "loopback only" in capsys.readouterr().err


def test_khive_serve_http_site_answers_beside_mcp(demo: Demo) -> None:
    port = free_port()
    env = {**os.environ, "KHIVE_HTTP_TOKEN": AGENT_TOKEN}
    process = subprocess.Popen([sys.executable, "-m", "khive.cli", "--project", str(demo.root), "serve", "--http",
                                "--site", "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
    try:
        wait_for(port)
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/site/").status_code == 401
        page = httpx.get(f"{base}/site/tables/index.html", headers={"Authorization": f"Bearer {AGENT_TOKEN}"})
        assert page.status_code == 200 and "sales.orders" in page.text
        assert httpx.post(f"{base}/mcp", json={}).status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
