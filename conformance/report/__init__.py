"""Formats only: console, Markdown, HTML (with its SVG), JUnit and the diff view, rendered from the gate's data.

May import: the core, gate.
"""
