"""What ``irtool run --device-outputs`` (a replay) takes from the command line and what from the
file's record: the inputs the outputs were computed from (--inputs, or generated again as the
record says; checked by the record's digest either way), and the options a replay cannot honour
(refused, one line each, never ignored)."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np

from irtool.core.errors import RunError
from irtool.pipeline.recording import Recording, inputs_digest


def replay_options(options: Any, recording: Recording) -> Any:
    """The run's options for a replay: the flags a replay cannot honour refused (--config; --seed,
    --shape, --batch and --seq-length beside --inputs, which they do not make), and without --inputs
    the inputs generated as the record says (a flag given generates them otherwise: the record's
    digest then says whether they are the ones the outputs were computed from)."""
    generating = [(options.seed is not None, "--seed"), (bool(options.shapes), "--shape"),
                  *[(True, f"--{name.replace('_size', '').replace('_', '-')}") for name in options.sizes]]
    if options.config:
        raise RunError(f"--config does not apply to a replay (--device-outputs {recording.source}): it tunes how a "
                       f"device compiles the model, and a replay compiles nothing (the record says the config the "
                       f"device ran with)")
    if options.inputs is not None:
        for given, flag in generating:
            if given:
                raise RunError(f"{flag} does not apply beside --inputs {options.inputs}: it says how inputs are "
                               f"generated, and the replay takes the file's")
        return options
    generated = (recording.inputs or {}).get("generated")
    if generated is None:
        said = "its record does not say" if recording.run is not None else "no record of the run says"
        raise RunError(f"{recording.source}: {said} which inputs its outputs were computed from; give them with "
                       f"--inputs (a replay judges outputs on the inputs the device ran on: on others, right outputs "
                       f"would fail)")
    try:
        return dataclasses.replace(
            options, seed=options.seed if options.seed is not None else int(generated["seed"]),
            shapes=options.shapes or {str(k): tuple(int(d) for d in v) for k, v in generated["shapes"].items()},
            sizes=options.sizes or {str(k): int(v) for k, v in generated["sizes"].items()})
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise RunError(f"{recording.source}: its record of the inputs cannot be read ({type(error).__name__}: "
                       f"{error}); give the inputs with --inputs") from None


def check_replay_inputs(recording: Recording, inputs: Mapping[str, np.ndarray], options: Any) -> str:
    """RunError where the record's digest says the outputs were computed from other inputs; else how
    the inputs were matched with the outputs, in words."""
    recorded = (recording.inputs or {}).get("digest")
    if recorded is None:
        return "not recorded: taken as given (--inputs)"
    if inputs_digest(inputs) != recorded:
        given = f"the --inputs file {options.inputs}" if options.inputs is not None else \
            f"the inputs generated from seed {options.seed}"
        raise RunError(f"{recording.source}: its outputs were computed from other inputs than {given} (the record's "
                       f"digest of them differs); give the inputs they were computed from with --inputs")
    return "checked: the record's digest" + (f" (generated from seed {options.seed}, as recorded)"
                                             if options.inputs is None else "")


def check_consistent(judgment: Any, source: str) -> None:
    """A replay's recording whose outputs are not its own captured tensors of the same values (the
    probed copy's model outputs): RunError saying the recording is inconsistent.  Nothing was
    compiled or probed here, so it is never a probing fault, nor a verdict on the device."""
    check = judgment.probe_check
    if check is None or check.passed:
        return
    differ = ", ".join(f"{d.name} max abs {d.max_abs:.3g}" if not d.problem else f"{d.name}: {d.problem}"
                       for d in check.outputs if not d.passed)
    raise RunError(f"{source}: its outputs differ from its own captured tensors of the same values ({differ}): the "
                   f"recording is inconsistent (outputs edited, or outputs and tensors of different runs), so "
                   f"nothing in it is judged; record it again with irtool run --save-outputs")
