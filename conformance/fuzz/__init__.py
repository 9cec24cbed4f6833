"""Random valid cases on an EP; a mismatch shrunk to a minimal case file.

May import: the core, run, ep, cases.
"""
