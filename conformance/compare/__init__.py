"""An EP's outputs against the oracle's: verdicts and pytest-regressions-style mismatch messages.

``outputs`` picks the operator's rule: ``top_k1`` (with ``top_k1_view``, its per-sequence view), ``mvn1``
(tolerances), ``slice1`` (bit for bit); ``common`` holds what they share. ``golden`` holds a case's own ``expected:``
outputs against the oracle's by the same rules; ``canary`` the bytes of an output's buffer that no element owns
(out-of-bounds writes), by the buffer layout of ``reference/layout.py``.

May import: the core, reference.
"""
