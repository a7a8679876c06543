"""ONNX GRU, LSTM and RNN: their schema (from onnx's own registry), shapes, single-node models,
ONNX graphs read for their recurrent nodes, ONNX semantics over the reference
(:mod:`.semantics`, :mod:`.evaluate`), and onnxruntime as an oracle (:mod:`.onnxruntime_run`).

Importing this package does not import onnx: ``schema``, ``model``, ``graph``, ``semantics``
and ``evaluate`` do, and they are imported only where ONNX is asked for.  ``shapes`` and
``subgraphs`` are pure Python.

May import reference, ir, specs and core; never runtime (a sibling) or a layer above.
"""
