"""Summarises part (s) of bench/gpu/device_run.sh: the sync overhead each ctp
mode and each PyTorch DDP variant adds to the same step without
communication, and issue 5's target for (b) (ctp's overhead at most a
quarter of DDP's).

  python3 bench/gpu/step_sync_summary.py OUT_DIR

Reads OUT_DIR/ctp_step_sync.csv ("ctp,GPUS,LABEL,MS"),
OUT_DIR/torch_step_sync.csv ("torch,GPUS,BATCH,AMP,MS,VARIANT") and, when
present, OUT_DIR/torch_real_step.csv ("torch_real,MODEL,GPUS,VARIANT,MS").
A baseline measured more than once (no_sync, no_sync_again) is averaged and
its spread printed: overheads smaller than the spread are noise.
"""
import collections
import csv
import os
import sys


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in csv.reader(f) if r]


def mean(values):
    return sum(values) / len(values)


def baseline(samples, what):
    if not samples:
        print(f"  {what}: not measured")
        return None
    m = mean(samples)
    spread = max(samples) - min(samples)
    print(f"  {what}: {', '.join(f'{v:.3f}' for v in samples)} ms "
          f"(mean {m:.3f}, spread {spread:.3f})")
    return m


def main():
    out = sys.argv[1]
    ctp = collections.defaultdict(list)
    for r in rows(os.path.join(out, "ctp_step_sync.csv")):
        ctp[r[2]].append(float(r[3]))
    torch = collections.defaultdict(list)
    for r in rows(os.path.join(out, "torch_step_sync.csv")):
        torch[r[5]].append(float(r[4]))

    print("ctp (ms per step; overhead over the same workers without communication):")
    ctp_base = baseline(ctp.pop("no_sync", []) + ctp.pop("no_sync_again", []), "no communication")
    unbatched = ctp.pop("no_sync_unbatched", [])
    if unbatched and ctp_base is not None:
        ms = mean(unbatched)
        print(f"  no communication, every op launched alone (--no-op-batching): {ms:.3f} ms "
              f"-> op batching saves {ms - ctp_base:.3f} ms a step")
    print("PyTorch on the same model:")
    torch_base = baseline(torch.pop("no DDP", []) + torch.pop("single GPU", []), "no DDP")
    ddp = {v: mean(s) for v, s in torch.items()}
    for variant, ms in sorted(ddp.items()):
        extra = f" -> overhead {ms - torch_base:+.3f} ms" if torch_base is not None else ""
        print(f"  {variant}: {ms:.3f} ms{extra}")
    ddp_overhead = ddp["DDP"] - torch_base if "DDP" in ddp and torch_base is not None else None
    print("ctp modes:")
    for label, samples in sorted(ctp.items()):
        ms = mean(samples)
        if ctp_base is None:
            print(f"  {label}: {ms:.3f} ms")
            continue
        overhead = ms - ctp_base
        verdict = ""
        if ddp_overhead is not None and ddp_overhead > 0:
            ratio = overhead / ddp_overhead
            verdict = (f", {ratio:.2f} of DDP's {ddp_overhead:.3f} ms: target (<= 0.25) "
                       f"{'holds' if ratio <= 0.25 else 'missed'}")
        print(f"  {label}: {ms:.3f} ms -> overhead {overhead:+.3f} ms{verdict}")

    real = collections.defaultdict(dict)
    for r in rows(os.path.join(out, "torch_real_step.csv")):
        real[r[1]][r[3]] = float(r[4])
    if real:
        print("PyTorch, the real models (the issue's reference points):")
        for model, by_variant in sorted(real.items()):
            base = by_variant.get("no DDP", by_variant.get("single GPU"))
            line = ", ".join(f"{v} {ms:.3f} ms" for v, ms in sorted(by_variant.items()))
            if base is not None and "DDP" in by_variant:
                line += f" -> DDP overhead {by_variant['DDP'] - base:+.3f} ms"
            print(f"  {model}: {line}")


if __name__ == "__main__":
    main()
