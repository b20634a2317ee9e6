"""The report's words: numbers and the typed analysis's decisions as sentences (the
verdicts, the practitioner's rule, the interventions' verdicts, the caveats, the ladders'
lines), worded from one table per hypothesis (hypotheses.py); nothing here decides."""
