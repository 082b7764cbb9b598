"""Writes the gradient shapes of real models, for bench/gpu_grad_sync_bench.cc
and bench/gpu/torch_grad_sync.py: one line "model NAME" per model, then one
line per trainable parameter (in registration order): "NAME NUMEL".

    python3 bench/gpu/model_grad_shapes.py OUT_FILE
"""
import sys

import torchvision
from transformers import BertConfig, BertModel


def main() -> None:
    models = {
        "resnet50": torchvision.models.resnet50(),
        "bert-large": BertModel(BertConfig(hidden_size=1024, num_hidden_layers=24,
                                           num_attention_heads=16, intermediate_size=4096)),
    }
    with open(sys.argv[1], "w") as f:
        for name, model in models.items():
            params = [(n, p.numel()) for n, p in model.named_parameters() if p.requires_grad]
            f.write(f"model {name}\n")
            for n, numel in params:
                f.write(f"{n} {numel}\n")
            print(f"{name}: {len(params)} tensors, {sum(x for _, x in params)} parameters",
                  flush=True)


if __name__ == "__main__":
    main()
