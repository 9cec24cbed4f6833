"""dml-conformance: DirectML operator conformance through onnxruntime."""
