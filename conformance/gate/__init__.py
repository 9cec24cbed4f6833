"""Data over results.json, without onnxruntime: the summary, known-failure waivers, run-to-run diffs and merges.

``summary`` counts and groups results, and ``header`` gives the lines of what a run ran on and how; ``waivers`` reads
known failures and gates on the rest; ``verdict`` says what the gate decided and why, and groups the failures by
signature; ``diff`` compares two runs, and ``sides`` says which run each side is and how their environments differ;
``merge`` joins shards.

May import: the core, cases.
"""
