"""A pack for the daemon tests, loaded in every process through KHIVE_EXTRA_PACKS=daemonpack:PACK.

``d.read`` (read-only) and ``d.write`` (writes) can hold until a release file exists, so a test
can have requests in flight at a moment it chooses; each records where and when it really ran
in a journal file, which the tests compare with the audit trail. The ``gate`` warm task holds
while ``<project>/.warm-gate`` exists, so a test sees requests answered while warming runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio

from khive.context import Context
from khive.hookspecs import PackInfo, WarmTask, hookimpl
from khive.runtime import Runtime
from khive.verbs import Params, Verb


class StepParams(Params):
    tag: str
    journal: str = ""  # append "<verb> <tag> <pid>" here once the op has really run
    hold: str = ""  # a directory: write started-<tag>, then wait for its "release" file
    note: Any = None  # any value, e.g. one substituted from $prev


async def _step(verb: str, params: StepParams, ctx: Context) -> dict[str, Any]:
    if params.hold:
        hold = Path(params.hold)
        (hold / f"started-{params.tag}").write_text(str(os.getpid()))
        with anyio.fail_after(120):
            while not (hold / "release").exists():
                await anyio.sleep(0.02)
    if params.journal:
        with open(params.journal, "a", encoding="utf-8") as journal:
            journal.write(f"{verb} {params.tag} {os.getpid()}\n")
            journal.flush()
            os.fsync(journal.fileno())
    return {"tag": params.tag, "pid": os.getpid(), "principal": ctx.principal, "transport": ctx.transport}


async def read(params: StepParams, ctx: Context) -> dict[str, Any]:
    return await _step("d.read", params, ctx)


async def write(params: StepParams, ctx: Context) -> dict[str, Any]:
    return await _step("d.write", params, ctx)


async def huge(params: Params, ctx: Context) -> dict[str, Any]:
    """A result JSON cannot hold: an integer beyond 64 bits."""
    return {"n": 2**70}


class SampleParams(Params):
    prompt: str


async def sample(params: SampleParams, ctx: Context) -> dict[str, Any]:
    """Ask the caller's LLM through ``ctx.sampler``, as historic_sql's sampling provider does."""
    sampler = ctx.sampler
    if sampler is None:
        return {"sampler": False, "pid": os.getpid()}
    if not sampler.available:  # as historic_sql does: fall back rather than ask a client that cannot sample
        return {"sampler": True, "available": False, "pid": os.getpid()}
    text = await sampler(f"k-{params.prompt}", system="answer briefly", prompt=params.prompt, max_tokens=50)
    return {"sampler": True, "available": sampler.available, "text": text, "pid": os.getpid()}


class DaemonTestPack:
    @hookimpl
    def khive_pack_info(self) -> PackInfo:
        return PackInfo(name="d", version="1")

    @hookimpl
    def khive_register_verbs(self) -> list[Verb]:
        return [Verb("d.read", StepParams, read, "Read-only step."),
                Verb("d.write", StepParams, write, "A step that writes.", write_keys=lambda p: [f"d:{p.tag}"],
                     read_only=False),
                Verb("d.sample", SampleParams, sample, "Sample the caller's LLM."),
                Verb("d.huge", Params, huge, "Return an integer beyond 64 bits.")]

    @hookimpl
    def khive_warm(self, runtime: Runtime) -> list[WarmTask]:
        gate = runtime.project / ".warm-gate"

        async def hold_while_gated() -> None:
            with anyio.fail_after(120):
                while gate.exists():
                    await anyio.sleep(0.02)

        return [WarmTask("gate", hold_while_gated, resources=("nothing",))]


PACK = DaemonTestPack()
