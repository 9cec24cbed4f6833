"""dml-conformance: DirectML operator conformance through onnxruntime.

The package is the pipeline: one subpackage per stage, each saying in its docstring what it does and what it may
import (tests/test_architecture.py enforces it). The top-level modules are the core every stage shares: ``model``
(the frozen case and verdict types), ``layout`` (a tensor's buffer layout, which a case carries), ``data_type``
(``DataType``), ``problems`` (one-line problems), ``dtypes`` (data types as NumPy types), ``results`` (a ``Result``
and results.json) and the others docs/architecture.md lists. The core imports no stage; ``reference`` (the oracle's
arithmetic, which ``layout`` applies) and itself only.

May import: nothing of the stages.
"""
