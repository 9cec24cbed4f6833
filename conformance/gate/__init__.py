"""Data over results.json, without onnxruntime: the summary, known-failure waivers, run-to-run diffs and merges.

``summary`` counts and groups results, and ``header`` gives the lines of what a run ran on and how; ``waiver_file``
reads a waiver file (known failures, their signatures, flaky cases), ``signature`` judges whether a failure fits an
entry's signature, ``waivers`` gates a run's results on the entries, and ``recorded`` keeps the file a run was gated
with in its results.json and applies it again; ``suggest`` writes entries for a run's failures and ``lint`` finds
what is wrong with a waiver file; ``verdict`` says what the gate decided and why, and groups the failures by
signature; ``diff`` compares two runs, and ``sides`` says which run each side is and how their environments differ;
``merge`` joins shards.

May import: the core, cases.
"""
