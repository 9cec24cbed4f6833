"""One (case, EP) through the pipeline to a ``Result``, and a batch of them through packed sessions.

``options`` holds what a run is run under (``RunOptions``), the options that set it and its one builder;
``command_line`` is an option's row, rendered for ``dmlconf`` and pytest and checked alike; ``runner`` prepares,
executes and judges one case through ``execution_path``'s interface, on the path ``paths`` gives its EP (the EP
table's ``PathKind``): ``onnxruntime_path`` (an ONNX model in an onnxruntime session) or ``operator_api`` (DirectML's
operator API on ``--ep dmlop``: layouts, canary, DirectML's answer to a negative case); ``batch`` packs small cases
of onnxruntime's path into shared sessions and runs each group --repeat times; ``repeat`` makes a case's runs one
result (FLAKY where they differ); ``modes`` adds each EP's execution modes (--modes) and holds their outputs
bit-equal; ``artifacts`` keeps a FAIL's files, among them the case as a model of Microsoft's DxDispatch
(ep/dxdispatch.py); ``identity`` records what was tested with what.
May import: the core, cases, ep, compare.
"""
