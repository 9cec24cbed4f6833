"""The oracle: the spec pages written as NumPy code (and nothing else: no onnx, onnxruntime or conformance).

One small module per operator, like ``onnx.reference.ops``, each imported from its own module (``reference.top_k1``),
so that this package names no operator; the fused activations, which any operator may share, are re-exported here.
"""

from .activations import ACTIVATION_PARAMS, activation_params, apply_activation

__all__ = [
    "ACTIVATION_PARAMS",
    "activation_params",
    "apply_activation",
]
