"""Which spec clauses each case exercises: the clause map and the quick selection.

``clauses`` reads the catalogue in ``reference/clauses/``; ``top_k1``, ``mvn1`` and ``slice1`` read each operator's
facets off a case (``facts`` holds their shared terms), ``layouts`` the tensors' layouts; ``mapping`` builds the map
and the quick selection; ``markdown`` renders the map.

May import: the core, cases.
"""
