"""The PyTorch peer of a ctp step on one GPU (`ctp run --device gpu` on
ctp_sample_models' programs): torchvision's resnet50 or BERT with a
token-classification head (torch_models.py), forward with the loss, or a
training step (forward, backward, SGD), eager or torch.compile'd. Inputs are
made on the GPU once. Prints the median milliseconds per step (CUDA events
around each step) after --warmup steps, and the peak GPU memory.

  python3 bench/gpu/torch_step.py --model resnet50 --batch 64 --mode forward --precision fp32
  python3 bench/gpu/torch_step.py --model resnet50 --batch 64 --mode train --precision bf16 --compile
  python3 bench/gpu/torch_step.py --model bert --batch 8 --mode train --precision bf16

Precision: fp32 (TF32 off for cuDNN and matmuls), tf32 (PyTorch's default for
cuDNN convolutions: TF32 on there, matmuls FP32), bf16 (autocast to bfloat16;
FP32 parameters).
"""
import argparse
import pathlib
import statistics
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from torch_models import add_model_args, loss_of, make_inputs, make_model, model_classes  # noqa: E402,E501


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["resnet50", "bert"], required=True)
    ap.add_argument("--mode", choices=["forward", "train"], default="train")
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="after timing, 3 steps under torch.profiler: the ops by CUDA time")
    ap.add_argument("--batch", type=int, default=0, help="default 64 (ResNet), 8 (BERT)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--lr", type=float, default=1e-4)
    add_model_args(ap)
    a = ap.parse_args()
    a.batch = a.batch or (64 if a.model == "resnet50" else 8)
    a.classes = model_classes(a)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = a.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(a.seed)
    model = make_model(a).cuda().train()
    t = {k: torch.from_numpy(v).cuda() for k, v in make_inputs(a).items()}
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)

    def loss_fn(m):
        if a.precision == "bf16":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return loss_of(a, m, t)
        return loss_of(a, m, t)

    def train_step(m):
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(m)
        loss.backward()
        opt.step()
        return loss

    def forward_step(m):
        with torch.no_grad():
            return loss_fn(m)

    step = train_step if a.mode == "train" else forward_step
    target = torch.compile(model) if a.compile else model
    times = []
    for i in range(a.warmup + a.steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step(target)
        end.record()
        torch.cuda.synchronize()
        if i >= a.warmup:
            times.append(start.elapsed_time(end))
    kind = "compiled" if a.compile else "eager"
    print(f"torch {a.model} {a.mode} {a.precision} {kind} batch {a.batch}: median "
          f"{statistics.median(times):.2f} ms per step over {a.steps} (min {min(times):.2f}), "
          f"loss {loss.item():.4f}, peak {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB",
          flush=True)
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step(target)
            torch.cuda.synchronize()
        print("torch.profiler, 3 steps (CUDA times are totals over the 3):")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30), flush=True)


if __name__ == "__main__":
    main()
