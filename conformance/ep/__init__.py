"""Execution providers: the one place that imports onnx and onnxruntime (lowering to ONNX, sessions, placement
proof, DirectML's options and feature level, the device).

May import: the core only.
"""
