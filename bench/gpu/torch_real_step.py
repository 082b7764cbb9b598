"""The PyTorch side of part (s) of bench/gpu/device_run.sh: a training step
of the twins of ctp's real models (torch_models.py: torchvision's resnet50,
BERT with a token-classification head, ctp's losses), bf16 autocast, SGD,
with DDP and without communication, timed as ctp_sample_trainer times its
step, so that each side's sync overhead (the step with DDP minus the step
without) compares with the other's.

  torchrun --standalone --nproc_per_node N bench/gpu/torch_real_step.py --model resnet50 [--no-ddp]
  torchrun ... --model bert [--no-ddp]      # BERT-large: 24 x 1024, 16 heads, 8 x 512 tokens

Defaults: ResNet-50, 64 images of 3x224x224 per GPU, 1000 classes; BERT-large,
8 sequences of 512 tokens per GPU, vocabulary 30522, 4 token classes (ctp's
trainer's default). As ctp's trainer does, every step uploads its batch
from page-locked host memory and reads the loss back (--inputs-on-gpu
keeps the inputs on the GPU instead). Time per step: the wall time of
--steps steps after --warmup steps and a barrier, ended by a device sync;
rank 0 prints it (every rank's step ends with its loss read, so rank 0's
time is the job's).
"""
import argparse
import os
import pathlib
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from torch_models import add_model_args, loss_of, make_inputs, make_model, model_classes  # noqa: E402,E501


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["resnet50", "bert"], required=True)
    ap.add_argument("--batch", type=int, default=0, help="per GPU (default 64 / 8)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-ddp", action="store_true",
                    help="with several workers, train each alone (no DDP, no communication)")
    ap.add_argument("--inputs-on-gpu", action="store_true",
                    help="make the inputs on the GPU once (no upload per step)")
    ap.add_argument("--csv", default="")
    add_model_args(ap, bert_classes=4)  # 4: ctp_sample_trainer's default
    a = ap.parse_args()
    a.batch = a.batch or (64 if a.model == "resnet50" else 8)
    a.classes = model_classes(a, bert_classes=4)
    return a


def main():
    a = parse()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    if world > 1:
        dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(1)
    model = make_model(a).to(device).train()
    ddp = world > 1 and not a.no_ddp
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    host = {k: torch.from_numpy(v).pin_memory() for k, v in make_inputs(a).items()}
    on_gpu = {k: v.to(device) for k, v in host.items()}

    def step():
        t = on_gpu if a.inputs_on_gpu else {
            k: v.to(device, non_blocking=True) for k, v in host.items()}
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_of(a, model, t)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    if world > 1:
        dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1000.0 / a.steps
    variant = "DDP" if ddp else "no DDP" if world > 1 else "single GPU"
    if rank == 0:
        print(f"torch {a.model} {variant}: {world} GPU(s), {params} parameters, batch {a.batch} "
              f"per GPU, bf16 autocast, SGD: {ms:.3f} ms per step ({a.steps} steps), peak "
              f"{torch.cuda.max_memory_allocated() / 2**30:.2f} GiB", flush=True)
        if a.csv:
            with open(a.csv, "a") as f:
                f.write(f"torch_real,{a.model},{world},{variant},{ms:.4f}\n")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
