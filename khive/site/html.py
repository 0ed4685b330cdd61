"""A small HTML builder: text is escaped unless it is already :class:`Markup`.

Pages are built from ``el("tag", {attrs}, children...)`` calls rather than string templates, so a
value from the project (a comment, a sample, a page body) can only ever land in the page as text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Union

Child = Union["Markup", str, int, float, None, Iterable["Child"]]


class Markup(str):
    """HTML that is already safe: built here, or rendered by markdown-it / pygments / the SVG writer."""

    __slots__ = ()


VOID = frozenset({"meta", "link", "br", "hr", "img", "input"})


def text(value: object) -> str:
    return escape(str(value), quote=True)


def render(child: Child) -> str:
    if child is None:
        return ""
    if isinstance(child, Markup):
        return str(child)
    if isinstance(child, str | int | float):
        return text(child)
    return "".join(render(item) for item in child)


def el(tag: str, attrs: Mapping[str, object] | None = None, *children: Child) -> Markup:
    """``<tag attrs>children</tag>``; an attribute whose value is None or False is left out, True is bare."""
    parts = [tag]
    for name, value in (attrs or {}).items():
        if value is None or value is False:
            continue
        parts.append(text(name) if value is True else f'{text(name)}="{text(value)}"')
    opening = f"<{' '.join(parts)}>"
    if tag in VOID:
        return Markup(opening)
    return Markup(f"{opening}{render(children)}</{tag}>")


def join(children: Iterable[Child], separator: str = ", ") -> Markup:
    rendered = [render(child) for child in children]
    return Markup(text(separator).join(rendered))


def link(url: str, *children: Child, **attrs: object) -> Markup:
    return el("a", {"href": url, **_attrs(attrs)}, *children)


def _attrs(attrs: Mapping[str, object]) -> dict[str, object]:
    """Python keyword names as attribute names: ``class_`` is class, ``aria_current`` is aria-current."""
    return {key.rstrip("_").replace("_", "-"): value for key, value in attrs.items()}


def table(headers: Iterable[str], rows: Iterable[Iterable[Child]], **attrs: object) -> Markup:
    head = el("thead", None, el("tr", None, [el("th", {"scope": "col"}, header) for header in headers]))
    body = el("tbody", None, [el("tr", None, [el("td", None, cell) for cell in row]) for row in rows])
    return el("div", {"class": "scroll"}, el("table", _attrs(attrs), head, body))


def section(title: str, *children: Child, id_: str | None = None) -> Markup:
    return el("section", {"id": id_}, el("h2", None, title), *children)


def empty(message: str) -> Markup:
    return el("p", {"class": "empty"}, message)
