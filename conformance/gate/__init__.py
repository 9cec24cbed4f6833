"""Data over results.json, without onnxruntime: the summary, known-failure waivers, run-to-run diffs, merges.

May import: the core, cases.
"""
