"""Compares the parameters two ctp_sample_trainer runs saved with --save-params
(DIR/worker<i>/<param>.npy): every worker of B against worker 0 of A. Prints
the largest relative difference per parameter and exits 1 when one exceeds
--rtol (FP32 tolerance by default).

  python3 bench/gpu/compare_params.py CPU_DIR GPU_DIR [--rtol 1e-4]
"""
import argparse
import pathlib
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("other")
    ap.add_argument("--rtol", type=float, default=1e-4)
    a = ap.parse_args()
    ref_dir = pathlib.Path(a.reference) / "worker0"
    ref = {p.stem: np.load(p) for p in sorted(ref_dir.glob("*.npy"))}
    if not ref:
        sys.exit(f"no parameters in {ref_dir}")
    workers = sorted(pathlib.Path(a.other).glob("worker*"))
    if not workers:
        sys.exit(f"no worker directories in {a.other}")
    worst = 0.0
    for w in workers:
        for name, want in ref.items():
            got = np.load(w / f"{name}.npy")
            if got.shape != want.shape:
                sys.exit(f"{w.name}/{name}: shape {got.shape}, reference {want.shape}")
            rel = float(np.max(np.abs(got.astype(np.float64) - want) /
                               np.maximum(1e-3, np.abs(want.astype(np.float64)))))
            worst = max(worst, rel)
            print(f"  {w.name} {name:12s} {str(want.shape):14s} max rel diff {rel:.3e}")
    verdict = "OK" if worst <= a.rtol else "EXCEEDS"
    print(f"{a.other} vs {a.reference}: {len(workers)} worker(s), {len(ref)} parameters, "
          f"largest relative difference {worst:.3e} (tolerance {a.rtol:g}): {verdict}")
    sys.exit(0 if worst <= a.rtol else 1)


if __name__ == "__main__":
    main()
