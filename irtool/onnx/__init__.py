"""ONNX GRU, LSTM and RNN: their schema (from onnx's own registry), shapes, single-node models
and validation.

Importing this package does not import onnx: ``schema``, ``model``, ``evaluate`` and
``validate`` do, and they are imported only where ONNX is asked for.  ``shapes`` is pure
Python.
"""
