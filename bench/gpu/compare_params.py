"""Compares the parameters two ctp_sample_trainer runs saved with --save-params
(DIR/worker<i>/<param>.npy): every worker of B against worker 0 of A. Prints
the largest difference per parameter relative to that parameter's largest
magnitude, and exits 1 when one exceeds --rtol (1e-4 by default).

  python3 bench/gpu/compare_params.py CPU_DIR GPU_DIR [--rtol 1e-4]
"""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import npy_lite  # noqa: E402  (no numpy needed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("other")
    ap.add_argument("--rtol", type=float, default=1e-4)
    a = ap.parse_args()
    ref_dir = pathlib.Path(a.reference) / "worker0"
    ref = {p.stem: npy_lite.load(p) for p in sorted(ref_dir.glob("*.npy"))}
    if not ref:
        sys.exit(f"no parameters in {ref_dir}")
    workers = sorted(pathlib.Path(a.other).glob("worker*"))
    if not workers:
        sys.exit(f"no worker directories in {a.other}")
    worst = 0.0
    for w in workers:
        for name, (want_shape, want) in ref.items():
            got_shape, got = npy_lite.load(w / f"{name}.npy")
            if got_shape != want_shape:
                sys.exit(f"{w.name}/{name}: shape {got_shape}, reference {want_shape}")
            # Relative to the parameter's scale: elementwise ratios are
            # ill-conditioned for Adam (a near-zero gradient's update flips
            # with the last bit of the reduction order).
            scale = max((abs(r) for r in want), default=0.0) or 1e-6
            rel = max((abs(g - r) for g, r in zip(got, want)), default=0.0) / scale
            worst = max(worst, rel)
            print(f"  {w.name} {name:12s} {str(want_shape):14s} max diff / scale {rel:.3e}")
    verdict = "OK" if worst <= a.rtol else "EXCEEDS"
    print(f"{a.other} vs {a.reference}: {len(workers)} worker(s), {len(ref)} parameters, "
          f"largest relative difference {worst:.3e} (tolerance {a.rtol:g}): {verdict}")
    sys.exit(0 if worst <= a.rtol else 1)


if __name__ == "__main__":
    main()
