"""The chart file formats a report can write (the package figures/charts/ renders them), named
here without importing altair, so the command line can offer them and stay fast."""

FORMATS = ("png", "svg", "html", "vl.json")
# What a report writes unless asked: each HTML page already holds its Vega-Lite spec, so the
# separate spec file is opt-in (the smoke report stays under 2 MB).
DEFAULT_FORMATS = ("png", "svg", "html")
