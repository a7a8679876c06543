"""How long `irtool validate` takes on a 10,000-layer IR, as a ratio to OpenVINO's reader.

The IR is a chain of 2,500 GRUCell-3 layers, each with its W, R and B as Consts, fed by
two Parameters (X and the initial state) and ending in one Result: 2 + 4 * 2,500 + 1 =
10,003 layers.  Each cell takes X and the previous cell's output as its state.  The
script writes it with ``ov.save_model`` (f32, no compression), checks that OpenVINO
reads it back and that irtool finds no error in it, then times, each in a fresh process:

  (a) ``python -m irtool validate FILE``
  (b) ``python -c "import openvino as ov; ov.Core().read_model(FILE)"``

in interleaved rounds (the machines have 2 cores and other work on them), and prints
both medians and the ratio a/b for the round whose medians are the best.  A first,
untimed run of each warms the page cache and lets Python write irtool's bytecode, as
any run does where PYTHONDONTWRITEBYTECODE is not set (openvino's was written when pip
installed it); timed runs keep the caller's environment.  It also runs
``irtool validate`` in a process that reports whether openvino ended up in
``sys.modules`` (it must not: only ``--with-openvino`` imports it).

    python benchmarks/bench_validate.py [--rounds 7] [--repeat 3] [--cells 2500] [--out DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HIDDEN, INPUT, BATCH = 4, 4, 1
ROOT = Path(__file__).resolve().parent.parent  # the checkout: irtool is imported from here


def build_chain(cells: int, xml_path: Path) -> int:
    """Write the GRUCell chain to ``xml_path`` (and its .bin); return its layer count."""
    import numpy as np
    import openvino as ov
    from openvino import opset1, opset3

    rng = np.random.default_rng(0)
    x = opset1.parameter([BATCH, INPUT], ov.Type.f32, name="X")
    h0 = opset1.parameter([BATCH, HIDDEN], ov.Type.f32, name="H0")
    state = h0.output(0)
    for i in range(cells):
        w = opset1.constant(rng.standard_normal((3 * HIDDEN, INPUT), dtype=np.float32), name=f"W_{i}")
        r = opset1.constant(rng.standard_normal((3 * HIDDEN, HIDDEN), dtype=np.float32), name=f"R_{i}")
        b = opset1.constant(rng.standard_normal((3 * HIDDEN,), dtype=np.float32), name=f"B_{i}")
        cell = opset3.gru_cell(x, state, w, r, b, HIDDEN, name=f"GRUCell_{i}")
        state = cell.output(0)
    result = opset1.result(state, name="Y")
    model = ov.Model([result], [x, h0], "gru_cell_chain")
    ov.save_model(model, str(xml_path), compress_to_fp16=False)
    return len(model.get_ordered_ops())


def count_layers(xml_path: Path) -> int:
    from irtool.ir import parse_ir

    return len(parse_ir(xml_path).layers)


def time_process(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def imports_openvino(xml_path: Path) -> bool:
    code = ("import sys, irtool.cli.program\n"
            f"rc = irtool.cli.program.main(['validate', {str(xml_path)!r}])\n"
            "print('openvino' in sys.modules, rc, file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT).stderr.split()
    if out[1] != "0":
        raise SystemExit(f"irtool validate found errors in the generated IR (exit {out[1]})")
    return out[0] == "True"


def main() -> int:
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2500, help="GRUCells in the chain (default 2500)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command per round (default 3)")
    parser.add_argument("--out", type=Path, default=None, help="write the IR here instead of a temp dir")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="irtool-bench-") as tmp:
        folder = args.out or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        xml_path = folder / "gru_cell_chain.xml"
        ops = build_chain(args.cells, xml_path)
        layers = count_layers(xml_path)
        size = xml_path.stat().st_size

        # OpenVINO reads it back, and irtool finds no error in it
        check = subprocess.run([sys.executable, "-c", "import sys, openvino as ov; "
                                "m = ov.Core().read_model(sys.argv[1]); print(len(m.get_ordered_ops()))",
                                str(xml_path)], capture_output=True, text=True)
        if check.returncode != 0 or int(check.stdout) != layers:
            raise SystemExit(f"openvino could not read {xml_path} back: {check.stderr.strip() or check.stdout}")
        ov_imported = imports_openvino(xml_path)

        commands = {
            "irtool validate": [sys.executable, "-m", "irtool", "validate", str(xml_path)],
            "openvino read_model": [sys.executable, "-c", "import sys, openvino as ov; ov.Core().read_model(sys.argv[1])",
                                    str(xml_path)],
        }
        writing_bytecode = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        for argv in commands.values():  # warm the page cache and the .pyc files (see the docstring)
            time_process(argv, writing_bytecode)
        rounds: list[dict[str, float]] = []
        for _ in range(args.rounds):
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(args.repeat):
                for name, argv in commands.items():
                    times[name].append(time_process(argv))
            rounds.append({name: statistics.median(values) for name, values in times.items()})

    best = {name: min(r[name] for r in rounds) for name in commands}
    ratios = [r["irtool validate"] / r["openvino read_model"] for r in rounds]
    print(f"IR: {args.cells} GRUCells, {layers} layers ({ops} ops as OpenVINO reads them), {size / 1e6:.1f} MB XML")
    print(f"rounds: {args.rounds} interleaved, {args.repeat} runs of each per round, fresh process per run")
    print(f"validate imports openvino: {'yes' if ov_imported else 'no'}")
    print()
    print(f"{'process':<24}{'best median (s)':>16}")
    for name in commands:
        print(f"{name:<24}{best[name]:>16.3f}")
    print()
    print(f"ratio validate / read_model: {best['irtool validate'] / best['openvino read_model']:.2f} "
          f"(per-round ratios: median {statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}; "
          f"target <= 1.00)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
