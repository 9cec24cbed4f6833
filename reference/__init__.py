"""The oracle: the three spec pages written as NumPy code (and nothing else: no onnx, onnxruntime or conformance).

One small module per operator, like ``onnx.reference.ops``; the public functions are re-exported here.
"""

from .activations import ACTIVATION_PARAMS, activation_params, apply_activation
from .mean_variance_normalization1 import mean_variance_normalization1
from .slice1 import slice1
from .top_k1 import top_k1

__all__ = [
    "ACTIVATION_PARAMS",
    "activation_params",
    "apply_activation",
    "mean_variance_normalization1",
    "slice1",
    "top_k1",
]
