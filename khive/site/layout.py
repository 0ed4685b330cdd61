"""The frame around every page: head, navigation, the search box and the footer."""

from __future__ import annotations

from dataclasses import dataclass

from khive.site import paths
from khive.site.html import Child, Markup, el, link, render

NAV = (("Overview", paths.OVERVIEW), ("Tables", paths.TABLES), ("Sources", paths.SOURCES),
       ("Wiki", paths.WIKI), ("Patterns", paths.PATTERNS), ("Review", paths.REVIEW), ("Audit", paths.AUDIT))


@dataclass(frozen=True)
class Page:
    """One page of the site: where it lives, its title and its body; ``scripts`` are site-relative;
    ``subject`` names what the page is about (``table:<connection>:<id>``, ``source:<connection>:<name>``,
    ``wiki:<scope>:<key>``), written as ``data-subject`` so a tool can find the page of a thing."""

    path: str
    title: str
    body: Markup
    scripts: tuple[str, ...] = ()
    subject: str | None = None


def document(page: Page, project: str, footer: Child) -> str:
    def to(target: str) -> str:
        return paths.href(page.path, target)

    nav = el("nav", {"class": "top"},
             el("a", {"class": "brand", "href": to(paths.OVERVIEW)}, "khive · ", project),
             el("ul", None, [el("li", None, link(to(target), name,
                                                 aria_current="page" if target == page.path else None))
                             for name, target in NAV]),
             el("form", {"class": "search", "action": to(paths.SEARCH), "method": "get", "role": "search"},
                el("input", {"type": "search", "name": "q", "placeholder": "Search like an agent…",
                             "aria-label": "search"}),
                el("button", {"type": "submit"}, "Search")))
    head = el("head", None,
              el("meta", {"charset": "utf-8"}),
              el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
              el("title", None, f"{page.title} · {project}"),
              el("link", {"rel": "stylesheet", "href": to(paths.STYLESHEET)}))
    scripts = [el("script", {"src": to(script)}) for script in page.scripts]
    body = el("body", None, nav, el("main", {"data-subject": page.subject}, el("h1", None, page.title), page.body),
              el("footer", None, footer), scripts)
    return "<!doctype html>\n" + render(el("html", {"lang": "en"}, head, body)) + "\n"
