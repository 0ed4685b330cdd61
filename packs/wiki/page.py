"""Markdown pages with YAML frontmatter: parse, validate, render, and where they live."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from pydantic import ValidationError
from ruamel.yaml.error import YAMLError

from khive.project.yamldoc import dump_frontmatter, safe_yaml
from packs.wiki.models import USER_RE, Frontmatter, check_key

GLOBAL = "global"
FENCE = "---"


@dataclass(frozen=True)
class Page:
    key: str
    scope: str  # "global" or a user name
    meta: Frontmatter
    body: str

    @property
    def path(self) -> str:
        return page_path(self.key, self.scope)

    @property
    def doc_id(self) -> str:
        return doc_id(self.key, self.scope)


def page_path(key: str, scope: str) -> str:
    check_key(key)
    if scope == GLOBAL:
        return f"wiki/global/{key}.md"
    if not USER_RE.match(scope):
        raise ValueError(f"scope {scope!r} must be 'global' or a user name")
    return f"wiki/users/{scope}/{key}.md"


def doc_id(key: str, scope: str) -> str:
    return f"wiki:{key}" if scope == GLOBAL else f"wiki:@{scope}/{key}"


def locate(path: str) -> tuple[str, str] | None:
    """(key, scope) of a project-relative page path, or None for a path that is not a page."""
    if not path.endswith(".md"):
        return None
    if path.startswith("wiki/global/"):
        return path[len("wiki/global/") : -3], GLOBAL
    if path.startswith("wiki/users/"):
        user, _, rest = path[len("wiki/users/") :].partition("/")
        if user and rest:
            return rest[:-3], user
    return None


class PageError(ValueError):
    """A page that cannot be read: names the file, the line and the field."""


def parse_page(path: str, text: str) -> Page:
    located = locate(path)
    if located is None:
        raise PageError(f"{path}: not a wiki page path (wiki/global/<key>.md or wiki/users/<user>/<key>.md)")
    key, scope = located
    try:
        check_key(key)
    except ValueError as exc:
        raise PageError(f"{path}: {exc}") from None
    raw, body, offset = split_frontmatter(text)
    data: Any = {}
    if raw is not None:
        try:
            data = safe_yaml().load(raw) or {}
        except YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = offset + (mark.line if mark is not None else 0) + 1
            raise PageError(f"{path}:{line}: invalid frontmatter YAML: {getattr(exc, 'problem', exc)}") from None
        if not isinstance(data, dict):
            raise PageError(f"{path}:{offset + 1}: frontmatter must be a mapping of fields")
    try:
        meta = Frontmatter.model_validate(data)
    except ValidationError as exc:
        raise PageError(f"{path}: frontmatter {describe(exc)}") from None
    return Page(key, scope, meta, body)


def describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "(page)"
        parts.append(f"{field}: {error['msg']}")
    return "; ".join(parts)


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """(frontmatter text or None, body, line number where the frontmatter starts)."""
    if not text.startswith(FENCE + "\n") and text.strip() != FENCE:
        return None, text, 0
    end = text.find("\n" + FENCE, len(FENCE))
    if end < 0:
        return None, text, 0
    after = text.find("\n", end + 1 + len(FENCE))
    body = text[after + 1 :] if after >= 0 else ""
    return text[len(FENCE) + 1 : end + 1], body.lstrip("\n"), 1


def render_page(meta: Frontmatter, body: str) -> str:
    data = meta.model_dump(mode="json", exclude_defaults=True)
    relations = {k: v for k, v in data.pop("relations", {}).items() if v}
    if relations:
        data["relations"] = relations
    front = dump_frontmatter(data) if data else ""
    text = f"{FENCE}\n{front}{FENCE}\n\n{body.strip()}\n" if front else f"{FENCE}\n{FENCE}\n\n{body.strip()}\n"
    return text


def today() -> date:
    return date.today()
