"""An EP's outputs against the oracle's: verdicts and pytest-regressions-style mismatch messages, one module per
operator.

May import: the core only.
"""
