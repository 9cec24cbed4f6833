"""dml-conformance: DirectML operator conformance through onnxruntime.

The package is the pipeline: one subpackage per stage, each saying in its docstring what it does and what it may
import (tests/test_architecture.py enforces it). The top-level modules are the core every stage shares: ``model``
(the frozen case and verdict types), ``problems`` (one-line problems), ``dtypes`` (data types as NumPy types) and
``results`` (a ``Result`` and results.json).

May import: nothing of the stages.
"""
