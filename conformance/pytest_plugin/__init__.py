"""The pytest plugin: case files as pytest items, verdicts as outcomes; importing it loads no onnxruntime.

``plugin`` collects and runs cases through ``survive/pool.py``, as the CLI does; ``xdist`` is what ``pytest -n``
needs.

May import: anything; nothing imports it.
"""
