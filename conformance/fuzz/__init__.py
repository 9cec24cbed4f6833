"""Random valid cases on an EP until a mismatch, shrunk to a minimal case file.

Each operator's module holds its Hypothesis strategy and the feature level it draws at (its ``FuzzEntry``,
``entry``), with the drawing helpers they share in ``strategies``; ``operators`` tables them, the one module naming
every operator. ``search`` runs the draws and shrinks a mismatch; ``level`` tags a finding with the lowest feature
level that admits it. Findings go to reports/fuzz/, not to cases/found/: a person reviews one before it joins the
library that every run reads.

May import: the core, run, ep, cases.
"""
