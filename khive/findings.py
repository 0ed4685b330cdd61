"""Findings in one canonical shape, whatever check produced them (``khive doctor --format finding``).

A canonical finding is ``{id, severity, title, detail, category, location, ref, metadata, confidence}``:
``severity`` is one of critical, high, medium, low, info; ``location`` is ``{path, line}`` or None; ``ref`` is
the check's code; ``metadata`` keeps everything the check said (its own severity, code and details included),
so nothing is lost. Checks that speak in error/warning/info (``historic_sql.probe``) map error -> high,
warning -> medium, info -> low; nothing here is critical, since no finding takes a system down. Findings are
ordered most severe first, then by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")
_MAPPED = {"error": "high", "warning": "medium", "warn": "medium", "info": "low", "off": "info"}
_OWN_FIELDS = ("severity", "code", "title", "detail", "message", "fix", "location", "category", "ref",
               "metadata", "confidence")


def severity(value: str) -> str:
    return value if value in SEVERITY_ORDER else _MAPPED.get(value, "info")


def _location(value: Any) -> dict[str, Any] | None:
    if not value:
        return None
    path, _, line = str(value).partition(":")
    return {"path": path, "line": int(line) if line.isdigit() else None}


def canonical(item: Mapping[str, Any], check: str) -> dict[str, Any]:
    """One check's finding in the canonical shape; ``check`` is the request that produced it."""
    code = str(item.get("ref") or item.get("code") or "finding")
    detail = " ".join(str(part) for part in (item.get("detail") or item.get("message"), item.get("fix")) if part)
    metadata = {"check": check, "severity": item.get("severity"), "code": item.get("code"),
                **dict(item.get("metadata") or {}),
                **{key: value for key, value in item.items() if key not in _OWN_FIELDS}}
    if item.get("fix"):
        metadata["fix"] = item["fix"]
    confidence = item.get("confidence")
    return {"id": f"{check.split('(', 1)[0]}/{code}" + (f"@{item['location']}" if item.get("location") else ""),
            "severity": severity(str(item.get("severity", "info"))),
            "title": str(item.get("title") or code.replace("_", " ")),
            "detail": detail, "category": str(item.get("category") or check.split("(", 1)[0]),
            "location": _location(item.get("location")), "ref": code, "metadata": metadata,
            "confidence": float(confidence) if isinstance(confidence, int | float) else 1.0}


def ordered(findings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER.index(f["severity"]), f["id"]))
