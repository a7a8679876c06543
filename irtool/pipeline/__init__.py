"""The one pipeline that runs any model on an OpenVINO device and judges every recurrent node
in it; ``irtool run``, the harness's workers and ``reduce`` all go through it.

Its stages, each a module: :mod:`.prepare` (read a model, find its nodes, make the probed
copy), :mod:`.inputs` (load or generate the inputs), :mod:`.device_run` (compile and infer
with an explicit precision), :mod:`.judging` (the nodes and the model's outputs judged) and
:mod:`.run` (``irtool run`` itself, asked with :mod:`.options`); beside them single-op models are built
(:mod:`.build`, :mod:`.concrete`) and reproducers written (:mod:`.reproducer`).

May import judge, validate, onnx, runtime, reference, ir, specs and core; openvino only in :mod:`.build` (through opset factories) and through irtool.runtime.
Imported by jobs, harness, reduce and the CLI.
"""
