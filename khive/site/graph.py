"""A table's join graph as inline SVG, computed here (no script, works offline and prints).

The table sits in the middle; its neighbours sit on an ellipse around it, each a link to its own page.
One line per neighbour, drawn after the strongest evidence there is for the join: a declared foreign
key (solid), an inferred relationship the scan accepted (solid, its confidence), one awaiting review
(dashed, its confidence), or only analysts' queries joining the two (dotted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from khive.site.html import Markup, el

WIDTH, HEIGHT = 720, 420
RADIUS_X, RADIUS_Y = 250, 150
NODE_HEIGHT = 26
CHAR_WIDTH = 7.2  # 12px sans-serif, on average
MAX_LABEL = 30
MAX_NEIGHBOURS = 16
STRENGTH = {"fk": 3, "accepted": 2, "review": 1, "usage": 0}


@dataclass
class Neighbour:
    table: str
    href: str | None
    kinds: set[str] = field(default_factory=set)  # fk, accepted, review, usage
    confidence: float | None = None

    def add(self, kind: str, confidence: float | None = None) -> None:
        self.kinds.add(kind)
        if confidence is not None:
            self.confidence = max(self.confidence or 0.0, confidence)

    @property
    def strongest(self) -> str:
        return max(self.kinds, key=STRENGTH.__getitem__) if self.kinds else "usage"

    @property
    def label(self) -> str:
        kind = self.strongest
        if kind == "fk":
            return "foreign key"
        if kind in ("accepted", "review") and self.confidence is not None:
            return f"{'review ' if kind == 'review' else ''}{self.confidence:.2f}"
        return "joined in queries"


def _short(name: str) -> str:
    return name if len(name) <= MAX_LABEL else name[:MAX_LABEL - 1] + "…"


def _node(x: float, y: float, name: str, css: str, href: str | None) -> Markup:
    label = _short(name)
    width = max(60.0, len(label) * CHAR_WIDTH + 20)
    box = el("rect", {"x": f"{x - width / 2:.1f}", "y": f"{y - NODE_HEIGHT / 2:.1f}", "width": f"{width:.1f}",
                      "height": NODE_HEIGHT, "rx": 6, "class": css})
    words = el("text", {"x": f"{x:.1f}", "y": f"{y + 4:.1f}", "text-anchor": "middle"}, label)
    group = el("g", {"class": "node"}, el("title", None, name), box, words)
    return el("a", {"href": href}, group) if href else group


def join_graph(center: str, neighbours: list[Neighbour]) -> Markup:
    """The SVG for ``center`` and up to MAX_NEIGHBOURS neighbours (strongest first, then by name)."""
    shown = sorted(neighbours, key=lambda n: (-STRENGTH[n.strongest], n.table))[:MAX_NEIGHBOURS]
    cx, cy = WIDTH / 2, HEIGHT / 2
    lines, labels, nodes = [], [], []
    for index, neighbour in enumerate(shown):
        angle = -math.pi / 2 + 2 * math.pi * index / max(len(shown), 1)
        x, y = cx + RADIUS_X * math.cos(angle), cy + RADIUS_Y * math.sin(angle)
        lines.append(el("line", {"x1": f"{cx:.1f}", "y1": f"{cy:.1f}", "x2": f"{x:.1f}", "y2": f"{y:.1f}",
                                 "class": f"edge {neighbour.strongest}"}))
        mx, my = cx + (x - cx) * 0.5, cy + (y - cy) * 0.5  # halfway: clear of both boxes at this radius
        labels.append(el("text", {"x": f"{mx:.1f}", "y": f"{my - 3:.1f}", "text-anchor": "middle",
                                  "class": "edge-label"}, neighbour.label))
        nodes.append(_node(x, y, neighbour.table, "neighbour", neighbour.href))
    nodes.append(_node(cx, cy, center, "center", None))
    title = f"Join graph of {center}: {len(shown)} of {len(neighbours)} neighbours"
    return el("svg", {"class": "join-graph", "viewBox": f"0 0 {WIDTH} {HEIGHT}", "role": "img",
                      "aria-label": title, "xmlns": "http://www.w3.org/2000/svg"},
              el("title", None, title), lines, labels, nodes)
