"""Read a dbt project, a folder of MetricFlow YAML, or a ``semantic_manifest.json`` into frozen
dataclasses: semantic models, metrics, and the ``schema.yml`` docs of dbt models.

Both spellings MetricFlow accepts are read: dbt's (``semantic_models:`` and ``metrics:`` lists,
``model: ref('x')``) and MetricFlow's own (one ``semantic_model:`` or ``metric:`` per YAML
document, ``node_relation:``). The parser is strict about shape (a missing name, a list where a
mapping belongs) and raises ``OpError(code="invalid_dbt_project")`` with file, line and fix; it
is lenient about values (an unknown ``agg``), which ``dbt_map`` reports as warnings.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError

from khive.errors import NotFound, OpError
from khive.project.yamldoc import round_trip_yaml

SKIP_DIRS = frozenset({"target", "dbt_packages", "dbt_modules", "logs", "node_modules", "venv", "__pycache__"})
YAML_SUFFIXES = (".yml", ".yaml")
_REF_RE = re.compile(r"""ref\(\s*(?:['"][^'"]+['"]\s*,\s*)?['"]([^'"]+)['"]""")
_DOCS_BLOCK_RE = re.compile(r"\{%-?\s*docs\s+([A-Za-z_][A-Za-z0-9_]*)\s*-?%\}(.*?)\{%-?\s*enddocs\s*-?%\}", re.S)
_DOC_REF_RE = re.compile(r"""\{\{\s*doc\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\)\s*\}\}""")


@dataclass(frozen=True, slots=True)
class Location:
    file: str  # relative to the import root (POSIX)
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True, slots=True)
class Entity:
    name: str
    type: str  # primary | unique | foreign | natural (lower-cased; others are reported by dbt_map)
    expr: str | None
    description: str | None
    where: Location


@dataclass(frozen=True, slots=True)
class Dimension:
    name: str
    type: str  # categorical | time
    expr: str | None
    description: str | None
    granularity: str | None
    validity: bool  # SCD validity window bound (is_start / is_end)
    where: Location


@dataclass(frozen=True, slots=True)
class MeasureDef:
    name: str
    agg: str  # lower-cased
    expr: str | None
    description: str | None
    agg_time_dimension: str | None
    percentile: float | None
    discrete_percentile: bool
    non_additive: str | None  # "ds (window_choice min)" when declared
    where: Location


@dataclass(frozen=True, slots=True)
class SemanticModel:
    name: str
    description: str | None
    table: str | None  # schema.alias from node_relation, or the ref() target (schema applied by dbt_map)
    has_schema: bool  # table already carries a schema (node_relation with a literal schema_name)
    dbt_model: str | None  # the ref() target, to find its schema.yml docs
    default_time: str | None
    primary_entity: str | None
    entities: tuple[Entity, ...]
    dimensions: tuple[Dimension, ...]
    measures: tuple[MeasureDef, ...]
    where: Location


@dataclass(frozen=True, slots=True)
class MetricInput:
    name: str
    filters: tuple[str, ...] = ()
    alias: str | None = None
    offset: str | None = None  # offset_window / offset_to_grain, shown in warnings


@dataclass(frozen=True, slots=True)
class MetricDef:
    name: str
    type: str  # simple | ratio | derived | cumulative | conversion | legacy | ... (lower-cased)
    description: str | None
    filters: tuple[str, ...]
    measure: MetricInput | None
    numerator: MetricInput | None
    denominator: MetricInput | None
    expr: str | None
    inputs: tuple[MetricInput, ...]
    ignored: tuple[str, ...]  # options that change nothing in khive (time spine joins), for a warning
    where: Location


@dataclass(frozen=True, slots=True)
class ColumnDoc:
    description: str | None
    data_type: str | None


@dataclass(frozen=True, slots=True)
class ModelDoc:
    name: str
    description: str | None
    columns: Mapping[str, ColumnDoc]


@dataclass(frozen=True, slots=True)
class Note:
    """Something the parser read but will not import (dbt_map adds its own)."""

    where: Location
    element: str
    message: str
    skipped: bool = True


@dataclass(slots=True)
class DbtProject:
    root: Path
    semantic_models: list[SemanticModel] = field(default_factory=list)
    metrics: list[MetricDef] = field(default_factory=list)
    docs: dict[str, ModelDoc] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    files: int = 0


def load_project(path: Path) -> DbtProject:
    """Parse every YAML/JSON file under ``path`` (or the one file ``path`` names)."""
    try:
        path.stat()
    except FileNotFoundError:
        pass  # reported below, with what to pass instead
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL, no permission
        shown = str(path) if len(str(path)) <= 200 else f"{str(path)[:160]}...({len(str(path))} characters)"
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OpError(f"cannot read {shown}: {reason}; pass a readable dbt project directory",
                      code="invalid_path", details={"path": shown}) from None
    if not path.exists():
        raise NotFound(f"{path} does not exist; pass a dbt project directory, a folder of MetricFlow YAML or a "
                       "semantic_manifest.json", code="path_not_found", details={"path": str(path)})
    base = path if path.is_dir() else path.parent
    if path.is_file() and path.suffix not in (*YAML_SUFFIXES, ".json"):
        raise OpError(f"{path} is not a .yml, .yaml or .json file", code="invalid_dbt_project",
                      details={"path": str(path), "fix": "pass the project directory or target/semantic_manifest.json"})
    reader = _Reader(DbtProject(root=base), base)
    texts: dict[str, str] = {}
    for file in ([path] if path.is_file() else _walk(path)):
        relative = file.relative_to(base).as_posix()
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reader.fail(Location(relative), f"cannot read the file: {exc}", "make it a readable UTF-8 text file")
        if file.suffix == ".md":
            reader.docs_blocks.update((m[1], m[2].strip()) for m in _DOCS_BLOCK_RE.finditer(text))
        else:
            texts[relative] = text
    for relative, text in texts.items():
        reader.project.files += 1
        if relative.endswith(".json"):
            reader.read_json(relative, text)
        else:
            reader.read_yaml(relative, text)
    return reader.finish()


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith((*YAML_SUFFIXES, ".md")):
                yield Path(dirpath) / name


def _line(node: Any, key: Any = None) -> int | None:
    lc = getattr(node, "lc", None)
    if lc is None:
        return None
    try:
        if key is not None:
            return int(lc.key(key)[0]) + 1
        return int(lc.line) + 1
    except (KeyError, TypeError, AttributeError):
        return None


class _Reader:
    def __init__(self, project: DbtProject, base: Path) -> None:
        self.project = project
        self.base = base
        self.docs_blocks: dict[str, str] = {}
        self.file = ""

    # -- errors --

    def fail(self, where: Location, problem: str, fix: str, column: int | None = None) -> NoReturn:
        shown = self.base / where.file
        place = f"{shown}:{where.line}" if where.line else str(shown)
        raise OpError(f"{place}: {problem}; fix: {fix}", code="invalid_dbt_project",
                      details={"file": str(shown), "line": where.line, "column": column, "problem": problem,
                               "fix": fix})

    def at(self, node: Any, key: Any = None) -> Location:
        return Location(self.file, _line(node, key))

    # -- files --

    def read_yaml(self, relative: str, text: str) -> None:
        self.file = relative
        yaml = round_trip_yaml()
        try:
            documents = list(yaml.load_all(text))
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            column = mark.column + 1 if mark is not None else None
            problem = str(exc.problem)
            if isinstance(exc, DuplicateKeyError):
                problem = problem.split(" with value", 1)[0]  # the value can be a whole semantic model
                fix = ("write each key once per mapping; MetricFlow files hold one semantic_model: or metric: per "
                       "YAML document, separated by ---")
            else:
                fix = "correct the YAML syntax at that line (indentation, quotes, a missing ':')"
            self.fail(Location(relative, line), f"invalid YAML: {problem}", fix, column)
        for document in documents:
            if isinstance(document, Mapping):
                self.read_document(document)

    def read_json(self, relative: str, text: str) -> None:
        self.file = relative
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            self.fail(Location(relative, exc.lineno), f"invalid JSON: {exc.msg} (column {exc.colno})",
                      "regenerate it with `dbt parse`", exc.colno)
        if not isinstance(document, Mapping) or not isinstance(document.get("semantic_models"), list):
            self.fail(Location(relative, 1), "not a semantic manifest (no semantic_models list)",
                      "pass dbt's target/semantic_manifest.json, written by `dbt parse`")
        self.read_document(document)

    def read_document(self, document: Mapping[str, Any]) -> None:
        for key, value in document.items():
            if key == "semantic_model":
                self.semantic_model(self.mapping(value, document, key, "semantic_model:"))
            elif key == "semantic_models":
                for item in self.sequence(value, document, key, "semantic_models:"):
                    self.semantic_model(self.mapping(item, value, None, "a semantic_models: entry"))
            elif key == "metric":
                self.metric(self.mapping(value, document, key, "metric:"))
            elif key == "metrics" and isinstance(value, list):  # a mapping here is dbt_project.yml config
                for item in value:
                    self.metric(self.mapping(item, value, None, "a metrics: entry"))
            elif key == "models" and isinstance(value, list):
                for item in value:
                    if isinstance(item, Mapping):
                        self.model_doc(item)

    # -- shapes --

    def mapping(self, value: Any, parent: Any, key: Any, what: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            where = self.at(value) if _line(value) else self.at(parent, key)
            self.fail(where, f"{what} must be a mapping (name: ..., ...), got {_kind(value)}",
                      "indent its fields under it as key: value lines")
        return value

    def sequence(self, value: Any, parent: Any, key: Any, what: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(self.at(parent, key), f"{what} must be a list, got {_kind(value)}",
                      "write one '- name: ...' item per element")
        return value

    def name(self, node: Mapping[str, Any], what: str) -> str:
        value = node.get("name")
        if not isinstance(value, str) or not value.strip():
            self.fail(self.at(node), f"{what} has no name", f"add name: to the {what}")
        return value.strip()

    def text(self, node: Mapping[str, Any], key: str) -> str | None:
        value = node.get(key)
        if value is None or isinstance(value, Mapping | list):
            return None
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        shown = str(value).strip()
        return _DOC_REF_RE.sub(lambda m: self.docs_blocks.get(m[1], m[0]), shown) or None

    def description(self, node: Mapping[str, Any]) -> str | None:
        return self.text(node, "description") or self.text(node, "label")

    def items(self, node: Mapping[str, Any], key: str, owner: str) -> Iterator[Mapping[str, Any]]:
        for item in self.sequence(node.get(key), node, key, f"{key}: of {owner}"):
            yield self.mapping(item, node, key, f"an entry of {key}: in {owner}")

    # -- elements --

    def semantic_model(self, node: Mapping[str, Any]) -> None:
        name = self.name(node, "semantic model")
        owner = f"semantic model {name}"
        table, has_schema, dbt_model = self.relation(node, owner)
        defaults = node.get("defaults")
        default_time = self.text(defaults, "agg_time_dimension") if isinstance(defaults, Mapping) else None
        entities = tuple(Entity(self.name(e, f"entity of {owner}"), (self.text(e, "type") or "").lower(),
                                self.text(e, "expr"), self.description(e), self.at(e))
                         for e in self.items(node, "entities", owner))
        dimensions = tuple(self.dimension(d, owner) for d in self.items(node, "dimensions", owner))
        measures = tuple(self.measure(m, owner) for m in self.items(node, "measures", owner))
        self.project.semantic_models.append(SemanticModel(
            name=name, description=self.description(node), table=table, has_schema=has_schema, dbt_model=dbt_model,
            default_time=default_time, primary_entity=self.text(node, "primary_entity"), entities=entities,
            dimensions=dimensions, measures=measures, where=self.at(node)))

    def relation(self, node: Mapping[str, Any], owner: str) -> tuple[str | None, bool, str | None]:
        model = node.get("model")
        if isinstance(model, str):
            match = _REF_RE.search(model)
            if match is None:
                self.fail(self.at(node, "model"), f"{owner}: model: {model!r} is not a ref()",
                          "write model: ref('the_dbt_model')")
            return match[1], False, match[1]
        relation = node.get("node_relation")
        if isinstance(relation, Mapping):
            alias = self.text(relation, "alias")
            if alias is None:
                self.fail(self.at(node, "node_relation"), f"{owner}: node_relation has no alias",
                          "add alias: the_table_name")
            schema = self.text(relation, "schema_name")
            if schema and not schema.startswith("$"):  # $source_schema is MetricFlow's test placeholder
                return f"{schema}.{alias}", True, alias
            return alias, False, alias
        self.fail(self.at(node), f"{owner} has neither model: nor node_relation:",
                  "add model: ref('the_dbt_model') naming the table it reads")

    def dimension(self, node: Mapping[str, Any], owner: str) -> Dimension:
        params = node.get("type_params")
        params = params if isinstance(params, Mapping) else {}
        validity = params.get("validity_params")
        granularity = self.text(params, "time_granularity")
        return Dimension(self.name(node, f"dimension of {owner}"), (self.text(node, "type") or "").lower(),
                         self.text(node, "expr"), self.description(node),
                         granularity.lower() if granularity else None,
                         isinstance(validity, Mapping) and bool(validity), self.at(node))

    def measure(self, node: Mapping[str, Any], owner: str) -> MeasureDef:
        name = self.name(node, f"measure of {owner}")
        agg = self.text(node, "agg")
        if agg is None:
            self.fail(self.at(node), f"measure {name} of {owner} has no agg", "add agg: sum (or count, average, ...)")
        params = node.get("agg_params")
        params = params if isinstance(params, Mapping) else {}
        percentile = params.get("percentile")
        additive = node.get("non_additive_dimension")
        non_additive = None
        if isinstance(additive, Mapping):
            non_additive = f"{self.text(additive, 'name')} (window_choice {self.text(additive, 'window_choice')})"
        return MeasureDef(
            name=name, agg=agg.lower(), expr=self.text(node, "expr"), description=self.description(node),
            agg_time_dimension=self.text(node, "agg_time_dimension"),
            percentile=float(percentile) if isinstance(percentile, int | float) else None,
            discrete_percentile=bool(params.get("use_discrete_percentile")), non_additive=non_additive,
            where=self.at(node))

    def metric(self, node: Mapping[str, Any]) -> None:
        name = self.name(node, "metric")
        kind = self.text(node, "type")
        if kind is None:
            if "calculation_method" not in node:
                self.fail(self.at(node), f"metric {name} has no type", "add type: simple (or ratio, derived, ...)")
            kind = "legacy"  # the dbt_metrics package spec (dbt < 1.6)
        params = node.get("type_params")
        params = params if isinstance(params, Mapping) else {}
        ignored = [key for key in ("fill_nulls_with", "join_to_timespine") if params.get(key) not in (None, False)]
        measure = self.metric_input(params, "measure", name)
        if isinstance(params.get("measure"), Mapping):
            ignored += [k for k in ("fill_nulls_with", "join_to_timespine") if params["measure"].get(k) not in
                        (None, False)]
        listed = self.sequence(params.get("metrics"), params, "metrics", f"metrics: of metric {name}")
        inputs = tuple(self.metric_input({"input": item}, "input", name) for item in listed)
        self.project.metrics.append(MetricDef(
            name=name, type=kind.lower(), description=self.description(node),
            filters=self.filters(node.get("filter"), node, name), measure=measure,
            numerator=self.metric_input(params, "numerator", name),
            denominator=self.metric_input(params, "denominator", name), expr=self.text(params, "expr"),
            inputs=tuple(i for i in inputs if i is not None), ignored=tuple(dict.fromkeys(ignored)),
            where=self.at(node)))

    def metric_input(self, params: Mapping[str, Any], key: str, metric: str) -> MetricInput | None:
        value = params.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            return MetricInput(value.strip())
        node = self.mapping(value, params, key, f"{key} of metric {metric}")
        offset = node.get("offset_window") or node.get("offset_to_grain")
        if isinstance(offset, Mapping):
            offset = f"{offset.get('count', '')} {offset.get('granularity', '')}".strip()
        return MetricInput(self.name(node, f"{key} of metric {metric}"), self.filters(node.get("filter"), node, metric),
                           self.text(node, "alias"), None if offset is None else str(offset))

    def filters(self, value: Any, node: Any, metric: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            return (value.strip(),) if value.strip() else ()
        if isinstance(value, Mapping) and isinstance(value.get("where_filters"), list):  # semantic_manifest.json
            return tuple(str(f.get("where_sql_template", "")).strip() for f in value["where_filters"]
                         if isinstance(f, Mapping))
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(item.strip() for item in value if item.strip())
        self.fail(self.at(node, "filter"), f"filter of metric {metric} must be a string or a list of strings",
                  "write filter: \"{{ Dimension('entity__dimension') }} = 'value'\"")

    def model_doc(self, node: Mapping[str, Any]) -> None:
        name = node.get("name")
        if not isinstance(name, str):
            return
        if "semantic_model" in node or "agg_time_dimension" in node:
            self.project.notes.append(Note(self.at(node), f"model:{name}", "semantic models declared inside models: "
                                           "(the newer dbt semantic YAML spec) are not supported yet; use "
                                           "semantic_models:"))
        columns: dict[str, ColumnDoc] = {}
        for column in node.get("columns") or []:
            if isinstance(column, Mapping) and isinstance(column.get("name"), str):
                columns[column["name"].lower()] = ColumnDoc(self.text(column, "description"),
                                                            self.text(column, "data_type"))
        self.project.docs[name] = ModelDoc(name, self.text(node, "description"), columns)

    def finish(self) -> DbtProject:
        return self.project


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"a {type(value).__name__.removeprefix('Commented').lower()}"
