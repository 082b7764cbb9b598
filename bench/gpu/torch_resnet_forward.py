"""The peer of `ctp run --device gpu` on ctp_sample_models' ResNet-50: one
forward pass with the loss (torchvision resnet50, batch-norm in training mode
as ctp's program has it, softmax cross entropy and mean), FP32, on one GPU,
inputs made on the GPU once. Prints the median milliseconds per step over
--steps steps after --warmup, and the peak GPU memory.

  python3 bench/gpu/torch_resnet_forward.py --batch 64 --steps 20

With --eval, the peer of a saved inference model instead (the Paddle-Lite
ResNet-50 of ../shared/realworld, bench/gpu/realworld_forward.sh): the model in
eval mode (batch-norm with running statistics), softmax over its logits, no
loss, cuDNN's algorithm search on (ctp searches too).
"""
import argparse
import statistics

import torch
import torchvision


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--eval", action="store_true")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = args.eval
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = torchvision.models.resnet50().cuda()
    if args.eval:
        model.eval()
    else:
        model.train()
    image = torch.randn(args.batch, 3, args.image_size, args.image_size, device="cuda")
    label = torch.randint(0, 1000, (args.batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    with torch.no_grad():
        for step in range(args.warmup + args.steps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            if args.eval:
                loss = torch.softmax(model(image), dim=1).sum()
            else:
                loss = loss_fn(model(image), label)
            end.record()
            torch.cuda.synchronize()
            if step >= args.warmup:
                times.append(start.elapsed_time(end))
    what = "eval forward+softmax" if args.eval else "forward+loss"
    print(f"torch resnet50 {what} fp32 batch {args.batch}: median "
          f"{statistics.median(times):.2f} ms per step over {args.steps} "
          f"(min {min(times):.2f}), loss {loss.item():.4f}, peak "
          f"{torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
