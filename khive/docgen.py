"""``python -m khive.docgen [--check]``: the generated docs, docs/verbs.md, docs/errors.md, docs/adr/README.md.

The verb reference comes only from the verb declarations (name, doc, visibility, write-key rule, the
pydantic parameter schema, the result model and its field examples), so it cannot drift from the code;
every installed pack is loaded, as ``khive mcp`` would. The error catalogue comes from khive/error_codes.py.
The ADR index lists every ``docs/adr/NNNN-*.md`` with its title and status line.
``--check`` exits 1 when either file is stale (tests/demo/test_docs.py does the same).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from khive import error_codes
from khive.plugins import build_plugin_manager, collect_verbs
from khive.results import example, members
from khive.verbs import Verb, Visibility

DOCS = Path(__file__).resolve().parents[1] / "docs"
ADR_RE = re.compile(r"(\d{4})-[a-z0-9-]+\.md\Z")
HEADER = """\
# Verb reference

Generated from the verb registry by `python -m khive.docgen` (do not edit by hand; a test fails
when this file is stale). Every verb is called through the one MCP tool, `request`, or
`khive request '...'`; see [the DSL reference](dsl.md). Operator verbs are refused over MCP and
run from the khive CLI. `any.verb(help=true)` returns the same schemas at run time. Each verb's result
is shown as the `verbose` presentation returns it; every key khive names is camelCase, keys that are data
(a table, a file, a relation) keep their spelling (ADR 0039). Errors: [the catalogue](errors.md).
"""


def type_of(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short type name for one JSON-schema property."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        kinds = [type_of(option, defs) for option in schema["anyOf"]]
        return " or ".join(dict.fromkeys(kind for kind in kinds if kind != "null")) + \
            (" (optional)" if "null" in kinds else "")
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {type_of(schema.get('items', {}), defs)}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_of(schema['additionalProperties'], defs)}"
    return str(kind)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def parameters(verb: Verb) -> list[str]:
    schema = verb.params.model_json_schema(by_alias=True)
    properties: dict[str, Any] = schema.get("properties", {})
    if not properties:
        return ["No parameters."]
    required = set(schema.get("required", []))
    defs = schema.get("$defs", {})
    rows = ["| parameter | type | default | description |", "| --- | --- | --- | --- |"]
    for name, prop in properties.items():
        default = "required" if name in required else (f"`{_json(prop['default'])}`" if "default" in prop else "")
        limits = ", ".join(f"{key} {prop[key]}" for key in ("minimum", "maximum", "minLength") if key in prop)
        description = " ".join(part for part in (prop.get("description", ""), f"({limits})" if limits else "") if part)
        rows.append(f"| `{name}` | {_cell(type_of(prop, defs))} | {_cell(default)} | {_cell(description)} |")
    return rows


def result_section(verb: Verb) -> list[str]:
    """The verb's result: its model(s) and an example built from the models' field examples (khive.results)."""
    if verb.result is None:
        return ["Result: not declared."]
    names = " or ".join(f"`{model.__name__}`" for model in members(verb.result))
    return [f"Result ({names}), for example:", "", "```json", *_one_key_a_line(example(verb.result)), "```"]


def _one_key_a_line(value: Any) -> list[str]:
    """An object with each top-level key on its own line (values compact): readable, and a short diff."""
    if not isinstance(value, dict) or not value:
        return [_json(value)]
    items = [f" {_json(key)}: {_json(item)}" for key, item in value.items()]
    return ["{", *(f"{item}," for item in items[:-1]), items[-1], "}"]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def render(verbs: dict[str, Verb]) -> str:
    by_pack: dict[str, list[Verb]] = defaultdict(list)
    for verb in verbs.values():
        by_pack[verb.pack].append(verb)
    lines = [HEADER, "| pack | verbs |", "| --- | --- |"]
    for pack in sorted(by_pack):
        names = ", ".join(f"[`{v.name}`](#{_anchor(v.name)})" for v in sorted(by_pack[pack], key=lambda v: v.name))
        lines.append(f"| {pack} | {names} |")
    for pack in sorted(by_pack):
        lines += ["", f"## {pack}"]
        for verb in sorted(by_pack[pack], key=lambda v: v.name):
            facts = ["operator (CLI only)" if verb.visibility is Visibility.OPERATOR else "public",
                     "read-only" if verb.read_only else "writes"]
            if verb.write_key_rule:
                facts.append(f"write keys `{verb.write_key_rule}`")
            lines += ["", f"### {verb.name}", "", verb.doc.strip(), "", f"*{'; '.join(facts)}*", "",
                      *parameters(verb), "", *result_section(verb)]
    return "\n".join(lines) + "\n"


def _anchor(name: str) -> str:
    return name.replace(".", "").lower()  # GitHub drops the dots of a heading in its anchor


def generate() -> str:
    pm, _ = build_plugin_manager()
    return render(collect_verbs(pm).verbs)


def adr_files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.iterdir() if ADR_RE.match(path.name))


def adr_index(folder: Path) -> str:
    """The index: number, title (the first heading) and status line of every ADR file present."""
    lines = ["# Architecture decision records", "",
             "One file per decision, MADR minimal (status, date, context, options considered, decision,",
             "consequences); numbers are unique and never reused. Generated by `python -m khive.docgen` from the",
             "files present (a test fails when one is missing here).", "",
             "| ADR | decision | status |", "| --- | --- | --- |"]
    for path in adr_files(folder):
        text = path.read_text(encoding="utf-8")
        heading = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.stem)
        title = re.sub(r"^\d+\.\s*", "", heading)
        status = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                       if line.lower().startswith("- status:")), "")
        lines.append(f"| {path.name[:4]} | [{_cell(title)}]({path.name}) | {_cell(status)} |")
    return "\n".join(lines) + "\n"


def outputs(docs: Path) -> dict[Path, str]:
    return {docs / "verbs.md": generate(), docs / "adr" / "README.md": adr_index(docs / "adr"),
            docs / "errors.md": error_codes.render()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m khive.docgen", description=__doc__)
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs directory (default: the repository's)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated file is stale")
    args = parser.parse_args(argv)
    stale = 0
    for path, text in outputs(args.docs).items():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current == text:
            continue
        if args.check:
            print(f"{path} is stale: run python -m khive.docgen", file=sys.stderr)
            stale += 1
            continue
        temp = path.with_name(f".{path.name}.tmp")
        temp.write_text(text, encoding="utf-8")
        temp.replace(path)
        print(f"wrote {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
