"""The example pack of docs/packs.md: one plugin module with two verbs, ``notes.add`` and ``notes.read``.

Copy this file to start a pack. A real pack lives in ``packs/<name>/`` (``__init__.py`` for the hooks,
``verbs.py``, ``results.py``) and is registered in pyproject.toml under ``[project.entry-points."khive.packs"]``;
a test registers this one with ``open_runtime(..., extra_plugins=[notes_pack])``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from khive import __version__
from khive.context import Context
from khive.errors import NotFound
from khive.hookspecs import PackInfo, ProjectDirectory, hookimpl
from khive.results import Result
from khive.verbs import Params, Verb

FOLDER = "notes"
Topic = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$", description="lower-case words joined by -")]


# -- parameters: pydantic models; unknown arguments are refused (Params forbids extras) -------------------

class AddParams(Params):
    topic: Topic
    text: str = Field(min_length=1, max_length=2000, description="one note; line breaks become spaces")


class ReadParams(Params):
    topic: Topic


# -- results: field names are snake_case here and camelCase on the wire (Result's alias generator) --------

class NoteWritten(Result):
    topic: str = Field(examples=["refunds"])
    path: str = Field(examples=["notes/refunds.md"])
    note_count: int = Field(examples=[3])
    commit_error: str | None = Field(default=None, examples=[None], description="git failed; the file is written")


class NoteList(Result):
    topic: str = Field(examples=["refunds"])
    notes: list[str] = Field(examples=[["Refunds are booked in the month they are paid."]])


# -- handlers: plain functions (they run in a worker thread and may block); they return plain data -------

def _path(topic: str) -> str:
    return f"{FOLDER}/{topic}.md"


def add(params: AddParams, ctx: Context) -> dict[str, Any]:
    """Append a note to notes/<topic>.md (atomic, locked, committed when the project is a git repository)."""
    line = "- " + re.sub(r"\s+", " ", params.text).strip() + "\n"
    written = ctx.runtime.files.update(_path(params.topic), lambda old: (old or "") + line, author=ctx.principal)
    text = ctx.runtime.files.read_text(_path(params.topic)) or ""
    return {"topic": params.topic, "path": written.path, "noteCount": text.count("\n- ") + text.startswith("- "),
            "commitError": written.commit_error}


def read(params: ReadParams, ctx: Context) -> dict[str, Any]:
    """The notes of one topic, oldest first."""
    text = ctx.runtime.files.read_text(_path(params.topic))
    if text is None:
        topics = [path.removeprefix(f"{FOLDER}/").removesuffix(".md") for path in ctx.runtime.files.list(FOLDER)]
        raise NotFound(f"no notes on {params.topic!r}; topics: {', '.join(topics) or 'none yet'}",
                       code="note_not_found", details={"topic": params.topic, "topics": topics})
    return {"topic": params.topic, "notes": [line[2:] for line in text.splitlines() if line.startswith("- ")]}


VERBS = (
    Verb("notes.add", AddParams, add, add.__doc__ or "", write_keys=lambda p: [f"notes:{p.topic}"],
         write_key_rule="notes:<topic>", read_only=False, result=NoteWritten),
    Verb("notes.read", ReadParams, read, read.__doc__ or "", result=NoteList),
)


# -- hooks: declarations only; the core acts on them -----------------------------------------------------

@hookimpl
def khive_pack_info() -> PackInfo:
    return PackInfo(name="notes", version=__version__, description="free-text notes per topic")


@hookimpl
def khive_register_verbs() -> Sequence[Verb]:
    return VERBS


@hookimpl
def khive_project_directories() -> Sequence[ProjectDirectory]:
    return (ProjectDirectory("notes", purpose="one markdown file per topic"),)
