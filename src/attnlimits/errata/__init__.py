"""Numerical evidence for each discrepancy in the papers (see ``docs/errata.md``).

One module per discrepancy, each with a ``main() -> None`` that prints the evidence.
Run one with ``python -m attnlimits.errata NAME``; ``python -m attnlimits.errata`` lists them.
"""
