"""The pytest plugin: case files as pytest items, verdicts as outcomes; cheap to import (onnxruntime loads with
the first case).

May import: anything; nothing imports it.
"""
