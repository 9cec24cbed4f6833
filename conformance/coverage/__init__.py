"""Which spec clauses each case exercises: the clause catalogue, per-operator rules, the coverage map, the quick
selection and its Markdown.

May import: the core, cases.
"""
