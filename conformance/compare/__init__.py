"""An EP's outputs against the oracle's: verdicts and pytest-regressions-style mismatch messages.

Each operator's module (with ``top_k1_view``, TOP_K1's per-sequence view) holds its ``CompareEntry`` (``entry``):
its verdict rule and its golden rule; ``operators`` tables them, the one module naming every operator; ``common``
holds what the rules share. ``outputs`` judges an EP's outputs by the case's operator's rule; ``golden`` a case's own
``expected:`` outputs against the oracle's by the same rules; ``canary`` the bytes of an output's buffer that no
element owns (out-of-bounds writes), by the buffer layout of ``reference/layout.py``.

May import: the core, reference.
"""
