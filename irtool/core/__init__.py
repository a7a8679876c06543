"""The basics every layer uses: errors, bounded reads and safe writes of files, number and
shape syntax, printed text, bounded JSON/TOML documents, element types, memory estimates,
.npz files, device names, diagnostics, the precisions' names, model formats and the files a
model reads beside itself.

May import nothing of irtool but :mod:`irtool` itself (its version); every other package
imports it.  Nothing here imports openvino, onnx or lxml.
"""
