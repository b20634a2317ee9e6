"""Results table -> metrics -> Altair charts -> report, from run directories alone.

Never imports a trainer (mlx, torch, qkmlx, qktorch): the report can be regenerated on any
machine that has the run directories.
"""
from figures.report import make_report

__all__ = ["make_report"]
