"""Everything that turns outputs into verdicts: error statistics and the tolerance policy
(:mod:`.compare`), verdict records (:mod:`.verdicts`), a recurrent node judged against the
reference on its captured inputs (:mod:`.nodes`), an ONNX node judged in ONNX semantics
(:mod:`.onnx_nodes`), a model's outputs against expected ones (:mod:`.expected`), and the known
faults of OpenVINO that a failure may match (:mod:`.known_faults`).

May import runtime (the records of a model's nodes), onnx, reference, ir, specs and core;
imported by the pipeline and the layers above it.
"""
