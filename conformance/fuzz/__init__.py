"""Random valid cases on an EP until a mismatch, shrunk to a minimal case file.

``strategies`` draws descriptors and data (Hypothesis); ``search`` runs them and shrinks a mismatch.

May import: the core, run, ep, cases.
"""
