"""Issue 18 item 2: ctp's ResNet / BERT programs are the same models as
torchvision's resnet50 and transformers' BertModel (with a token-classification
head). ctp writes its initial weights, one step's loss and every parameter's
gradient as .npy (`ctp minimize --optimizer sgd --learning-rate 1e-30`, then
`ctp run --save-fetched`: at that rate the fetched parameters are the initial
ones to FP32 rounding, zero-initialised biases aside, which move by ~1e-30);
PyTorch loads those weights, runs the same inputs and loss, and
the two gradients are compared per parameter, both against a float64 PyTorch
reference too. FP32 on both sides, TF32 off on both sides (ctp without
--conv-tf32; torch.backends.{cudnn,cuda.matmul}.allow_tf32 = False).

  python3 bench/gpu/torch_grad_check.py --model resnet50 --batch 8 \
      --ctp build/ctp --models build/samples/ctp_sample_models --work /tmp/gradcheck
  python3 bench/gpu/torch_grad_check.py --model bert --layers 24 --hidden 1024 --heads 16 \
      --seq-len 512 --batch 2 ...        # --attention flash: ctp's BERT with flash_attn

Error of a tensor: ||a - b|| / ||b|| (2-norms over the whole tensor). A
gradient passes when ctp's error against the FP64 reference is within
max(--rtol, 2 x PyTorch FP32's error against it): FP32 cannot do better than
PyTorch's FP32 does (deep nets at random initialisation amplify rounding).
The loss likewise. Exits 1 when one fails.
"""
import argparse
import pathlib
import re
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from torch_models import add_model_args, loss_of, make_inputs, make_model, model_classes  # noqa: E402,E501


def sh(cmd):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"exit {out.returncode}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return out.stdout


# ---- models and the map from Paddle's parameter names to PyTorch's tensors ----

def resnet_pairs(model):
    """(paddle name, torch parameter, transposed?) in creation order: ctp and
    torchvision create conv, bn, ... and the shortcut last in each block."""
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    pairs = []
    for i, c in enumerate(convs):
        pairs.append((f"conv2d_{i}.w_0", c.weight, False))
    for i, b in enumerate(bns):
        pairs.append((f"batch_norm_{i}.w_0", b.weight, False))
        pairs.append((f"batch_norm_{i}.b_0", b.bias, False))
    pairs.append(("fc_0.w_0", model.fc.weight, True))  # Paddle's fc weight is [in, out]
    pairs.append(("fc_0.b_0", model.fc.bias, False))
    return pairs


def bert_pairs(model):
    e = model.bert.embeddings
    pairs = [("embedding_0.w_0", e.word_embeddings.weight, False),
             ("embedding_1.w_0", e.position_embeddings.weight, False),
             ("embedding_2.w_0", e.token_type_embeddings.weight, False),
             ("layer_norm_0.w_0", e.LayerNorm.weight, False),
             ("layer_norm_0.b_0", e.LayerNorm.bias, False)]
    lin, ln = 0, 1

    def linear(m):
        nonlocal lin
        pairs.append((f"linear_{lin}.w_0", m.weight, True))
        pairs.append((f"linear_{lin}.b_0", m.bias, False))
        lin += 1

    def norm(m):
        nonlocal ln
        pairs.append((f"layer_norm_{ln}.w_0", m.weight, False))
        pairs.append((f"layer_norm_{ln}.b_0", m.bias, False))
        ln += 1

    for layer in model.bert.encoder.layer:
        s = layer.attention.self
        linear(s.query), linear(s.key), linear(s.value)
        linear(layer.attention.output.dense)
        norm(layer.attention.output.LayerNorm)
        linear(layer.intermediate.dense)
        linear(layer.output.dense)
        norm(layer.output.LayerNorm)
    linear(model.head)
    return pairs


def torch_grads(a, pairs_fn, feeds, ctp_params, dtype):
    model = make_model(a).to("cuda", dtype).train()
    pairs = pairs_fn(model)
    with torch.no_grad():
        for name, p, transposed in pairs:
            w = torch.from_numpy(ctp_params[name])
            p.copy_((w.t() if transposed else w).to(p.device, dtype))
    loss = loss_of(a, model, {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}, dtype)
    loss.backward()
    grads = {}
    for name, p, transposed in pairs:
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        grads[name] = (g.t() if transposed else g).double().cpu().numpy()
    return loss.item(), grads, len(pairs), sum(1 for _ in model.parameters())


