"""`irtool validate` on hostile shapes of input, as a ratio to validate on an ordinary file of the
same size: the work must grow with the bytes, not with their square.

Two cases, each beside its peer (a GRUCell chain as bench_validate.py writes it, as many
cells as make the same size), timed in fresh processes in interleaved rounds:

  attributes: a chain with 100,000 attributes on one <data> element, about 1 MB (all
              unknown: ten IR021 findings name one each, one more the rest);
  findings:   a chain of 3,000 cells written on one line, each cell's <data> with 10 unknown
              attributes: 30,000 findings on one 5.5 MB line.

Both were quadratic (lxml's ``.items()`` walks the attributes from the first for each value;
``IRModel.locate`` searched and decoded the line from its start for each finding); the
target is within 2x of the peer.

    python benchmarks/bench_validate_linear.py [--rounds 5] [--repeat 2]
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_validate import build_chain  # noqa: E402  (the same chain as the 10,000-layer benchmark)


def with_attributes(text: str, count: int) -> str:
    """The first GRUCell's <data> with ``count`` more attributes (a0="1" a1="1" ...)."""
    extra = " ".join(f'a{i}="1"' for i in range(count))
    return re.sub(r'(<layer [^>]*type="GRUCell"[^>]*>\s*<data )', lambda m: m.group(1) + extra + " ", text, count=1)


def one_line_with_findings(text: str, per_layer: int) -> str:
    """The whole file on one line, each GRUCell's <data> with ``per_layer`` unknown attributes."""
    extra = " ".join(f'x{i}="1"' for i in range(per_layer))
    text = re.sub(r'(type="GRUCell"[^>]*>\s*<data )', lambda m: m.group(1) + extra + " ", text)
    return re.sub(r">\s+<", "><", text).replace("\n", " ")


def chain_of_size(folder: Path, name: str, size: int) -> Path:
    """An ordinary chain (no finding) of about ``size`` bytes."""
    probe = folder / "probe.xml"
    build_chain(100, probe)
    cells = max(1, round(100 * size / probe.stat().st_size))
    path = folder / name
    build_chain(cells, path)
    return path


def run(path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "irtool", "validate", str(path)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1) or done.stderr:
        raise SystemExit(f"validate {path} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed, done.returncode


def findings(path: Path) -> int:
    from irtool.validate import validate_file

    return len(validate_file(path).diagnostics)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each file per round (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="irtool-bench-") as tmp:
        folder = Path(tmp)
        small = folder / "small.xml"
        build_chain(50, small)
        attributes = folder / "attributes.xml"
        attributes.write_text(with_attributes(small.read_text(), 100_000))
        (folder / "attributes.bin").write_bytes(small.with_suffix(".bin").read_bytes())
        big = folder / "big.xml"
        build_chain(3000, big)
        one_line = folder / "one_line.xml"
        one_line.write_text(one_line_with_findings(big.read_text(), 10))
        (folder / "one_line.bin").write_bytes(big.with_suffix(".bin").read_bytes())
        cases = {"attributes": (attributes, chain_of_size(folder, "peer_a.xml", attributes.stat().st_size)),
                 "findings": (one_line, chain_of_size(folder, "peer_f.xml", one_line.stat().st_size))}
        files = [p for pair in cases.values() for p in pair]
        for path in files:  # warm the page cache and the .pyc files
            run(path)
        rounds = []
        for _ in range(args.rounds):
            times: dict[Path, list[float]] = {p: [] for p in files}
            for _ in range(args.repeat):
                for path in files:
                    times[path].append(run(path)[0])
            rounds.append({p: statistics.median(v) for p, v in times.items()})
        best = {p: min(r[p] for r in rounds) for p in files}
        print(f"rounds: {args.rounds} interleaved, {args.repeat} runs of each file per round, fresh process per run")
        print()
        print(f"{'case':<12}{'file':<44}{'MB':>6}{'lines':>8}{'findings':>10}{'best median (s)':>17}")
        for name, (hostile, peer) in cases.items():
            for label, path in ((f"{name}", hostile), ("  its peer", peer)):
                data = path.read_bytes()
                lines = data.count(b"\n") + 1
                print(f"{label:<12}{path.name:<44}{len(data) / 1e6:>6.2f}{lines:>8}"
                      f"{findings(path):>10}{best[path]:>17.3f}")
        print()
        for name, (hostile, peer) in cases.items():
            ratios = [r[hostile] / r[peer] for r in rounds]
            print(f"{name}: ratio to its peer {best[hostile] / best[peer]:.2f} (per-round median "
                  f"{statistics.median(ratios):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}; target <= 2.00)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
