"""The issue's reference points for benchmark (b): a real ResNet-50 or
BERT-large training step in PyTorch (bf16 autocast, SGD), with DDP and
without communication, timed in the same call as ctp's part (s), so the
sync overhead DDP adds to a real model sits beside ctp's on its
BERT-large-shaped MLP.

  torchrun --standalone --nproc_per_node N bench/gpu/torch_real_step.py --model resnet50 [--no-ddp]
  torchrun ... --model bert-large [--no-ddp]

ResNet-50 (torchvision, 161 gradient tensors, 25.6 M parameters): 64 images
of 3x224x224 per GPU, cross entropy over 1000 classes. BERT-large
(transformers BertModel, hidden 1024, 24 layers, 335 M parameters): 8
sequences of 512 tokens per GPU, a loss touching every output (no head, as
the parameter set of model_grad_shapes.py). Inputs are made on the GPU once;
a step is forward, backward and the SGD update. Time per step: the wall time
of --steps steps after 3 warm-up steps and a barrier, ended by a device sync.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def build(name, batch, seq, device):
    gen = torch.Generator(device=device).manual_seed(3)
    if name == "resnet50":
        import torchvision
        model = torchvision.models.resnet50().to(device)
        x = torch.randn(batch, 3, 224, 224, device=device, generator=gen)
        y = torch.randint(0, 1000, (batch,), device=device, generator=gen)
        loss_fn = nn.CrossEntropyLoss()
        return model, lambda m: loss_fn(m(x), y)
    from transformers import BertConfig, BertModel
    config = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096)
    model = BertModel(config).to(device)
    ids = torch.randint(0, config.vocab_size, (batch, seq), device=device, generator=gen)

    def loss(m):
        out = m(input_ids=ids)
        return out.last_hidden_state.float().square().mean() + out.pooler_output.float().mean()
    return model, loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["resnet50", "bert-large"], required=True)
    ap.add_argument("--batch", type=int, default=0, help="per GPU (default 64 / 8)")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--no-ddp", action="store_true",
                    help="with several workers, train each alone (no DDP, no communication)")
    ap.add_argument("--csv", default="")
    a = ap.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    if world > 1:
        dist.init_process_group("nccl", device_id=device)
    batch = a.batch or (64 if a.model == "resnet50" else 8)
    torch.manual_seed(1)
    model, loss_of = build(a.model, batch, a.seq, device)
    ddp = world > 1 and not a.no_ddp
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local])
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_of(model)
        loss.backward()
        opt.step()

    for _ in range(3):
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
        print(f"torch real {a.model} {variant}: {world} GPU(s), {params} parameters, batch {batch} "
              f"per GPU, bf16 autocast, SGD: {ms:.3f} ms per step ({a.steps} steps)", flush=True)
        if a.csv:
            with open(a.csv, "a") as f:
                f.write(f"torch_real,{a.model},{world},{variant},{ms:.4f}\n")
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
