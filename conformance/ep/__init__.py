"""Execution providers: the one stage that imports onnx and onnxruntime, so that nothing else loads them.

``providers`` names an EP and reads what the harness knows of it from its row of the EP table (the core's ``ep_table``;
light: onnxruntime is imported by the functions that ask it); ``installed`` says whether its package or library is there
(a missing one is a usage error before anything runs); ``directml`` holds DirectML's options and feature level,
``dml_here`` where DirectML runs (in this process on Windows, else in ``wine/``, the genuine DLLs in a runner under Wine
+ vkd3d-proton); ``operators`` is the stage's operator table, each operator's ``EpEntry`` (``entry``) from its own
module, whose ``*_lowering`` module builds its ONNX form; ``graph`` and ``lower`` build the ONNX model; ``rules`` are
the session rules every session follows; ``execute``, ``sessions`` and ``pack`` run it; ``placement`` proves where each
node ran; ``errors`` says how a run failed (device lost included); ``dml_operators`` names the DML operator a model
reaches; ``device`` describes the hardware; ``memory`` says what each way of executing a case holds in memory
(cases/memory.py's estimate). ``dmlop`` is the other way to DirectML (``--ep dmlop``): ``dml_fields`` describes a DML
operator desc once, field by field, ``dml_abi`` holds DirectML.h's values and lays out its structs, ``dml_descriptor``
writes a case as its DML operator descriptor, ``dmlop`` has the runner create, compile and dispatch it; ``dxdispatch``
writes the same desc as a model of Microsoft's DxDispatch, for a failure's artifacts.

May import: the core only.
"""
