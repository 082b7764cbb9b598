"""PyTorch's side of benchmark (c): the sample trainer's MLP trained with
DistributedDataParallel, timed as ctp_sample_trainer times its steps.

Same model (Linear + ReLU per hidden layer, a Linear to the classes, mean
softmax cross entropy, plain SGD), FP32 with TF32 off (ctp's cuBLAS GEMMs are
true FP32) or --amp bf16/fp16 (torch.autocast, as ctp's --amp), data set of
Gaussian clusters in page-locked host memory (as ctp's), and every step does
what a ctp step does: copy this worker's shard of the batch from host memory
to the GPU, forward, backward (DDP's bucketed all-reduce overlapped with it),
the optimizer step, and read the loss back to the host. Time per step = wall
time of steps 2..N over N-1, as ctp_sample_trainer prints it.

  torchrun --standalone --nproc_per_node 2 bench/gpu/torch_mlp_ddp.py \
      --dim 1024 --hidden 4096,4096 --classes 16 --batch 8192 --steps 30
  python3 bench/gpu/torch_mlp_ddp.py ...      (one GPU, no DDP)

--batch is the global batch, split over the workers, as in ctp_sample_trainer.
For the sync overhead of benchmark (b), --no-ddp runs the same workers without
DDP (each trains alone: the step without communication, on as many GPUs at
once), and --ddp-hook bf16 all-reduces DDP's buckets in bf16 (PyTorch's
bf16_compress_hook), as many bytes as ctp's --amp bf16 gradients.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--hidden", default="4096,4096")
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--batch", type=int, default=8192, help="global batch")
    ap.add_argument("--samples", type=int, default=16384)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--csv", default="")
    ap.add_argument("--amp", choices=["none", "bf16", "fp16"], default="none",
                    help="torch.autocast to this dtype (fp16 with a GradScaler), as ctp's --amp")
    ap.add_argument("--no-ddp", action="store_true",
                    help="with several workers, train each alone (no DDP, no communication)")
    ap.add_argument("--ddp-hook", choices=["none", "bf16", "fp16"], default="none",
                    help="DDP communication hook: all-reduce the buckets in this dtype")
    ap.add_argument("--profile", action="store_true",
                    help="after timing, profile 5 more steps (torch.profiler) and print the "
                         "kernels' GPU time per step, for comparing with ctp's --profile")
    a = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    if world > 1:
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    if a.batch % world:
        raise SystemExit(f"batch {a.batch} does not split over {world} workers")
    per_worker = a.batch // world

    gen = torch.Generator().manual_seed(7)
    centres = torch.randn(a.classes, a.dim, generator=gen) * 2.0
    labels = torch.randint(0, a.classes, (a.samples,), generator=gen)
    features = centres[labels] + torch.randn(a.samples, a.dim, generator=gen)
    # Page-locked, as ctp's trainer keeps its data set (and as DataLoader's
    # pin_memory=True does): batches upload at the copy engines' speed.
    features, labels = features.pin_memory(), labels.pin_memory()

    widths = [a.dim] + [int(w) for w in a.hidden.split(",")]
    layers = []
    for i in range(len(widths) - 1):
        layers += [nn.Linear(widths[i], widths[i + 1]), nn.ReLU()]
    layers.append(nn.Linear(widths[-1], a.classes))
    torch.manual_seed(1)
    model = nn.Sequential(*layers).cuda()
    ddp = world > 1 and not a.no_ddp
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
        if a.ddp_hook != "none":
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            hook = {"bf16": default_hooks.bf16_compress_hook,
                    "fp16": default_hooks.fp16_compress_hook}[a.ddp_hook]
            model.register_comm_hook(None, hook)
    variant = ("DDP" + ("" if a.ddp_hook == "none" else f" {a.ddp_hook} hook") if ddp
               else "no DDP" if world > 1 else "single GPU")
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    loss_fn = nn.CrossEntropyLoss()
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.amp)
    scaler = torch.amp.GradScaler("cuda", enabled=a.amp == "fp16")

    def step(s):
        start = (s * a.batch + rank * per_worker) % (a.samples - per_worker + 1)
        x = features[start:start + per_worker].cuda(non_blocking=True)
        y = labels[start:start + per_worker].cuda(non_blocking=True)
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.item()

    step(0)
    if world > 1:
        dist.barrier()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for s in range(1, a.steps):
        loss = step(s)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1000.0 / (a.steps - 1)
    if rank == 0:
        widths_text = a.hidden.replace(',', '-') if len(a.hidden) < 60 else \
            f"({len(widths) - 1} hidden layers, {sum(p.numel() for p in model.parameters())} params)"
        print(f"torch {variant}: {world} GPU(s), MLP {a.dim}-{widths_text}-{a.classes}, global batch {a.batch} "
              f"({per_worker} per GPU), amp {a.amp}: {ms:.3f} ms per step after the first "
              f"({a.steps - 1} steps), last loss {loss:.4f}", flush=True)
        if a.csv:
            with open(a.csv, "a") as f:
                f.write(f"torch,{world},{a.batch},{a.amp},{ms:.4f},{variant}\n")
    if a.profile and rank == 0:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for s in range(5):
                step(a.steps + s)
            torch.cuda.synchronize()
        # Kernels and copies are the events on the device; CPU ops only
        # launch them (their device time would count the kernels twice).
        kernels = [e for e in prof.key_averages() if str(e.device_type).endswith("CUDA")]
        kernels.sort(key=lambda e: -e.device_time_total)
        total = sum(e.device_time_total for e in kernels)
        print(f"torch profile: 5 steps; GPU kernel and copy time per step {total / 5000:.3f} ms",
              flush=True)
        for e in kernels[:15]:
            print(f"  {e.device_time_total / 5000:9.3f} ms  x{e.count // 5:<3d} {e.key[:90]}")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
