"""The request DSL: ``parse(text) -> Request``; any bad input raises ``DslSyntaxError``."""

from khive.dsl.nodes import Mode, Op, Ref, Request
from khive.dsl.parser import MAX_BYTES, MAX_DEPTH, MAX_OPS, parse

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_OPS", "Mode", "Op", "Ref", "Request", "parse"]
