"""Markdown and code on the site: markdown-it-py for page bodies, pygments for SQL and YAML, sqlglot to lay
SQL out.

Page bodies are rendered with raw HTML off (a page an agent wrote can hold no script), HTML comments
(khive's own metadata lines) dropped, and every link checked: a web link stays and opens nothing by
itself, a link naming a wiki page or a table of the project goes to its page, anything else is shown as
text. Images are never fetched (pages work offline): they become a link to where the image lives.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

import sqlglot
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound
from sqlglot.errors import SqlglotError

from khive.site.html import Markup

# Given a link target (a URL or a project name), the site-relative href to use, or None to show text only.
Resolve = Callable[[str], str | None]

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_WEB = re.compile(r"^(https?:|mailto:)", re.IGNORECASE)
_PLACEHOLDER = "'__khive_placeholder__'"
CSS_CLASS = "hl"
SQL_DIALECTS = frozenset({"duckdb", "postgres", "sqlite", "mysql", "bigquery", "snowflake"})


@lru_cache(maxsize=1)
def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(cssclass=CSS_CLASS, nowrap=True)


def highlight_css() -> str:
    return str(_formatter().get_style_defs(f".{CSS_CLASS}"))


def highlight(code: str, language: str) -> Markup:
    """``code`` as highlighted HTML; an unknown language is shown as plain, escaped text."""
    try:
        lexer = get_lexer_by_name(language or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    body = pygments_highlight(code, lexer, _formatter())
    return Markup(f'<pre class="{CSS_CLASS}"><code>{body}</code></pre>')  # markdown-it keeps a block that is a <pre


def format_sql(sql: str, dialect: str | None = None) -> str:
    """One statement laid out on lines by sqlglot; the text as written when it does not parse.

    Query-history templates hold ``?`` for their literals, which does not parse in every position
    (``TIMESTAMP ?``): each is read as a string literal and written back as ``?``."""
    read = dialect if dialect in SQL_DIALECTS else None
    try:
        statements = sqlglot.transpile(sql.replace("?", _PLACEHOLDER), read=read, write=read, pretty=True)
    except (SqlglotError, ValueError, RecursionError):
        return sql
    if len(statements) != 1:
        return sql
    return statements[0].replace(_PLACEHOLDER, "?")


def sql_block(sql: str, dialect: str | None = None) -> Markup:
    return highlight(format_sql(sql, dialect), "sql")


@lru_cache(maxsize=8)
def _engine(layout_sql: bool, dialect: str | None) -> MarkdownIt:
    """An engine whose fenced SQL is laid out by sqlglot (pattern pages) or shown as written (everything else)."""
    engine = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    engine.enable(["table", "strikethrough"])

    def fenced(code: str, language: str, attrs: object) -> str:
        if layout_sql and language.lower() == "sql":
            return str(sql_block(code.strip(), dialect))
        return str(highlight(code, language))

    engine.options["highlight"] = fenced
    return engine


def render_markdown(body: str, resolve: Resolve, resolve_code: Resolve | None = None, layout_sql: bool = False,
                    dialect: str | None = None) -> Markup:
    """A page body as HTML, its links resolved by ``resolve`` and code spans that name a table by ``resolve_code``."""
    engine = _engine(layout_sql, dialect)
    tokens = engine.parse(_COMMENT.sub("", body))
    _rewrite(tokens, resolve, resolve_code)
    return Markup(engine.renderer.render(tokens, engine.options, {}))


def _rewrite(tokens: Sequence[Token], resolve: Resolve, resolve_code: Resolve | None) -> None:
    for token in tokens:
        if token.children:
            token.children = _rewrite_inline(token.children, resolve, resolve_code)


def _rewrite_inline(children: list[Token], resolve: Resolve, resolve_code: Resolve | None) -> list[Token]:
    out: list[Token] = []
    dropped = 0  # link_open tokens turned into text: their link_close goes too
    for token in children:
        if token.type == "link_open":
            target = str(token.attrGet("href") or "")
            url = target if _WEB.match(target) else resolve(target)
            if url is None:
                dropped += 1
                continue
            token.attrSet("href", url)
            if _WEB.match(url):
                token.attrSet("rel", "noopener noreferrer")
        elif token.type == "link_close" and dropped:
            dropped -= 1
            continue
        elif token.type == "image":
            out.extend(_image_as_link(token))
            continue
        elif token.type == "code_inline" and resolve_code is not None:
            url = resolve_code(token.content)
            if url is not None:
                out.extend(_wrapped(token, url))
                continue
        out.append(token)
    return out


def _image_as_link(token: Token) -> list[Token]:
    source = str(token.attrGet("src") or "")
    label = Token("text", "", 0, content=f"[image: {token.content or source}]")
    if not _WEB.match(source):
        return [label]
    opening = Token("link_open", "a", 1, attrs={"href": source, "rel": "noopener noreferrer"})
    return [opening, label, Token("link_close", "a", -1)]


def _wrapped(token: Token, url: str) -> list[Token]:
    return [Token("link_open", "a", 1, attrs={"href": url}), token, Token("link_close", "a", -1)]

