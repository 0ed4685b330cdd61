"""Map a parsed dbt project onto semantic-layer sources: one ``Source`` per semantic model.

    entity primary            -> a column, and the source's grain
    entity foreign/unique     -> a column, and a join to the model holding that entity as primary or
                                 unique (foreign: many_to_one; primary/unique: one_to_one)
    dimension categorical     -> string column (number/boolean when schema.yml gives a data_type)
    dimension time            -> time column; its granularity is written into the description
    measure                   -> measure (average -> avg, sum_boolean -> sum of CASE, p50 -> median)
    metric simple             -> the measure itself, a derived alias, or a filtered copy
    metric ratio / derived    -> a derived measure, when every input lives on the same source
    metric cumulative/conversion, offsets, filters across joins -> a warning, not imported

Descriptions written in dbt YAML are people's documentation, so they land in ``descriptions.user``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from khive.errors import OpError
from packs.sl.dbt_filters import FilterScope, Untranslatable, combine, translate
from packs.sl.dbt_parse import DbtProject, Location, MeasureDef, MetricDef, MetricInput, ModelDoc, Note, SemanticModel
from packs.sl.models import NAME_RE, Aggregation, Column, ColumnType, Descriptions, Join, Measure, Source

ENTITY_TYPES = ("primary", "unique", "foreign", "natural")
OWN_ENTITY_TYPES = ("primary", "unique", "natural")  # entities whose dimensions live on the model itself
_SAME_AGG: dict[str, Aggregation] = {
    "sum": "sum", "count": "count", "count_distinct": "count_distinct", "min": "min", "max": "max", "median": "median",
    "average": "avg", "avg": "avg"}
_TOKEN_RE = re.compile(r"'[^']*'|\"[^\"]*\"|\b[A-Za-z_][A-Za-z0-9_]*\b")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
Target = tuple[str, str]  # (source, measure)


@dataclass(slots=True)
class Mapped:
    sources: dict[str, Source]
    origins: dict[str, Location]  # source -> where its semantic model is declared
    notes: list[Note]
    measures: int  # measures imported from semantic models
    metrics: int  # metrics imported (each is a measure, an alias or a derived measure)


@dataclass(slots=True)
class _Model:
    sm: SemanticModel
    columns: dict[str, Column] = field(default_factory=dict)
    entities: dict[str, str] = field(default_factory=dict)  # entity -> column name
    measures: dict[str, Measure] = field(default_factory=dict)
    time_of: dict[str, str | None] = field(default_factory=dict)  # measure -> its agg_time_dimension
    joins: list[Join] = field(default_factory=list)
    grain: list[str] = field(default_factory=list)

    def own_entities(self) -> frozenset[str]:
        own = {e.name for e in self.sm.entities if e.type in OWN_ENTITY_TYPES}
        return frozenset(own | ({self.sm.primary_entity} if self.sm.primary_entity else set()))


def map_project(project: DbtProject, *, schema: str | None = None) -> Mapped:
    return _Mapper(project, schema).run()


def column_type(data_type: str | None) -> ColumnType | None:
    """khive's column type for a warehouse data type from schema.yml (None when unknown)."""
    text = (data_type or "").lower()
    if not text:
        return None
    if "bool" in text:
        return "boolean"
    if any(word in text for word in ("date", "time")):
        return "time"
    if "interval" not in text and any(word in text for word in ("int", "num", "dec", "float", "double", "real",
                                                                   "money")):
        return "number"
    return "string"


