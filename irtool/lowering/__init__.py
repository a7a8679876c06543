"""Recurrent cells that a converter lowered to plain ops (MatMul, Add, Sigmoid, Tanh, Multiply
chains), recognized by their dataflow in an OpenVINO graph: one module per pattern a converter
writes (:mod:`.lstm`, :mod:`.gru`, :mod:`.rnn`; :mod:`.folded_states`, the first step of an
unrolled recurrence whose zero states a converter folded away), the gate pre-activations read as
sums of products by constant weights (:mod:`.gate_sums`), the records and what every pattern
shares (:mod:`.cells`), one graph's cells with their input told from their state
(:mod:`.recognize`), and the steps of an unrolled recurrence linked into a chain (:mod:`.chains`);
the small graph reads they rest on (:mod:`.graph`) are the runtime's too.

Why a package of its own, below runtime: recognition reads graphs and needs no device, no Core
and nothing of runtime's; runtime (its bodies, its probed copy, irtool.runtime.lowered_nodes)
turns what it recognizes into nodes to judge.  Reading a graph needs openvino's graph objects
(and Node.evaluate for constants), so this package is, with runtime and pipeline/build.py, an
importer of openvino (tests/test_layers.py, OPENVINO_IMPORTERS), lazily inside functions as the
runtime does.  May import core; never specs, ir, runtime or a layer above.
"""
