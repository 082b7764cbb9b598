"""One step's gradient synchronisation in PyTorch for the shapes written by
model_grad_shapes.py, the peer of bench/gpu_grad_sync_bench.cc (same timing:
3 warm-up steps, a barrier, then the wall time of 20 back-to-back steps ended
by a device sync, over 20). FP32 gradients.

  flat:    one all_reduce of every gradient in one flat buffer
  buckets: DDP's bucketing (reverse registration order, first bucket 1 MiB,
           then 25 MiB), one all_reduce per pre-flattened bucket: the
           communication DDP issues, without its copies into the buckets

    torchrun --nproc_per_node 2 bench/gpu/torch_grad_sync.py SHAPES [--csv FILE]
"""
import argparse
import os
import time

import torch
import torch.distributed as dist


def read_shapes(path):
    models, current = {}, None
    for line in open(path):
        parts = line.split()
        if parts[0] == "model":
            current = models.setdefault(parts[1], [])
        else:
            current.append(int(parts[1]))
    return models


def buckets_of(numels):
    out, current, limit = [], 0, 1 << 20
    for numel in reversed(numels):
        current += numel
        if current * 4 >= limit:
            out.append(current)
            current, limit = 0, 25 << 20
    if current:
        out.append(current)
    return out


def time_steps(step, steps=20):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes")
    parser.add_argument("--csv", default="")
    args = parser.parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank = dist.get_rank()
    rows = ["model,mode,tensors,parameters,step_ms"]
    for model, numels in read_shapes(args.shapes).items():
        total = sum(numels)
        flat = torch.ones(total, device="cuda")
        bucket_tensors = [torch.ones(n, device="cuda") for n in buckets_of(numels)]

        def flat_step():
            dist.all_reduce(flat)

        def bucket_step():
            for b in bucket_tensors:
                dist.all_reduce(b)

        for mode, step, count in (("flat", flat_step, 1),
                                  ("buckets", bucket_step, len(bucket_tensors))):
            ms = time_steps(step)
            if rank == 0:
                print(f"{model:12} torch_{mode:9} {count:5} calls {total:11} params {ms:9.3f} ms",
                      flush=True)
            rows.append(f"{model},torch_{mode},{count},{total},{ms:.4f}")
    if rank == 0 and args.csv:
        with open(args.csv, "w") as f:
            f.write("\n".join(rows) + "\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
