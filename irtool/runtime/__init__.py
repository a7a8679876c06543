"""Everything that touches OpenVINO at run time: the Core, devices, reading, compiling,
inferring, finding and probing the recurrent nodes of a model, and OpenVINO's error text.

Besides :mod:`irtool.build`, this package is the only importer of openvino, and it imports
it lazily inside functions, so that importing irtool does not load it.
"""