def rel(a, b):
    d = np.linalg.norm((a.astype(np.float64) - b).ravel())
    n = np.linalg.norm(b.ravel())
    return d / n if n > 0 else d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["resnet50", "bert"], required=True)
    ap.add_argument("--ctp", default="build/ctp")
    ap.add_argument("--models", default="build/samples/ctp_sample_models")
    ap.add_argument("--work", default="/tmp/ctp_gradcheck")
    ap.add_argument("--batch", type=int, default=8)
    add_model_args(ap)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--attention", choices=["ops", "flash"], default="ops",
                    help="bert: ctp's self-attention op by op or as flash_attn (PyTorch's side "
                         "is BertModel either way)")
    a = ap.parse_args()
    a.classes = model_classes(a)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)

    if a.model == "resnet50":
        spec = ["resnet", "--depth", "50", "--image-size", a.image_size, "--classes", a.classes]
    else:
        spec = ["bert", "--layers", a.layers, "--hidden", a.hidden, "--heads", a.heads,
                "--seq-len", a.seq_len, "--vocab", a.vocab, "--max-position", a.max_position,
                "--classes", a.classes, "--attention", a.attention]
    out = sh([a.models, *spec, "-o", work / "fwd"])
    loss_name = re.search(r"loss (\S+)", out).group(1)
    sh([a.ctp, "minimize", "--startup", work / "fwd/startup.pb", "--main", work / "fwd/main.pb",
        "--loss", loss_name, "--optimizer", "sgd", "--learning-rate", "1e-30", "-o", work / "train"])

    feeds = make_inputs(a)
    feed_args = []
    for k, v in feeds.items():
        np.save(work / f"{k}.npy", v)
        feed_args += ["--feed", f"{k}={work / (k + '.npy')}"]
    pairs_fn = resnet_pairs if a.model == "resnet50" else bert_pairs
    probe = make_model(a)
    names = [n for n, _, _ in pairs_fn(probe)]
    del probe
    fetch = [loss_name] + names + [n + "@GRAD" for n in names]
    sh([a.ctp, "run", "--device", "gpu", "--startup", work / "train/startup.pb", "--main",
        work / "train/main.pb", "--batch", a.batch, *feed_args, "--steps", 1,
        "--fetch", ",".join(fetch), "--save-fetched", work / "ctp"])
    ctp = {p.name[:-4]: np.load(p) for p in (work / "ctp").glob("*.npy")}
    ctp_loss = float(ctp[loss_name].reshape(-1)[0])
    params = {n: ctp[n] for n in names}

    loss32, g32, paired, total = torch_grads(a, pairs_fn, feeds, params, torch.float32)
    loss64, g64, _, _ = torch_grads(a, pairs_fn, feeds, params, torch.float64)
    print(f"{a.model}: {paired} parameter tensors paired of PyTorch's {total}; batch {a.batch}")
    print(f"loss: ctp {ctp_loss:.8f}  torch fp32 {loss32:.8f}  torch fp64 {loss64:.8f}  "
          f"(ctp vs fp32 {abs(ctp_loss - loss32) / abs(loss32):.2e})")
    # Gradients that are zero in exact arithmetic (BERT's key biases: softmax
    # ignores a shift shared by a row's scores) hold only rounding noise in
    # FP32 on both sides: compared by size, not by relative error.
    scale = max(np.linalg.norm(g64[n].ravel()) for n in names)
    zero = [n for n in names if np.linalg.norm(g64[n].ravel()) <= 1e-9 * scale]
    rows = []
    for n in names:
        if n in zero:
            continue
        g = ctp[n + "@GRAD"].astype(np.float64)
        rows.append((n, rel(g, g32[n]), rel(g, g64[n]), rel(g32[n], g64[n])))
    print(f"per-parameter error ||a-b||/||b||, worst 8 of ctp vs fp64 ({len(rows)} gradients):")
    print(f"  {'parameter':28} {'ctp/torch32':>12} {'ctp/fp64':>10} {'torch32/fp64':>12}")
    for r in sorted(rows, key=lambda r: -r[2])[:8]:
        print(f"  {r[0]:28} {r[1]:12.2e} {r[2]:10.2e} {r[3]:12.2e}")
    for i, what in ((1, "ctp vs torch fp32"), (2, "ctp vs fp64"), (3, "torch fp32 vs fp64")):
        vals = sorted(r[i] for r in rows)
        worst = max(rows, key=lambda r: r[i])
        print(f"  {what}: median {vals[len(vals) // 2]:.2e}, max {worst[i]:.2e} ({worst[0]})")
    zero_bad = []
    if zero:
        print(f"{len(zero)} gradients are zero in exact arithmetic (fp64 norm <= 1e-9 x the "
              f"largest); norms relative to the largest gradient's, ctp / torch fp32 / fp64:")
        for n in zero:
            c, t, d = (np.linalg.norm(x.ravel()) / scale
                       for x in (ctp[n + "@GRAD"].astype(np.float64), g32[n], g64[n]))
            print(f"  {n:28} {c:.2e} / {t:.2e} / {d:.2e}")
            if not c <= max(10 * t, 1e-6):
                zero_bad.append(n)
    # Where FP32 itself cannot reach --rtol (PyTorch's FP32 gradient is further
    # than that from the FP64 one), ctp passes by being as close to FP64 as
    # PyTorch's FP32 is (within twice its error).
    bad = [r[0] for r in rows if not r[2] <= max(a.rtol, 2 * r[3])] + zero_bad
    loss_bad = not abs(ctp_loss - loss64) <= max(a.rtol * abs(loss64), 2 * abs(loss32 - loss64))
    print(f"RESULT {'FAIL' if bad or loss_bad else 'PASS'}: {len(bad)} of {len(names)} gradients "
          f"over max(rtol {a.rtol}, 2 x torch fp32's error vs fp64) (zero ones: over 10 x torch "
          f"fp32's size); loss {'over' if loss_bad else 'within'}" +
          (f"; first: {bad[0]}" if bad else ""))
    return 1 if bad or loss_bad else 0


if __name__ == "__main__":
    sys.exit(main())
