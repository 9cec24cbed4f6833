"""Case files to checked ``Case`` objects, their inputs and the oracle's outputs: everything that is the same on
every execution provider (load, parse, sweep, validate, generate, oracle, suite).

May import: the core, reference.
"""
