"""Everything that touches OpenVINO at run time: the Core, devices, reading, compiling,
inferring, finding the recurrent nodes of a model (:mod:`.nodes`), the loops and conditions
around them (:mod:`.bodies`; the iterations a Loop is known to run, :mod:`.iterations`),
probing them (:mod:`.probe`, :mod:`.captured`), sizing dims, what each node ran as, and
OpenVINO's error text.

Besides :mod:`irtool.pipeline.build` and irtool.lowering (a layer below, which recognizes the
cells a converter lowered to plain ops), this package is the only importer of openvino, and it
imports it lazily inside functions, so that importing irtool does not load it.  May import
lowering, ir, specs and core; never onnx (a sibling) or a layer above.
"""
