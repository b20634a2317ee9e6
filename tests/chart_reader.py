"""A chart read as a reader reads it, for the chart tests (issue 29, point 4).

From the rendered chart, not from its spec:
- `text_boxes` / `overlapping_texts`: every text of the rendered SVG (tick labels, legend
  entries, titles, annotations) as its box at DejaVu Sans's widths (the font rsvg and most
  Linux viewers draw 'sans-serif' with; wider than vl-convert's own measure), and the pairs of
  boxes that overlap;
- `hidden_arms`: per panel of the Vega scenegraph, each arm (the 'arm' or 'series' of a mark's
  description) none of whose opaque marks shows: every sample point of its symbols, lines,
  rules and rects lies under a mark of another arm drawn later (dashes leave gaps);
- `marks_outside`: marks whose extent leaves the canvas (texts: `chart_marks.text_outside`).

Each is a plain measurement: the tests plant a collision and see it found.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import vl_convert as vlc

from figures import charts
from tests.chart_marks import _apply, _compose, _matrix, describe

# DejaVu Sans advance widths (1/1000 em) of ASCII 32..126, regular and bold.
_REGULAR = (
    "318 401 460 838 636 950 780 275 390 390 500 838 318 361 318 337 636 636 636 636 636 636 "
    "636 636 636 636 337 337 838 838 838 531 1000 684 686 698 770 632 575 775 752 295 295 656 "
    "557 863 748 787 603 787 695 635 611 732 684 989 685 611 685 390 337 390 838 500 500 613 "
    "635 550 635 615 352 635 634 278 278 579 278 974 634 612 635 635 411 521 392 634 592 818 "
    "592 592 525 636 337 636 838"
)
_BOLD = (
    "348 456 521 838 696 1002 872 306 457 457 523 838 380 415 380 365 696 696 696 696 696 696 "
    "696 696 696 696 400 400 838 838 838 580 1000 774 762 734 830 683 683 821 837 372 372 775 "
    "637 995 837 850 733 850 770 720 682 812 774 1103 771 724 725 457 365 457 838 500 500 675 "
    "716 593 716 678 435 716 712 343 343 665 343 1042 712 687 716 716 493 595 478 712 652 924 "
    "645 652 582 712 365 712 838"
)
WIDTHS = {
    False: [int(w) / 1000 for w in _REGULAR.split()],
    True: [int(w) / 1000 for w in _BOLD.split()],
}
ASCENT, DESCENT = 0.76, 0.24  # em above and below the baseline (DejaVu: 0.76 / 0.24)


def text_width(text: str, size: float, bold: bool = False) -> float:
    table = WIDTHS[bold]
    return size * sum(table[ord(c) - 32] if 32 <= ord(c) < 127 else 0.7 for c in text)


def render_svg(chart) -> str:
    spec = chart if isinstance(chart, dict) else charts.spec_of(chart)
    return vlc.vegalite_to_svg(spec, vl_version=charts.VL_VERSION)


def text_boxes(svg: str) -> list[tuple[str, list[tuple[float, float]]]]:
    """(text, its box's four corners on the canvas) for each text of the SVG."""
    root = ET.fromstring(svg)
    out = []

    def walk(node, m):
        m = _compose(m, _matrix(node.get("transform", "")))
        if node.tag.endswith("text"):
            lines = [t for t in node.itertext() if t.strip()] or [""]
            size = float(re.sub(r"[^0-9.]", "", node.get("font-size", "10")) or 10)
            bold = node.get("font-weight") in ("bold", "700")
            anchor = node.get("text-anchor", "start")
            for i, line in enumerate(lines):  # a multi-line text: one tspan per line
                w = text_width(line, size, bold)
                x0 = {"start": 0.0, "middle": -w / 2, "end": -w}[anchor]
                y = i * size * 1.2  # Vega's default line height
                top, bottom = y - ASCENT * size, y + DESCENT * size
                corners = [_apply(m, x, yy) for x, yy in ((x0, top), (x0 + w, top))]
                corners += [_apply(m, x, yy) for x, yy in ((x0 + w, bottom), (x0, bottom))]
                if line:
                    out.append((line, corners))
            return
        for child in node:
            walk(child, m)

    walk(root, (1.0, 0.0, 0.0, 1.0, 0.0, 0.0))
    return out


def _separated(a, b, gap: float) -> bool:
    """Separating-axis test of two text boxes (corners: top-left, top-right, bottom-right,
    bottom-left): True when some axis parts them by `gap` px along a text's line (labels on
    one line run together closer than that) or by 1 px across it (stacked lines, a rotated
    axis title beside its tick labels)."""
    for poly in (a, b):
        for i in range(4):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % 4]
            nx, ny = y1 - y2, x2 - x1
            norm = math.hypot(nx, ny) or 1.0
            nx, ny = nx / norm, ny / norm
            pa = [x * nx + y * ny for x, y in a]
            pb = [x * nx + y * ny for x, y in b]
            need = gap if i % 2 else 1.0  # edges 1 and 3 face along the line
            if max(pa) + need <= min(pb) or max(pb) + need <= min(pa):
                return True
    return False


