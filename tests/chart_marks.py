"""What a chart draws, read back from the renderer, for the chart tests.

`panels` compiles a chart with vl-convert (the renderer behind every PNG and SVG) into its
scenegraph and returns, per panel of a facet, the marks of each named layer with the values
Vega wrote into each mark's description (its encoded fields and tooltip). A layer that brought
its own data into a facet shows up as marks of other panels' rows: the bug these tests catch.

`text_outside` renders the SVG and returns every text whose extent, at a conservative glyph
width, leaves the canvas: another renderer's wider font must still fit.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import vl_convert as vlc

from figures import charts

NUMBER = re.compile(r"^-?[0-9.,]+(e-?[0-9]+)?$")
ROW = re.compile(r"__row[0-9]+$")


def _value(text: str):
    text = text.strip().replace("\u2212", "-")
    if text in ("null", "NaN", ""):
        return None
    if NUMBER.match(text):
        return float(text.replace(",", ""))
    return {"true": True, "false": False}.get(text, text)


def describe(item: dict) -> dict:
    """A mark item's description 'key: value; key: value' as a dict."""
    out = {}
    for part in (item.get("description") or "").split("; "):
        key, _, value = part.partition(": ")
        if key:
            out[key.strip()] = _value(value)
    return out


def _marks(group: dict, into: dict) -> None:
    for mark in group.get("items", []):
        if mark.get("marktype") == "group":
            if mark.get("role") == "scope" and str(mark.get("name", "")).endswith("cell"):
                continue  # a nested facet: its own panels
            for item in mark.get("items", []):
                _marks(item, into)
        elif mark.get("role") == "mark" and mark.get("name"):
            # 'curves__row1': a layer of one stacked row (charts/curves.present_panels)
            name = ROW.sub("", mark["name"].removesuffix("_marks"))
            into.setdefault(name, []).extend(describe(i) for i in mark.get("items", []))


def _cells(node: dict, out: list) -> None:
    for mark in node.get("items", []):
        if not isinstance(mark, dict):
            continue
        if mark.get("marktype") == "group" and str(mark.get("name", "")).endswith("cell"):
            for panel in mark.get("items", []):
                found: dict = {}
                _marks(panel, found)
                out.append(found)
        elif mark.get("marktype") == "group" or "items" in mark:
            _cells(mark, out)


def panels(chart) -> list[dict[str, list[dict]]]:
    """Per panel (one for a chart without facets): {layer name: [described marks]}. chart:
    an Altair chart or a Vega-Lite spec."""
    spec = chart if isinstance(chart, dict) else charts.spec_of(chart)
    scene = vlc.vegalite_to_scenegraph(spec, vl_version=charts.VL_VERSION)["scenegraph"]
    out: list = []
    _cells(scene, out)
    if not out:
        whole: dict = {}
        for item in scene.get("items", []):
            _marks(item, whole)
        out = [whole]
    return out


# -- text inside the canvas ---------------------------------------------------------------------
GLYPH = {"normal": 0.58, "bold": 0.64}  # em per character: wider than Vega's own measure


def _matrix(transform: str):
    """An SVG transform list of translate/rotate as (a, b, c, d, e, f)."""
    m = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    for op, args in re.findall(r"(translate|rotate|scale)\(([^)]*)\)", transform or ""):
        v = [float(x) for x in re.split(r"[ ,]+", args.strip()) if x]
        if op == "translate":
            t = (1, 0, 0, 1, v[0], v[1] if len(v) > 1 else 0)
        elif op == "scale":
            t = (v[0], 0, 0, v[1] if len(v) > 1 else v[0], 0, 0)
        else:
            r = math.radians(v[0])
            t = (math.cos(r), math.sin(r), -math.sin(r), math.cos(r), 0, 0)
        m = _compose(m, t)
    return m


def _compose(m, t):
    a, b, c, d, e, f = m
    a2, b2, c2, d2, e2, f2 = t
    return (
        a * a2 + c * b2,
        b * a2 + d * b2,
        a * c2 + c * d2,
        b * c2 + d * d2,
        a * e2 + c * f2 + e,
        b * e2 + d * f2 + f,
    )


def _apply(m, x, y):
    a, b, c, d, e, f = m
    return a * x + c * y + e, b * x + d * y + f


def text_outside(chart) -> list[str]:
    """Texts of the rendered SVG that would leave the canvas at a wide font."""
    spec = charts.spec_of(chart)
    root = ET.fromstring(vlc.vegalite_to_svg(spec, vl_version=charts.VL_VERSION))
    width, height = float(root.get("width")), float(root.get("height"))
    bad = []

    def walk(node, m):
        m = _compose(m, _matrix(node.get("transform", "")))
        if node.tag.endswith("text"):
            lines = [t for t in node.itertext() if t.strip()] or [""]  # tspans: one a line
            text = max(lines, key=len)
            size = float(re.sub(r"[^0-9.]", "", node.get("font-size", "10")) or 10)
            w = len(text) * size * GLYPH["bold" if node.get("font-weight") == "bold" else "normal"]
            anchor = node.get("text-anchor", "start")
            x0 = {"start": 0, "middle": -w / 2, "end": -w}[anchor]
            deep = 1.2 * size * (len(lines) - 1)
            corners = [
                _apply(m, x, y) for x in (x0, x0 + w) for y in (-0.8 * size, 0.25 * size + deep)
            ]
            xs, ys = [p[0] for p in corners], [p[1] for p in corners]
            if min(xs) < -1 or max(xs) > width + 1 or min(ys) < -1 or max(ys) > height + 1:
                bad.append(
                    f"{text!r} spans x {min(xs):.0f}..{max(xs):.0f}, y "
                    f"{min(ys):.0f}..{max(ys):.0f} of {width:.0f}x{height:.0f}"
                )
            return
        for child in node:
            walk(child, m)

    walk(root, (1.0, 0.0, 0.0, 1.0, 0.0, 0.0))
    return bad
