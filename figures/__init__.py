"""Results table -> metrics -> Altair charts -> report, from run directories alone.

Never imports a trainer (mlx, torch, qkmlx, qktorch): the report can be regenerated on any
machine that has the run directories. Importing the package loads nothing heavy; altair is
imported by the modules that draw (charts, report).
"""
