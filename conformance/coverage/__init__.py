"""Which spec clauses each case exercises: the clause map and the quick selection.

``clauses`` reads the catalogue in ``reference/clauses/``; each operator's module reads that operator's facets off a
case and names its catalogue (its ``CoverageEntry``, ``entry``), ``operators`` tables them, the one module naming
every operator; ``facts`` holds their shared terms, ``layouts`` the tensors' layouts; ``mapping`` builds the map
and the quick selection; ``markdown`` renders the map.

May import: the core, cases.
"""