class _Mapper:
    def __init__(self, project: DbtProject, schema: str | None) -> None:
        self.project = project
        self.schema = schema
        self.notes: list[Note] = list(project.notes)
        self.models: dict[str, _Model] = {}
        self.measure_home: dict[str, str] = {}  # measure -> model
        self.metric_defs: dict[str, MetricDef] = {}
        self.resolved: dict[str, Target | None] = {}
        self.resolving: set[str] = set()
        self.imported_measures = 0

    def note(self, where: Location, element: str, message: str, *, skipped: bool = True) -> None:
        note = Note(where, element, message, skipped)
        if note not in self.notes:
            self.notes.append(note)

    def run(self) -> Mapped:
        for sm in self.project.semantic_models:
            if not NAME_RE.match(sm.name):
                self.note(sm.where, f"semantic_model:{sm.name}", "not a valid source name (letters, digits, _)")
            elif sm.name in self.models:
                first = self.models[sm.name].sm.where
                self.note(sm.where, f"semantic_model:{sm.name}", f"declared twice; the one at {first} is imported")
            else:
                self.models[sm.name] = self.build_model(sm)
        if not self.models:
            self.note(Location("."), "project", "no semantic_models found: sl.import_dbt imports MetricFlow semantic "
                      "models (schema.yml docs of plain dbt models only describe them)", skipped=False)
        for model in self.models.values():
            self.add_joins(model)
        for metric in self.project.metrics:
            if metric.name in self.metric_defs:
                first = self.metric_defs[metric.name].where
                self.note(metric.where, f"metric:{metric.name}", f"declared twice; the one at {first} is imported")
            else:
                self.metric_defs[metric.name] = metric
        mapped = sum(self.resolve(name) is not None for name in self.metric_defs)
        sources = {name: self.source(model) for name, model in self.models.items()}
        return Mapped(sources, {name: m.sm.where for name, m in self.models.items()}, self.notes,
                      self.imported_measures, mapped)

    # -- semantic models --

    def doc(self, sm: SemanticModel) -> ModelDoc | None:
        return self.project.docs.get(sm.dbt_model) if sm.dbt_model else None

    def build_model(self, sm: SemanticModel) -> _Model:
        model = _Model(sm)
        doc = self.doc(sm)
        for entity in sm.entities:
            element = f"semantic_model:{sm.name}/entity:{entity.name}"
            if entity.type not in ENTITY_TYPES or not NAME_RE.match(entity.name):
                self.note(entity.where, element, f"unknown entity type {entity.type!r}; use one of "
                          f"{', '.join(ENTITY_TYPES)}" if NAME_RE.match(entity.name) else "not a valid column name")
                continue
            column = self.column(entity.name, entity.expr or entity.name, doc, entity.description, None)
            if self.add_column(model, column, entity.where, element):
                model.entities[entity.name] = entity.name
                if entity.type == "primary":
                    model.grain.append(entity.name)
        for dim in sm.dimensions:
            element = f"semantic_model:{sm.name}/dimension:{dim.name}"
            if not NAME_RE.match(dim.name):
                self.note(dim.where, element, "not a valid column name (letters, digits, _)")
                continue
            if dim.type not in ("categorical", "time"):
                self.note(dim.where, element, f"unknown dimension type {dim.type!r}; imported as a string column",
                          skipped=False)
            if dim.validity:
                self.note(dim.where, element, "an SCD validity bound: khive does not model validity windows; imported "
                          "as a plain time column", skipped=False)
            granularity = dim.granularity if dim.type == "time" else None
            column = self.column(dim.name, dim.expr or dim.name, doc, dim.description, granularity,
                                 time=dim.type == "time")
            self.add_column(model, column, dim.where, element)
        for measure_def in sm.measures:
            measure = self.measure(measure_def, sm)
            if measure is None:
                continue
            if measure.name in self.measure_home:
                other = self.measure_home[measure.name]
                self.note(measure_def.where, f"semantic_model:{sm.name}/measure:{measure.name}",
                          f"measure name also declared by {other}; metrics use the one on {other}", skipped=False)
            else:
                self.measure_home[measure.name] = sm.name
            model.measures[measure.name] = measure
            model.time_of[measure.name] = measure_def.agg_time_dimension or sm.default_time
            self.imported_measures += 1
        return model

    def column(self, name: str, sql: str, doc: ModelDoc | None, description: str | None, granularity: str | None,
               *, time: bool = False) -> Column:
        documented = doc.columns.get(sql.lower()) if doc and _IDENT_RE.match(sql) else None
        text = description or (documented.description if documented else None)
        kind: ColumnType = "time" if time else (column_type(documented.data_type if documented else None) or "string")
        if time and kind == "time" and granularity:
            text = f"{text} (granularity: {granularity})" if text else f"Time dimension at {granularity} granularity."
        return Column(name=name, type=kind, expr=None if sql == name else sql, descriptions=Descriptions(user=text))

    def add_column(self, model: _Model, column: Column, where: Location, element: str) -> bool:
        existing = model.columns.get(column.name)
        if existing is None:
            model.columns[column.name] = column
            return True
        if existing.sql == column.sql:
            user = existing.descriptions.user or column.descriptions.user
            kind = column.type if column.type == "time" else existing.type
            model.columns[column.name] = existing.model_copy(update={"type": kind,
                                                                     "descriptions": Descriptions(user=user)})
            return True
        self.note(where, element, f"column name {column.name} is already used by another entity or dimension of "
                  f"{model.sm.name} ({existing.sql}); rename one of them")
        return False

    def measure(self, md: MeasureDef, sm: SemanticModel) -> Measure | None:
        element = f"semantic_model:{sm.name}/measure:{md.name}"
        if not NAME_RE.match(md.name):
            self.note(md.where, element, "not a valid measure name (letters, digits, _)")
            return None
        expr = md.expr or md.name
        agg: Aggregation | None = _SAME_AGG.get(md.agg)
        if md.agg == "sum_boolean":
            agg, expr = "sum", f"CASE WHEN {expr} THEN 1 ELSE 0 END"
        elif md.agg == "percentile":
            if md.percentile != 0.5:
                self.note(md.where, element, f"percentile {md.percentile} has no khive aggregation (sum, count, "
                          "count_distinct, avg, min, max, median); not imported")
                return None
            agg = "median"
            if md.discrete_percentile:
                self.note(md.where, element, "discrete p50 imported as median (continuous)", skipped=False)
        if agg is None:
            self.note(md.where, element, f"aggregation {md.agg!r} is not supported; not imported")
            return None
        parts = [md.description] if md.description else []
        if md.agg_time_dimension and md.agg_time_dimension != sm.default_time:
            parts.append(f"Time dimension: {md.agg_time_dimension}.")
        if md.non_additive:
            parts.append(f"Semi-additive: do not sum across {md.non_additive.split(' ')[0]}.")
            self.note(md.where, element, f"non_additive_dimension {md.non_additive} is not modelled: khive aggregates "
                      "it like any sum; the description says so", skipped=False)
        return Measure(name=md.name, agg=agg, expr=expr, description=" ".join(parts) or None)

    def add_joins(self, model: _Model) -> None:
        for entity in model.sm.entities:
            if entity.name not in model.entities:
                continue
            targets = [other for other in self.models.values() if other is not model and any(
                e.name == entity.name and e.type in ("primary", "unique") and e.name in other.entities
                for e in other.sm.entities)]
            if not targets and entity.type == "foreign":
                natural = [o.sm.name for o in self.models.values() if any(
                    e.name == entity.name and e.type == "natural" for e in o.sm.entities)]
                why = (f"it is a natural (SCD) key of {', '.join(natural)}; joins over validity windows are not "
                       "supported" if natural else "no semantic model declares it primary or unique")
                self.note(entity.where, f"semantic_model:{model.sm.name}/entity:{entity.name}",
                          f"no join for foreign entity {entity.name}: {why}", skipped=False)
            for other in targets:
                relationship = "many_to_one" if entity.type in ("foreign", "natural") else "one_to_one"
                model.joins.append(Join.model_validate({
                    "to": other.sm.name, "relationship": relationship,
                    "on": [{"from": model.entities[entity.name], "to": other.entities[entity.name]}]}))

    def scope(self, model: _Model, time_dimension: str | None) -> FilterScope:
        sm = model.sm
        homes = {(entity, d.name): m.sm.name for m in self.models.values() for d in m.sm.dimensions
                 for entity in m.own_entities()}
        dimensions = {d.name: (model.columns[d.name].sql, d.granularity if d.type == "time" else None)
                      for d in sm.dimensions if d.name in model.columns}
        return FilterScope(model=sm.name, own_entities=model.own_entities(),
                           entity_sql={name: model.columns[col].sql for name, col in model.entities.items()},
                           dimensions=dimensions, time_dimension=time_dimension, homes=homes)

    def source(self, model: _Model) -> Source:
        sm = model.sm
        doc = self.doc(sm)
        text = sm.description or (doc.description if doc else None)
        if sm.default_time:
            text = f"{text} (default time dimension: {sm.default_time})" if text else \
                f"Default time dimension: {sm.default_time}."
        table = sm.table if sm.has_schema or not self.schema else f"{self.schema}.{sm.table}"
        data: dict[str, Any] = {
            "name": sm.name, "descriptions": {"user": text}, "table": table, "grain": model.grain,
            "columns": [c.model_dump(by_alias=True) for c in model.columns.values()],
            "measures": [m.model_dump(by_alias=True) for m in model.measures.values()],
            "joins": [j.model_dump(by_alias=True) for j in model.joins]}
        try:
            return Source.model_validate(data)
        except ValidationError as exc:
            raise OpError(f"{sm.where}: semantic model {sm.name} does not make a valid source: "
                          f"{exc.errors(include_url=False)[0]['msg']}", code="invalid_dbt_project",
                          details={"file": sm.where.file, "line": sm.where.line,
                                   "fix": "correct the semantic model so names are unique and valid"}) from None

    # -- metrics --

    def resolve(self, name: str) -> Target | None:
        """The (source, measure) a metric became, importing it on first use; None when it cannot be."""
        if name in self.resolved:
            return self.resolved[name]
        metric = self.metric_defs.get(name)
        if metric is None:  # a measure with create_metric (or, leniently, any imported measure)
            home = self.measure_home.get(name)
            return None if home is None else (home, name)
        if name in self.resolving:
            self.note(metric.where, f"metric:{name}", "refers to itself through its inputs; not imported")
            return None
        self.resolving.add(name)
        try:
            target = self.map_metric(metric)
        finally:
            self.resolving.discard(name)
        self.resolved[name] = target
        return target

    def map_metric(self, metric: MetricDef) -> Target | None:
        element = f"metric:{metric.name}"
        if metric.ignored:
            self.note(metric.where, element, f"{', '.join(metric.ignored)} ignored: khive has no time spine",
                      skipped=False)
        if not NAME_RE.match(metric.name):
            self.note(metric.where, element, "not a valid measure name (letters, digits, _); not imported")
            return None
        if metric.type == "simple":
            return self.map_simple(metric)
        if metric.type in ("ratio", "derived"):
            return self.map_combined(metric)
        if metric.type in ("cumulative", "conversion"):
            self.note(metric.where, element, f"{metric.type} metrics are not supported (khive measures aggregate "
                      "within one query's groups); not imported")
        elif metric.type == "legacy":
            self.note(metric.where, element, "a dbt_metrics (dbt < 1.6) metric: not supported; not imported")
        else:
            self.note(metric.where, element, f"unknown metric type {metric.type!r}; not imported")
        return None

    def map_simple(self, metric: MetricDef) -> Target | None:
        element = f"metric:{metric.name}"
        if metric.measure is None:
            self.note(metric.where, element, "simple metric without type_params.measure; not imported")
            return None
        home = self.measure_home.get(metric.measure.name)
        if home is None:
            self.note(metric.where, element, f"measure {metric.measure.name} is not declared or was not imported")
            return None
        model = self.models[home]
        base = model.measures[metric.measure.name]
        filters = [*metric.filters, *metric.measure.filters]
        if not filters and metric.name == base.name:
            return home, base.name
        if not filters:
            alias = Measure(name=metric.name, agg="derived", expr=base.name, description=metric.description)
            return (home, metric.name) if self.add_measure(model, alias, metric, like=base.name) else None
        predicate = self.predicate(model, base.name, filters, metric)
        if predicate is None:
            return None
        copy = base.model_copy(update={"name": metric.name, "description": metric.description or base.description,
                                       "filter": combine([base.filter or "", predicate])})
        return (home, metric.name) if self.add_measure(model, copy, metric, like=base.name) else None

    def map_combined(self, metric: MetricDef) -> Target | None:
        element = f"metric:{metric.name}"
        if metric.type == "ratio":
            if metric.numerator is None or metric.denominator is None:
                self.note(metric.where, element, "ratio metric needs numerator and denominator; not imported")
                return None
            inputs = [metric.numerator, metric.denominator]
        else:
            if not metric.expr or not metric.inputs:
                self.note(metric.where, element, "derived metric needs expr and metrics; not imported")
                return None
            inputs = list(metric.inputs)
        targets: list[Target] = []
        for item in inputs:
            target = self.resolve_input(item, metric)
            if target is None:
                return None  # resolve_input said why
            targets.append(target)
        homes = sorted({t[0] for t in targets})
        if len(homes) > 1:
            self.note(metric.where, element, f"inputs live on different sources ({', '.join(homes)}); a derived "
                      "measure combines measures of one source; not imported")
            return None
        names = [t[1] for t in targets]
        if metric.type == "ratio":
            expr = f"1.0 * {names[0]} / NULLIF({names[1]}, 0)"
        else:
            refs = {(item.alias or item.name): name for item, name in zip(inputs, names, strict=True)}
            expr = _TOKEN_RE.sub(lambda m: refs.get(m[0], m[0]), metric.expr or "")
        measure = Measure(name=metric.name, agg="derived", expr=expr, description=metric.description)
        return (homes[0], metric.name) if self.add_measure(self.models[homes[0]], measure, metric) else None

    def resolve_input(self, item: MetricInput, metric: MetricDef) -> Target | None:
        element = f"metric:{metric.name}"
        if item.offset:
            self.note(metric.where, element, f"input {item.name} has a time offset ({item.offset}); time offsets are "
                      "not supported; not imported")
            return None
        target = self.resolve(item.name)
        if target is None:
            known = item.name in self.metric_defs
            self.note(metric.where, element, f"input metric {item.name} was not imported; neither is this one" if known
                      else f"input {item.name} is neither a metric nor a measure of the project; not imported")
            return None
        filters = [*metric.filters, *item.filters]
        if not filters:
            return target
        model = self.models[target[0]]
        base = model.measures[target[1]]
        if base.agg == "derived" and base.expr in model.measures:  # an alias: filter what it names
            base = model.measures[base.expr]
        if base.agg == "derived":
            self.note(metric.where, element, f"input {item.name} is itself derived; a filter cannot apply to it; "
                      "not imported")
            return None
        predicate = self.predicate(model, base.name, filters, metric)
        if predicate is None:
            return None
        name = item.alias if item.alias and item.alias not in model.measures else f"{metric.name}__{item.name}"
        copy = base.model_copy(update={"name": name, "filter": combine([base.filter or "", predicate]),
                                       "description": f"{item.name} where {predicate} (an input of {metric.name})"})
        return (target[0], name) if self.add_measure(model, copy, metric, like=base.name) else None

    def predicate(self, model: _Model, measure: str, filters: list[str], metric: MetricDef) -> str | None:
        scope = self.scope(model, model.time_of.get(measure))
        try:
            return combine([translate(template, scope) for template in filters])
        except Untranslatable as exc:
            self.note(metric.where, f"metric:{metric.name}", f"filter not translated: {exc}; not imported")
            return None

    def add_measure(self, model: _Model, measure: Measure, metric: MetricDef, *, like: str | None = None) -> bool:
        """Add a metric's measure; ``like`` names the measure whose time dimension it shares."""
        existing = model.measures.get(measure.name)
        if existing is None or existing == measure:
            model.measures[measure.name] = measure
            model.time_of.setdefault(measure.name, model.time_of.get(like or "", model.sm.default_time))
            return True
        self.note(metric.where, f"metric:{metric.name}", f"source {model.sm.name} already has a different measure "
                  f"named {measure.name}; not imported")
        return False
