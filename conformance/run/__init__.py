"""One (case, EP) through the pipeline to a ``Result``, and a batch of them through packed sessions; the run's
options and identity.

May import: the core, cases, ep, compare.
"""
