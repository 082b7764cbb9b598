"""All-reduce bus bandwidth of torch.distributed (NCCL), the peer of
bench/gpu_allreduce_bench.cc: the same sizes (FP32, 8 B to 1 GiB), the same
iteration counts, warm-up, barrier and timing (wall time of `iters`
back-to-back calls ended by a device sync, over iters), and the same formula
busbw = bytes / time * 2(n-1)/n.

    torchrun --nproc_per_node 2 bench/gpu/torch_allreduce.py [--csv FILE]
"""
import argparse
import os
import time

import torch
import torch.distributed as dist


def iterations_for(nbytes: int) -> int:
    return max(20, min(1000, (4 << 30) // max(nbytes, 1)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--min-bytes", type=int, default=8)
    parser.add_argument("--max-bytes", type=int, default=1 << 30)
    parser.add_argument("--csv", default="")
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank, n = dist.get_rank(), dist.get_world_size()
    factor = 2.0 * (n - 1) / n
    rows = ["bytes,iters,torch_us,torch_busbw_gbs"]
    if rank == 0:
        print(f"{'bytes':>12} {'iters':>6} {'torch_us':>12} {'torch_busbw_GB/s':>16}", flush=True)
    nbytes = args.min_bytes
    while nbytes <= args.max_bytes:
        count = max(nbytes // 4, 1)
        x = torch.zeros(count, dtype=torch.float32, device="cuda")
        iters = iterations_for(nbytes)
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        us = (time.perf_counter() - t0) * 1e6 / iters
        bw = count * 4 / us * 1e-3 * factor
        if rank == 0:
            print(f"{count * 4:>12} {iters:>6} {us:>12.2f} {bw:>16.2f}", flush=True)
        rows.append(f"{count * 4},{iters},{us:.3f},{bw:.3f}")
        nbytes *= 2
    if rank == 0 and args.csv:
        with open(args.csv, "w") as f:
            f.write("\n".join(rows) + "\n")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
