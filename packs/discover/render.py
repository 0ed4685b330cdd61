"""``format: "text"``: the same payload as compact prose for clients that prefer it."""

from __future__ import annotations

from typing import Any


def _ref_line(position: int, ref: dict[str, Any]) -> str:
    where = f" @{ref['connectionId']}" if ref.get("connectionId") else ""
    flags = f" [{'; '.join(ref['flags'])}]" if ref.get("flags") else ""
    head = f"{position}. {ref['kind']} {ref['id']}{where} ({ref['score']:.2f}, on {ref['matchedOn']}){flags}"
    tail = [part for part in (ref.get("summary"), ref.get("snippet")) if part]
    return head + ("\n   " + " | ".join(tail) if tail else "")


def search_text(payload: dict[str, Any]) -> str:
    lines = [f"{payload['count']} refs for {payload['query']!r}:"]
    lines += [_ref_line(i, ref) for i, ref in enumerate(payload["refs"], start=1)]
    if payload.get("possiblyRelevant"):
        lines.append("Possibly relevant (low confidence, mentioned in their text):")
        lines += [_ref_line(i, ref) for i, ref in enumerate(payload["possiblyRelevant"], start=1)]
    if payload.get("floor"):
        lines.append("Always relevant: " + ", ".join(page["id"] for page in payload["floor"]))
    if payload.get("uncovered"):
        lines.append("Nothing found for: " + ", ".join(payload["uncovered"]))
    if payload.get("coverage", {}).get("thin"):
        lines.append(f"Thin coverage: the best refs cover {', '.join(payload['coverage']['covered']) or 'none'} "
                     f"of the question's terms; not {', '.join(payload['coverage']['missing'])}.")
    if payload.get("questions"):
        lines.append("Ask first:")
        lines += [f"{i}. {q['question']}" for i, q in enumerate(payload["questions"], start=1)]
    for item in payload.get("delivered") or []:
        cut = " (truncated)" if item["truncated"] else ""
        lines += [f"--- {item['kind']} {item['id']} ({item['path']}){cut}", item["body"].rstrip()]
    return "\n".join(lines + _budget_lines(payload))


def lookup_text(payload: dict[str, Any]) -> str:
    entity = payload["entity"]
    lines = [f"{entity['kind']} {entity['id']}: {entity.get('title') or ''}".rstrip()]
    if entity.get("summary"):
        lines.append(f"  {entity['summary']}")
    lines.append(f"  file {entity['path']} (sha256 {str(entity.get('contentHash'))[:12]})")
    lines.append(f"  confidence {entity['confidence']:.2f}: {entity['confidenceWhy']}"
                 + (f"; aliases {', '.join(entity['aliases'])}" if entity.get("aliases") else ""))
    usage = payload.get("usage")
    if usage:
        lines.append(f"  usage: {usage.get('frequencyTier')} - {usage.get('narrative') or ''}".rstrip(" -"))
    for relation, entries in (payload.get("neighbours") or {}).items():
        shown = ", ".join(f"{'->' if e['direction'] == 'out' else '<-'}{e['id']}"
                          + (f" (d{e['distance']} via {e['via']})" if e["distance"] > 1 else "")
                          + (f" [{e['confidence']:.2f}]" if e["confidence"] < 1 else "") for e in entries)
        lines.append(f"  {relation}: {shown}")
    for doc in payload.get("documents") or []:
        lines.append(f"  doc {doc['kind']} {doc['id']} ({doc['why']})" + (f": {doc['summary']}" if doc.get("summary")
                                                                         else ""))
    for item in payload.get("evidence") or []:
        excerpt = f" - {item['excerpt']}" if item.get("excerpt") else ""
        lines.append(f"  evidence {item['path']} {str(item.get('contentHash'))[:12]}{excerpt}")
    return "\n".join(lines + _budget_lines(payload))


def _budget_lines(payload: dict[str, Any]) -> list[str]:
    report = payload.get("budget")
    if not report:
        return []
    fits = "fits" if report["fits"] else "does NOT fit"
    dropped = ", ".join(report["dropped"]) or "nothing"
    return [f"Budget {report['budgetTokens']} tokens (approximate): {report['tokens']['total']} used, {fits}; "
            f"dropped {dropped}."]
