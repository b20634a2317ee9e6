"""A chart's export: its Vega-Lite spec, and the spec rendered as PNG, SVG, HTML (sharing one
vega.js per report directory) or JSON, each file written atomically."""

from __future__ import annotations

import json
import re
from pathlib import Path

import altair as alt
import vl_convert as vlc

from figures.charts.style import VL_VERSION
from figures.formats import FORMATS
from sweeps.core.files import write_atomic

# The HTML charts share one copy of Vega, Vega-Lite and vega-embed (vega.js, about 0.9 MB,
# written once per report directory) instead of inlining it in every page.
VEGA_JS = "vega.js"
PNG_SCALE = 1  # the report directory stays light (issue 18: smoke under 2 MB)
HTML = """<!DOCTYPE html>
<html>
<head>
<meta charset="UTF-8">
<title>{title}</title>
<script src="{script}"></script>
</head>
<body>
<div id="chart"></div>
<script>
vegaEmbed("#chart", {spec}, {{"renderer": "svg"}}).catch(console.error);
</script>
</body>
</html>
"""


def html(spec: dict, title: str) -> str:
    """A page that draws the spec with the report directory's one copy of the libraries (it
    opens offline: the script is a file beside it)."""
    return HTML.format(
        title=title, script=VEGA_JS, spec=json.dumps(spec, sort_keys=True, separators=(",", ":"))
    )


def write_vega_js(out_dir: Path) -> Path:
    path = Path(out_dir) / VEGA_JS
    write_atomic(path, vlc.javascript_bundle(vl_version=VL_VERSION))
    return path


# The ids Vega's SVG renderer numbers from one counter per process (a gradient legend's
# `gradient_2`, a clip path's `clip7`): what rendered before in the process, another chart or
# a PNG, would change a chart's bytes.
SVG_IDS = re.compile(r'id="((?:gradient_|clip)\d+)"')


def stable_ids(svg: str) -> str:
    """The SVG with its numbered ids (SVG_IDS) renumbered from 0 in order of appearance, per
    kind, and each reference to them: a chart's bytes depend on the chart alone."""
    new: dict[str, str] = {}
    counts: dict[str, int] = {}
    for old in dict.fromkeys(SVG_IDS.findall(svg)):
        prefix = re.match(r"[a-z_]+", old).group(0)
        new[old] = f"{prefix}{counts.get(prefix, 0)}"
        counts[prefix] = counts.get(prefix, 0) + 1
    if all(old == name for old, name in new.items()):
        return svg
    return re.sub(
        r'(id="|url\(#)((?:gradient_|clip)\d+)(?=[")])',
        lambda m: m.group(1) + new.get(m.group(2), m.group(2)),
        svg,
    )


# Each format from the one validated spec (altair's own save would rebuild it per format).
RENDERERS = {
    "png": lambda spec, name: vlc.vegalite_to_png(spec, vl_version=VL_VERSION, scale=PNG_SCALE),
    "svg": lambda spec, name: stable_ids(vlc.vegalite_to_svg(spec, vl_version=VL_VERSION)),
    "html": lambda spec, name: html(spec, name),
    "vl.json": lambda spec, name: json.dumps(spec, sort_keys=True, separators=(",", ":")) + "\n",
}


def spec_of(chart: alt.TopLevelMixin) -> dict:
    with alt.data_transformers.disable_max_rows():  # bins and eval steps bound the size
        return chart.to_dict()


def save(chart: alt.TopLevelMixin, out_dir: Path, name: str, formats=FORMATS) -> list[Path]:
    """name.<format> for each of the formats (and vega.js for HTML); returns the paths."""
    spec = spec_of(chart)
    paths = [out_dir / f"{name}.{ext}" for ext in formats]
    for path, ext in zip(paths, formats):
        write_atomic(path, RENDERERS[ext](spec, name))
    if "html" in formats and not (Path(out_dir) / VEGA_JS).exists():
        write_vega_js(out_dir)
    return paths
