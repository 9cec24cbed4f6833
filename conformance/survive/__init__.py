"""Runs that survive their workers: cases in worker processes, a crash, hang or lost device costing only its
case; results streamed for ``--resume``.

May import: the core, run, ep, cases.
"""
