"""Formats only, rendered from the gate's data: console, Markdown, HTML, JUnit and the diff view.

``console``, ``markdown`` (summary.md), ``html`` (with ``svg``'s plots), ``junit`` and ``diff``; ``text`` makes
case-provided text safe in each and builds the Markdown tables.

May import: the core, gate.
"""
