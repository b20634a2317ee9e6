"""The report's assembly: report.md's sections (the opening, what ran, the tables, the
re-judged comparison, the budget and interventions sections), put together with the charts
by assemble.make_report, and the report's own data (archive). Imports nothing here, so the
command line stays fast."""
