"""MCP sampling as a plain callable for verb handlers: ``ctx.extra["sample"]``.

The MCP server puts a ``Sampler`` into the context of every ``request`` call. A handler asks
``sampler.available`` (did the client declare the sampling capability?) and then
``await sampler(key, system=..., prompt=..., max_tokens=...)``, which answers the model's text, or
None when the answer comes in the next round. Two forms, chosen by the protocol the session speaks:

* push (protocol versions up to 2025-11-25): a ``sampling/createMessage`` request to the client
  in the middle of the tool call; the text comes back at once.
* multi-round-trip (2026-07-28, SEP-2322): the server cannot call the client. The sampler records the
  request under ``key`` and answers None; after dispatch the server returns ``input_required()`` instead
  of the envelope, the client samples and re-sends the same call with ``input_responses``, and on that
  round the sampler answers each key from them. Handlers must therefore be idempotent up to their
  sampling (khive's are: the same input means the same keys).

Sampling is deprecated in the 2026-07-28 protocol (SEP-2577); the SDK's warning is silenced here, on
purpose, so clients that offer it keep working.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

SAMPLE_KEY = "sample"


class Sampler:
    def __init__(self, ctx: Any, params: types.CallToolRequestParams) -> None:
        self._ctx = ctx
        self.rounds = getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS
        self._responses: Mapping[str, Any] = params.input_responses or {}
        self.pending: dict[str, types.InputRequest] = {}

    @property
    def available(self) -> bool:
        wanted = types.ClientCapabilities(sampling=types.SamplingCapability())
        try:
            return bool(self._ctx.session.check_client_capability(wanted))
        except (AttributeError, TypeError):
            return False

    async def __call__(self, key: str, *, system: str, prompt: str, max_tokens: int = 2000) -> str | None:
        messages = [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))]
        if self.rounds:
            if key in self._responses:
                return _text(self._responses[key])
            self.pending[key] = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
                messages=messages, system_prompt=system, max_tokens=max_tokens))
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await self._ctx.session.create_message(messages=messages, max_tokens=max_tokens,
                                                            system_prompt=system,
                                                            related_request_id=self._ctx.request_id)
        return _text(result)

    def input_required(self) -> types.InputRequiredResult | None:
        """The result that asks the client for the recorded samples, when there are any."""
        return types.InputRequiredResult(input_requests=dict(self.pending)) if self.pending else None


def _text(result: Any) -> str:
    """The text of a sampling result (typed or a plain mapping); blocks that are not text are skipped."""
    content = result.get("content") if isinstance(result, Mapping) else getattr(result, "content", None)
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        text = block.get("text") if isinstance(block, Mapping) else getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "".join(parts)
