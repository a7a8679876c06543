"""The frameworks' own runtimes as oracles (``irtool run MODEL --compare-with tflite|tensorflow|paddle``):
each runs a model file in the format it reads, on the inputs OpenVINO got, and returns its outputs
by name for irtool.judge.expected to judge OpenVINO's against.  Each runtime is optional (an extra
of irtool's: ``pip install 'irtool[tflite]'``) and imported by its own module only, lazily:
:mod:`.tflite_run` (ai-edge-litert or tflite-runtime), :mod:`.tensorflow_run`, :mod:`.paddle_run`;
onnxruntime's is irtool.onnx.onnxruntime_run.  :mod:`.common` holds what they share.

May import core only; imported by the pipeline and the layers above it.
"""
