"""Digest providers: who turns a work unit's staged input into a validated usage or patterns digest.

    deterministic  ``digest.py``, always available, the fallback of the others
    sampling       the MCP client's own LLM (``ctx.extra["sample"]``, see khive/mcp_sampling.py); a client
                   that offers no sampling gets deterministic digests. Without an MCP session (``khive
                   ingest`` on the CLI) the units stay pending until a client calls ``historic_sql.digest``;
                   that verb without a session (forwarded to the daemon) digests deterministically.
                   A reply that fails validation is rejected with the reason and the unit falls back to the
                   deterministic digest, so a run never ends with less than the deterministic result.
    agent          nothing here: the units stay pending for ``historic_sql.units`` / ``historic_sql.submit``
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import orjson

from khive.context import Context
from khive.mcp_sampling import SAMPLE_KEY
from packs.historic_sql import digest, evidence
from packs.historic_sql.catalog import Catalog
from packs.historic_sql.config import HistoricSqlConfig
from packs.historic_sql.evidence import WorkUnit
from packs.historic_sql.projection import sl_sources_by_table
from packs.historic_sql.schemas import InvalidOutput, PatternsOutput, UsageOutput, output_schema, parse_output
from packs.historic_sql.stage import PATTERNS, read_run_file, table_file


def unit_inputs(ctx: Context, unit: WorkUnit, run: Path, catalog: Catalog) -> dict[str, Any]:
    """What a provider reads for ``unit``: the staged input, the scan's columns, the SL sources."""
    if unit.kind == "usage":
        content = orjson.loads(read_run_file(ctx.runtime.project, run, table_file(unit.target)))
        table = catalog.tables.get(unit.target)
        return digest.usage_input(content, table.columns if table is not None else ())
    doc = orjson.loads(read_run_file(ctx.runtime.project, run, PATTERNS))
    tables = {t for s in doc.get("tableSets", []) for t in s["tables"]}
    return digest.patterns_input(doc, sl_sources_by_table(ctx.runtime.files, unit.connection, tables))


def deterministic(unit: WorkUnit, inputs: dict[str, Any]) -> UsageOutput | PatternsOutput:
    if unit.kind == "usage":
        return digest.usage(inputs["staged"])
    return digest.patterns({"tableSets": inputs["tableSets"]}, inputs["slSources"])


def describe(ctx: Context, unit: WorkUnit, run: Path, catalog: Catalog) -> dict[str, Any]:
    """A unit as ``historic_sql.units`` lists it: id, inputs, the JSON schema its output must match."""
    return {**unit.to_json(), "input": unit_inputs(ctx, unit, run, catalog), "outputSchema": output_schema(unit.kind),
            "instructions": digest.prompt(unit.kind, {}).split("\n\n", 1)[0]}


async def digest_units(ctx: Context, connection: str, run: Path, units: list[WorkUnit], provider: str,
                       catalog: Catalog, ingest_settings: HistoricSqlConfig, *, wait_for_session: bool = False
                       ) -> dict[str, Any]:
    """Digest ``units`` with ``provider``. Without an MCP session, ``wait_for_session`` leaves sampling units
    pending (``khive ingest``); otherwise they get deterministic digests (a call forwarded to the daemon,
    which the client's session does not reach)."""
    counts: dict[str, int] = {}
    rejected: list[dict[str, str]] = []
    if provider == "agent" or not units:
        return {"digests": counts, "rejected": rejected}
    sampler = (ctx.extra or {}).get(SAMPLE_KEY)
    if provider == "sampling" and sampler is None and wait_for_session:
        return {"digests": counts, "rejected": rejected}  # no MCP session here: historic_sql.digest from a client
    sampling = provider == "sampling" and sampler is not None and sampler.available
    limiter = anyio.CapacityLimiter(ingest_settings.concurrency)  # requests to the client's LLM at once

    async def one(unit: WorkUnit) -> None:
        inputs = await ctx.run_blocking(unit_inputs, ctx, unit, run, catalog)
        output: UsageOutput | PatternsOutput | None = None
        used = "deterministic"
        if sampling and sampler is not None:
            async with limiter:
                text = await sampler(unit.id, system=digest.SYSTEM_PROMPT, prompt=digest.prompt(unit.kind, inputs))
            if text is None:
                return  # asked for in the next round of this call (2026-07-28 multi-round-trip)
            try:
                parsed = parse_output(unit.kind, text)
            except InvalidOutput as exc:
                rejected.append({"unit": unit.id, "reason": exc.message})
            else:
                assert isinstance(parsed, UsageOutput | PatternsOutput)
                output, used = parsed, "sampling"
        if output is None:
            output = deterministic(unit, inputs)
        await ctx.run_blocking(lambda: evidence.store(ctx.runtime.files, unit, output, used, author=ctx.principal,
                                                      redactor=ctx.runtime.redactor))
        counts[used] = counts.get(used, 0) + 1

    async with anyio.create_task_group() as group:
        for unit in units:
            group.start_soon(one, unit)
    rejected.sort(key=lambda r: r["unit"])
    return {"digests": dict(sorted(counts.items())), "rejected": rejected}
