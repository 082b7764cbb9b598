"""Summarises part (s) of bench/gpu/device_run.sh (bench/gpu/step_sync_run.sh):
for each real model, the sync overhead each ctp mode and PyTorch's DDP add to
the same step without communication, and their ratio (issue 5's target for
ctp: at most a quarter of DDP's).

  python3 bench/gpu/step_sync_summary.py OUT_DIR

Reads OUT_DIR/ctp_real_step.csv ("ctp,MODEL,GPUS,LABEL,MS") and
OUT_DIR/torch_real_step.csv ("torch_real,MODEL,GPUS,VARIANT,MS"). A
baseline measured more than once (no_sync and no_sync_again; PyTorch's
"no DDP" or "single GPU" runs) is averaged and its spread printed:
overheads smaller than the spread are noise.
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
        print(f"    {what}: not measured")
        return None
    m = mean(samples)
    spread = max(samples) - min(samples)
    print(f"    {what}: {', '.join(f'{v:.3f}' for v in samples)} ms "
          f"(mean {m:.3f}, spread {spread:.3f})")
    return m


def summarise(model, ctp, torch):
    print(f"{model}:")
    print("  PyTorch (ms per step):")
    torch_base = baseline(torch.pop("no DDP", []) + torch.pop("single GPU", []),
                          "no communication")
    ddp_overhead = None
    for variant, samples in sorted(torch.items()):
        ms = mean(samples)
        extra = ""
        if torch_base is not None:
            extra = f" -> overhead {ms - torch_base:+.3f} ms"
            if variant == "DDP":
                ddp_overhead = ms - torch_base
        print(f"    {variant}: {ms:.3f} ms{extra}")
    print("  ctp (ms per step, the slowest worker):")
    ctp_base = baseline(ctp.pop("no_sync", []) + ctp.pop("no_sync_again", []),
                        "no communication")
    for label, samples in sorted(ctp.items()):
        ms = mean(samples)
        if ctp_base is None:
            print(f"    {label}: {ms:.3f} ms")
            continue
        overhead = ms - ctp_base
        verdict = ""
        if ddp_overhead is not None and ddp_overhead > 0:
            ratio = overhead / ddp_overhead
            verdict = (f", {ratio:.2f} of DDP's {ddp_overhead:.3f} ms: target (<= 0.25) "
                       f"{'holds' if ratio <= 0.25 else 'missed'}")
        print(f"    {label}: {ms:.3f} ms -> overhead {overhead:+.3f} ms{verdict}")


def main():
    out = sys.argv[1]
    ctp = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows(os.path.join(out, "ctp_real_step.csv")):
        ctp[r[1]][r[3]].append(float(r[4]))
    torch = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows(os.path.join(out, "torch_real_step.csv")):
        torch[r[1]][r[3]].append(float(r[4]))
    models = sorted(set(ctp) | set(torch))
    if not models:
        print("no measurements in " + out)
    for model in models:
        summarise(model, ctp[model], torch[model])


if __name__ == "__main__":
    main()