# Two labels closer than this read as one ('3.16e-25.62e-2' was 2 px apart): about the width
# of a space at the charts' 10 px labels.
GAP = 3.0


def overlapping_texts(svg: str, gap: float = GAP) -> list[str]:
    """Each pair of texts whose boxes overlap or lie closer than `gap` px: a reader reads
    them as one."""
    boxes = text_boxes(svg)
    bad = []
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1 :]:
            if not _separated(a, b, gap):
                bad.append(f"{ta!r} overlaps {tb!r} at {_where(a)}")
    return bad


def _where(corners) -> str:
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    return f"x {min(xs):.0f}..{max(xs):.0f}, y {min(ys):.0f}..{max(ys):.0f}"


# -- marks from the scenegraph -------------------------------------------------------------------
def scenegraph(chart) -> dict:
    spec = chart if isinstance(chart, dict) else charts.spec_of(chart)
    return vlc.vegalite_to_scenegraph(spec, vl_version=charts.VL_VERSION)["scenegraph"]


def _opacity(item: dict, part: str) -> float:
    o = item.get("opacity", 1.0)
    o = 1.0 if o is None else o
    value = item.get(f"{part}Opacity", 1.0)
    return o * (1.0 if value is None else value)


def _painted(item: dict, part: str) -> bool:
    colour = item.get(part)
    return bool(colour) and colour not in ("transparent", "none") and _opacity(item, part) >= 0.5


def drawn_marks(scene: dict) -> list[list[dict]]:
    """Per panel (the cells of a facet, else the whole chart), the marks in drawing order:
    {"order", "type", "key" (arm or series), "points": Nx2 canvas px, "width" (stroke px,
    for lines and rules), "dash" (period, on) or None, "radius" (symbols), "rect", "covers"
    (whether it hides what lies under it), "shows" (whether a reader can see it)}."""
    panels: list[list[dict]] = []
    counter = [0]

    def visit(node: dict, x0: float, y0: float, panel: list | None):
        for mark in node.get("items", []) or []:
            if not isinstance(mark, dict):
                continue
            kind = mark.get("marktype")
            if kind == "group":
                cell = str(mark.get("name", "")).endswith("cell")
                for g in mark.get("items", []):
                    gx, gy = x0 + (g.get("x") or 0), y0 + (g.get("y") or 0)
                    if cell:
                        panels.append([])
                        visit(g, gx, gy, panels[-1])
                    else:
                        visit(g, gx, gy, panel)
            elif mark.get("role") == "mark" and kind in ("symbol", "line", "rule", "rect"):
                target = panel if panel is not None else _whole(panels)
                _collect(mark, kind, x0, y0, target, counter)

    visit({"items": [scene]}, 0.0, 0.0, None)
    return [p for p in panels if p]


def _whole(panels: list) -> list:
    if not panels:
        panels.append([])
    return panels[0]


