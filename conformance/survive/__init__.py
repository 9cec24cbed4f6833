"""Runs that survive their workers: a crash, hang or lost device costs only its case, and a killed run resumes.

``pool`` is the one entry point that runs cases (``run_pairs``, for the CLI and the pytest plugin); ``supervisor``
and ``worker`` run them in spawned processes, started through ``interrupt`` (Ctrl-C is the supervisor's alone), and
talk in ``messages``' frozen dataclasses; ``workers`` is the supervisor's view of each worker (its task, its state,
its stderr);
``faults`` words a CRASH, TIMEOUT or DEVICE_LOST and keeps a run's log of its EPs (a device lost without a word, the
DirectML runner's deaths); ``stream`` writes results.jsonl for ``--resume``; ``lock`` keeps a report folder to one
run at a time; ``again`` runs a run's failures again (``--rerun-failures``) as the run ran its cases.

May import: the core, run, ep, cases.
"""
