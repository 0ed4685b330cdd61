"""The dispatcher's contract: envelope shape, parallel and chain semantics, $prev, args, conflicts."""

from __future__ import annotations

from typing import Any

import pytest
from testpack import Concurrency

from khive.context import CLI, Context
from khive.dispatch import dispatch
from khive.dsl import parse
from khive.progress import ProgressRecorder

pytestmark = pytest.mark.anyio


async def test_single_envelope_shape(run: Any) -> None:
    envelope = await run('t.echo(x=1, y="a")', request_id="req-1")
    assert envelope == {
        "results": [{"ok": True, "verb": "t.echo", "result": {"x": 1, "y": "a", "principal": "operator:tester"}}],
        "summary": {"total": 1, "succeeded": 1, "failed": 0, "aborted": 0},
        "status": "success",
        "requestId": "req-1",
    }


async def test_request_id_generated_when_absent(run: Any) -> None:
    first, second = await run("ping()"), await run("ping()")
    assert first["requestId"] and first["requestId"] != second["requestId"]


async def test_parallel_results_in_input_order_and_failure_isolated(run: Any) -> None:
    envelope = await run('[t.slow(ms=60), t.fail(), t.echo(x=3), t.crash(message="bug"), t.slow(ms=1)]')
    assert [r["verb"] for r in envelope["results"]] == ["t.slow", "t.fail", "t.echo", "t.crash", "t.slow"]
    assert [r["ok"] for r in envelope["results"]] == [True, False, True, False, True]
    assert envelope["results"][0]["result"] == {"slept_ms": 60}
    assert envelope["results"][1]["error"]["code"] == "boom"
    assert envelope["results"][3]["error"]["code"] == "internal_error"
    assert "RuntimeError: bug" in envelope["results"][3]["error"]["message"]
    assert envelope["summary"] == {"total": 5, "succeeded": 3, "failed": 2, "aborted": 0}
    assert envelope["status"] == "partial"


async def test_parallel_ops_run_concurrently_up_to_the_per_request_cap(run: Any) -> None:
    Concurrency.peak = 0
    await run("[" + ", ".join(["t.slow(ms=100)"] * 6) + "]")
    assert Concurrency.peak == 4  # server.max_parallel_ops defaults to 4


async def test_max_parallel_ops_bounds_a_batch_and_keeps_its_semantics(make_runtime: Any) -> None:
    runtime = make_runtime({"server": {"max_parallel_ops": 2}})
    Concurrency.peak = 0
    text = ('[t.slow(ms=60), t.fail(), t.write(key="a"), t.crash(message="bug"), t.slow(ms=5), t.write(key="a"), '
            't.echo(x=7), t.slow(ms=5)]')
    envelope = await dispatch(parse(text), Context(runtime, "operator:tester", CLI))
    assert Concurrency.peak == 2
    results = envelope["results"]
    assert [r["verb"] for r in results] == ["t.slow", "t.fail", "t.write", "t.crash", "t.slow", "t.write", "t.echo",
                                           "t.slow"]
    assert [r["ok"] for r in results] == [True, False, True, False, True, False, True, True]
    assert results[5]["error"]["details"]["claimedBy"] == {"index": 2, "verb": "t.write"}  # claims stay in order
    assert results[6]["result"]["x"] == 7
    assert envelope["summary"] == {"total": 8, "succeeded": 5, "failed": 3, "aborted": 0}


async def test_a_failing_write_key_rule_fails_only_its_op(run: Any) -> None:
    envelope = await run("[t.badkeys(x=1), t.echo(x=2)]")
    first, second = envelope["results"]
    assert first["error"]["code"] == "internal_error" and "failed before it ran" in first["error"]["message"]
    assert "RuntimeError: write-key rule bug" in first["error"]["message"]
    assert second["ok"] and second["result"]["x"] == 2


async def test_all_failed_status(run: Any) -> None:
    envelope = await run("[t.fail(), nope()]")
    assert envelope["status"] == "failed"
    assert envelope["summary"]["failed"] == 2


async def test_chain_passes_prev_and_aborts_after_failure(run: Any) -> None:
    envelope = await run('t.echo(x={"items": [{"id": "o-7"}]}) | t.echo(x=$prev.x.items[0].id) '
                         '| t.fail() | t.echo(x=1) | t.echo(x=2)')
    results = envelope["results"]
    assert results[1]["result"]["x"] == "o-7"
    assert results[2]["error"]["code"] == "boom"
    assert results[3] == {"ok": False, "verb": "t.echo", "aborted": True}
    assert results[4] == {"ok": False, "verb": "t.echo", "aborted": True}
    assert envelope["summary"] == {"total": 5, "succeeded": 2, "failed": 1, "aborted": 2}
    assert len(results) == envelope["summary"]["total"]


async def test_prev_refs_inside_arrays_and_objects_and_whole_prev(run: Any) -> None:
    envelope = await run('t.echo(x=[1, 2]) | t.echo(x=[$prev.x[1], {"k": $prev.x[0]}], y=$prev)')
    result = envelope["results"][1]["result"]
    assert result["x"] == [2, {"k": 1}]
    assert result["y"]["x"] == [1, 2]