def _collect(mark: dict, kind: str, x0: float, y0: float, into: list, counter: list) -> None:
    items = mark.get("items", [])
    # 'curves__2': a layer drawn over 'curves' (interleaved dashes) counts as 'curves'
    layer = str(mark.get("name", "")).removesuffix("_marks").split("__")[0]
    if kind == "line" and items:  # one polyline per mark
        first = items[0]
        key = _key(describe(first))
        points = [(x0 + i.get("x", 0), y0 + i.get("y", 0)) for i in items if "x" in i]
        counter[0] += 1
        into.append(
            {
                "order": counter[0],
                "layer": layer,
                "type": "line",
                "key": key,
                "points": np.array(points, dtype=float),
                "width": first.get("strokeWidth", 1.0) or 1.0,
                "dash": _dash(first),
                "covers": _painted(first, "stroke"),
                "shows": _painted(first, "stroke"),
            }
        )
        return
    for item in items:
        counter[0] += 1
        key = _key(describe(item))
        x, y = x0 + (item.get("x") or 0), y0 + (item.get("y") or 0)
        entry = {"order": counter[0], "layer": layer, "type": kind, "key": key}
        if kind == "symbol":
            filled = _painted(item, "fill")
            r = math.sqrt(item.get("size", 64) or 64) / 2
            entry.update(
                points=np.array([(x, y)], dtype=float),
                radius=r,
                covers=filled,
                shows=filled or _painted(item, "stroke"),
            )
        elif kind == "rule":
            x2 = x0 + item["x2"] if "x2" in item else x
            y2 = y0 + item["y2"] if "y2" in item else y
            entry.update(
                points=np.array([(x, y), (x2, y2)], dtype=float),
                width=item.get("strokeWidth", 1.0) or 1.0,
                dash=_dash(item),
                covers=_painted(item, "stroke"),
                shows=_painted(item, "stroke"),
                rule=True,
            )
        else:  # rect
            w = item["x2"] - item.get("x", 0) if "x2" in item else item.get("width", 0)
            h = item["y2"] - item.get("y", 0) if "y2" in item else item.get("height", 0)
            x1, y1 = min(x, x + w), min(y, y + h)
            entry.update(
                points=np.array([(x1 + abs(w) / 2, y1 + abs(h) / 2)], dtype=float),
                rect=(x1, y1, x1 + abs(w), y1 + abs(h)),
                covers=_painted(item, "fill"),
                shows=_painted(item, "fill"),
            )
        into.append(entry)


def _key(d: dict):
    for name in ("arm", "series"):
        if d.get(name) is not None:
            return str(d[name])
    return None


def _dash(item: dict):
    dash = item.get("strokeDash")
    if not dash:
        return None
    if isinstance(dash, str):
        dash = [float(x) for x in re.split(r"[ ,]+", dash.strip()) if x]
    on = float(dash[0])
    period = on + float(dash[1] if len(dash) > 1 else dash[0])
    if period <= on:  # [1, 0]: solid
        return None
    return (period, on, float(item.get("strokeDashOffset") or 0.0))


def _samples(m: dict) -> np.ndarray:
    """Points a reader could see the mark by: a symbol's centre and four points around it, a
    line or rule every 2 px, a rect's centre and corners (inset 1 px)."""
    if m["type"] == "symbol":
        (x, y), r = m["points"][0], 0.6 * m["radius"]
        return np.array([(x, y), (x - r, y), (x + r, y), (x, y - r), (x, y + r)])
    if m["type"] == "rect":
        x1, y1, x2, y2 = m["rect"]
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        inset = [(min(x1 + 1, cx), min(y1 + 1, cy)), (max(x2 - 1, cx), max(y2 - 1, cy))]
        (a, b), (c, d) = inset
        return np.array([(cx, cy), (a, b), (c, b), (a, d), (c, d)])
    pts = m["points"]
    out, lengths, along = [pts[:1]], [np.zeros(1)], 0.0
    for p, q in zip(pts[:-1], pts[1:]):
        length = float(np.hypot(*(q - p)))
        n = max(1, int(length / 2))
        t = np.linspace(0, 1, n + 1)[1:]
        out.append(p + t[:, None] * (q - p))
        lengths.append(along + t * length)
        along += length
    points, at = np.concatenate(out), np.concatenate(lengths)
    if m.get("dash"):  # a dashed stroke is seen only by its dashes
        period, on, offset = m["dash"]
        points = points[((at + offset) % period) < on]
    return points


