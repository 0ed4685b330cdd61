"""Wiki page frontmatter and the shapes of wiki results."""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

PageKind = Literal["note", "warning", "rule", "pattern", "recap"]
# a segment may start with "_": machine-kept folders such as historic-sql/_archived/
KEY_RE = re.compile(r"_?[a-z0-9][a-z0-9_\-]*(/_?[a-z0-9][a-z0-9_\-]*)*\Z")
USER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")
RELATIONS = ("supersedes", "contradicts", "supports", "related_to")


MAX_KEY = 180  # keeps wiki/users/<user>/<key>.md within the file store's name and path limits


def check_key(key: str) -> str:
    if len(key) > MAX_KEY:
        raise ValueError(f"page key of {len(key)} characters is too long; keys are at most {MAX_KEY} characters")
    if not KEY_RE.match(key):
        raise ValueError(f"page key {key!r} must be path-like lowercase words, e.g. historic-sql/orders-by-region")
    return key


PageKey = Annotated[str, AfterValidator(check_key)]


class Relations(BaseModel):
    model_config = ConfigDict(extra="forbid")

    supersedes: list[str] = Field(default_factory=list)
    contradicts: list[str] = Field(default_factory=list)
    supports: list[str] = Field(default_factory=list)
    related_to: list[str] = Field(default_factory=list)

    @field_validator("supersedes", "contradicts", "supports", "related_to")
    @classmethod
    def _keys(cls, value: list[str]) -> list[str]:
        return [check_key(key) for key in value]

    def pairs(self) -> list[tuple[str, str]]:
        return [(relation, key) for relation in RELATIONS for key in getattr(self, relation)]


class Frontmatter(BaseModel):
    """What a page declares about itself; unknown keys are errors so typos do not vanish."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = None
    summary: str = ""
    tags: list[str] = Field(default_factory=list)
    refs: list[str] = Field(default_factory=list)
    sl_refs: list[str] = Field(default_factory=list)
    relations: Relations = Field(default_factory=Relations)
    kind: PageKind = "note"
    relevance: list[str] = Field(default_factory=list)  # ["always"] or phase names
    aliases: list[str] = Field(default_factory=list)  # other names people use for the page (discover.lookup)
    stale_since: dt.date | None = None
    archived: bool = False
    date: dt.date | None = None  # recap pages carry one

    @field_validator("refs")
    @classmethod
    def _refs(cls, value: list[str]) -> list[str]:
        return [check_key(key) for key in value]

    @field_validator("relevance", mode="before")
    @classmethod
    def _relevance(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _recap_has_date(self) -> Frontmatter:
        if self.kind == "recap" and self.date is None:
            raise ValueError("a recap page needs a date (date: YYYY-MM-DD)")
        return self
