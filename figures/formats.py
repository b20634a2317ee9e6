"""The chart file formats a report can write (figures/charts.py renders them), named here
without importing altair, so the command line can offer them and stay fast."""

FORMATS = ("png", "svg", "html", "vl.json")
