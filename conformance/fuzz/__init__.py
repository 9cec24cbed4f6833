"""Random valid cases on an EP until a mismatch, shrunk to a minimal case file.

``strategies`` draws descriptors and data (Hypothesis); ``search`` runs them and shrinks a mismatch; ``level`` tags
a finding with the lowest feature level that admits it. Findings go to reports/fuzz/, not to cases/found/: a person
reviews one before it joins the library that every run reads.

May import: the core, run, ep, cases.
"""