async def test_prev_uses_canonical_result_not_presentation(run: Any) -> None:
    # agent presentation drops "none" (null) and rounds scores; $prev still sees the canonical values
    envelope = await run("t.scores() | t.echo(x=$prev.none, y=$prev.score)")
    assert "none" not in envelope["results"][0]["result"]
    assert envelope["results"][0]["result"]["score"] == 0.123
    assert envelope["results"][1]["result"]["y"] == 0.123456789
    assert envelope["results"][1]["ok"] is True


async def test_prev_missing_path_lists_available_fields(run: Any) -> None:
    envelope = await run("t.echo(x=1) | t.echo(x=$prev.nope) | t.echo()")
    error = envelope["results"][1]["error"]
    assert error["code"] == "ref_error"
    assert "available fields: principal, x, y" in error["message"]
    assert envelope["results"][2]["aborted"] is True


async def test_prev_index_out_of_range(run: Any) -> None:
    envelope = await run("t.echo(x=[1]) | t.echo(x=$prev.x[3])")
    assert envelope["results"][1]["error"]["code"] == "ref_error"
    assert "out of range" in envelope["results"][1]["error"]["message"]


async def test_invalid_args_name_the_field_and_expectation(run: Any) -> None:
    envelope = await run('[t.slow(ms="soon"), t.slow(ms=-1), t.write(), t.echo(z=1)]')
    errors = [r["error"] for r in envelope["results"]]
    assert all(e["code"] == "invalid_args" for e in errors)
    assert "'ms'" in errors[0]["message"] and "integer" in errors[0]["message"]
    assert "greater than or equal to 0" in errors[1]["message"]
    assert "missing required argument 'key'" in errors[2]["message"]
    assert "unknown argument 'z'" in errors[3]["message"] and "x, y" in errors[3]["message"]
    assert errors[0]["details"]["errors"][0]["field"] == "ms"


async def test_unknown_verb_suggests_closest(run: Any) -> None:
    envelope = await run("pnig()")
    error = envelope["results"][0]["error"]
    assert error["code"] == "unknown_verb"
    assert "ping" in error["details"]["closest"]


async def test_write_conflict_in_batch(run: Any) -> None:
    envelope = await run('[t.write(key="a"), t.write(key="b"), t.write(key="a"), t.echo()]')
    results = envelope["results"]
    assert [r["ok"] for r in results] == [True, True, False, True]
    error = results[2]["error"]
    assert error["code"] == "write_conflict"
    assert error["details"]["claimedBy"] == {"index": 0, "verb": "t.write"}
    assert "test:a" in error["message"]


async def test_no_conflict_across_chain_steps(run: Any) -> None:
    envelope = await run('t.write(key="a") | t.write(key="a")')
    assert envelope["status"] == "success"


async def test_failed_op_does_not_claim_its_key(run: Any) -> None:
    # a denied or invalid op never claimed anything, so a later valid op may take the key
    envelope = await run('[t.write(key=1), t.write(key="a")]')
    assert [r["ok"] for r in envelope["results"]] == [False, True]


async def test_depth_guard_rejects_100k_deep_result_without_recursion(run: Any) -> None:
    envelope = await run("[t.deep(depth=100000), t.deep(depth=10)]")
    assert envelope["results"][0]["error"]["code"] == "result_too_deep"
    assert envelope["results"][1]["ok"] is True


async def test_presentation_modes(run: Any) -> None:
    agent = (await run("t.scores()"))["results"][0]["result"]
    verbose = (await run("t.scores()", presentation="verbose"))["results"][0]["result"]
    human = (await run("t.scores()", presentation="human"))["results"][0]["result"]
    assert agent == {"score": 0.123, "rank_score": 12300.0, "amount": 0.123456789, "ts": "2026-11-29T15:28:26Z",
                     "rows": [[1, None], [None, 2]], "nested": {"kept": 0}}
    assert verbose["none"] is None and verbose["empty"] == [] and verbose["ts"].endswith(".123456+00:00")
    assert human == verbose


async def test_always_verbose_verbs_and_errors_are_not_transformed(run: Any) -> None:
    envelope = await run("[t.verbose(), t.fail()]")
    assert envelope["results"][0]["result"]["none"] is None
    assert envelope["results"][1]["error"]["details"] == {"why": None}


async def test_help_returns_schema_visibility_and_write_key_rule(run: Any) -> None:
    envelope = await run("t.write(help=true)")
    result = envelope["results"][0]["result"]
    assert result["visibility"] == "public"
    assert result["writeKeys"] == "test:<key>"
    assert result["params"]["required"] == ["key"]
    assert result["readOnly"] is False


async def test_progress_reaches_the_sink(runtime: Any) -> None:
    recorder = ProgressRecorder()
    await dispatch(parse("t.steps(n=3)"), Context(runtime, "operator:tester", CLI, progress=recorder))
    assert recorder.events == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_verbs_lists_every_verb(run: Any) -> None:
    result = (await run("verbs()"))["results"][0]["result"]
    names = [entry["verb"] for entry in result["verbs"]]
    assert names == sorted(names)
    assert {"verbs", "ping", "audit.query", "t.echo", "t.admin"} <= set(names)
    assert result["count"] == len(names)
    assert (await run('verbs(pack="t")'))["results"][0]["result"]["count"] == 11
