"""Whose a failure is: each failing (case, EP) of a DirectML path executed again on a ladder of references.

``ladder`` says which re-runs a failing result gets (the reference adapter, the other path, DirectML's flags, the
previous DirectML build, the CPU EP, the goldens), ``decide`` turns their verdicts into one of conformance/whose.py's
verdicts, and ``rerun`` runs them and writes the record into the results (``dmlconf run --triage``,
``dmlconf triage RESULTS.json``). docs/triage.md is the reader's account.

May import: cases, compare, ep, run.
"""