def _covered(points: np.ndarray, m: dict) -> np.ndarray:
    """Which of the points lie under mark m (a dashed stroke covers only its dashes)."""
    if m["type"] == "symbol":
        return np.hypot(*(points - m["points"][0]).T) <= m["radius"]
    if m["type"] == "rect":
        x1, y1, x2, y2 = m["rect"]
        x, y = points.T
        return (x >= x1) & (x <= x2) & (y >= y1) & (y <= y2)
    pts, half = m["points"], m["width"] / 2 + 0.5
    hit = np.zeros(len(points), dtype=bool)
    along = 0.0
    for p, q in zip(pts[:-1], pts[1:]):
        d = q - p
        length = float(np.hypot(*d))
        t = np.clip(((points - p) @ d) / (length**2 or 1.0), 0, 1)
        near = np.hypot(*(points - (p + t[:, None] * d)).T) <= half
        if m.get("dash"):
            period, on, offset = m["dash"]
            near &= ((along + t * length + offset) % period) < on
        hit |= near
        along += length
    return hit


def hidden_arms(chart_or_scene) -> list[str]:
    """'panel i, layer: arm' for each arm drawn by a layer in a panel none of whose marks in
    that layer shows (SHOWN): its sample points lie under later marks of other arms. A line
    hidden under another arm's line is hidden even where the arm's points show."""
    scene = chart_or_scene if "marktype" in chart_or_scene else scenegraph(chart_or_scene)
    bad = []
    for i, marks in enumerate(drawn_marks(scene)):
        keyed = [m for m in marks if m["key"] is not None]
        drawn = list(dict.fromkeys((m["layer"], m["key"]) for m in keyed if m["shows"]))
        for layer, arm in drawn:
            if not any(
                _shows(m, keyed)
                for m in keyed
                if m["key"] == arm and m["layer"] == layer and m["shows"]
            ):
                bad.append(f"panel {i}, {layer}: {arm}")
    return bad


# A mark shows when at least this share of its sample points lies under no later mark of
# another arm: a stroke needs a fifth of its length (a few pixels of a line peeking out
# beside another is not a line a reader can follow), a symbol or rect two of its five points.
SHOWN = {"line": 0.2, "rule": 0.2, "symbol": 0.4, "rect": 0.4}


def _shows(m: dict, marks: list[dict]) -> bool:
    pts = _samples(m)
    if not len(pts):
        return False
    hidden = np.zeros(len(pts), dtype=bool)
    for other in marks:
        if other["key"] != m["key"] and other["covers"] and other["order"] > m["order"]:
            hidden |= _covered(pts, other)
    return (~hidden).mean() >= SHOWN[m["type"]]


def marks_outside(chart, slack: float = 1.0) -> list[str]:
    """Marks whose extent leaves the canvas: the scenegraph's coordinates are relative to the
    plot's origin, which the SVG's first group translates to."""
    svg = render_svg(chart)
    root = ET.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    first = next(n for n in root if n.tag.endswith("g"))
    ox, oy = _apply(_matrix(first.get("transform", "")), 0, 0)
    bad = []
    for p, marks in enumerate(drawn_marks(scenegraph(chart))):
        for m in marks:
            pts = m["points"] + (ox, oy)
            r = m.get("radius", 0.0)
            if m["type"] == "rect":
                x1, y1, x2, y2 = m["rect"]
                pts = np.array([(x1 + ox, y1 + oy), (x2 + ox, y2 + oy)])
            lo, hi = pts.min(axis=0) - r, pts.max(axis=0) + r
            if lo[0] < -slack or lo[1] < -slack or hi[0] > width + slack or hi[1] > height + slack:
                bad.append(
                    f"panel {p}: {m['type']} of {m['key']} spans x {lo[0]:.0f}..{hi[0]:.0f}, "
                    f"y {lo[1]:.0f}..{hi[1]:.0f} of {width:.0f}x{height:.0f}"
                )
    return bad
