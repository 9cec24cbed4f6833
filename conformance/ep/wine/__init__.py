"""DirectML where it is not native: the genuine onnxruntime-directml DLLs in a runner of our own under Wine, D3D12
translated to Vulkan by vkd3d-proton; and DirectML's operator API (``dmlop``) everywhere, the same runner run natively
on Windows beside the installed package's DLLs.

``chain`` finds and stages the pieces (a missing one is a one-line ``ChainMissing``; on Windows a ``NativeChain``) and
chooses the runner's compiler;
``dmlrunner.c`` is the runner, built once with mingw-w64 or zig; ``protocol`` is the bytes between it and us;
``client`` starts it and speaks to it; ``session`` opens sessions in it with the in-process EPs' rules and proves their
placement; ``device`` turns its description of the adapter into a run's DirectML identity; ``doctor`` checks each link
for ``dmlconf doctor``, and ``diagnose`` says why a D3D12 device could not be created.
"""
