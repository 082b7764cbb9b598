"""The PyTorch twins of ctp_sample_models' programs (samples/real_models.h),
shared by torch_grad_check.py and torch_step.py: torchvision's resnet50, and
transformers' BertModel without its pooler under a token-classification head
(dropout off, layer-norm epsilon 1e-12, exact GELU, as ctp's BERT), each with
ctp's loss: softmax cross entropy, mean over samples (ResNet) or tokens (BERT).
"""
import numpy as np
import torch


class BertTokenClassifier(torch.nn.Module):
    def __init__(self, layers, hidden, heads, vocab, max_position, classes):
        super().__init__()
        from transformers import BertConfig, BertModel
        cfg = BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, intermediate_size=4 * hidden,
                         max_position_embeddings=max_position, type_vocab_size=2,
                         hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                         layer_norm_eps=1e-12, hidden_act="gelu")
        self.bert = BertModel(cfg, add_pooling_layer=False)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, ids, pos, seg):
        h = self.bert(input_ids=ids, position_ids=pos, token_type_ids=seg).last_hidden_state
        return self.head(h)


def add_model_args(ap, bert_classes=2):
    """The model options the scripts share (ctp_sample_models' defaults:
    ResNet-50 on 224x224 images, BERT-large); --classes 0 means 1000 for
    ResNet and `bert_classes` for BERT (resolve with model_classes)."""
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=0,
                    help=f"0: 1000 (ResNet), {bert_classes} (BERT)")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=30522)
    ap.add_argument("--max-position", type=int, default=512)


def model_classes(a, bert_classes=2):
    return a.classes or (1000 if a.model == "resnet50" else bert_classes)


def make_model(a):
    """a: model ('resnet50' or 'bert'), classes, and for BERT layers, hidden,
    heads, vocab, max_position."""
    if a.model == "resnet50":
        import torchvision
        return torchvision.models.resnet50(num_classes=a.classes)
    return BertTokenClassifier(a.layers, a.hidden, a.heads, a.vocab, a.max_position, a.classes)


def make_inputs(a):
    """NumPy arrays under the names of ctp's feed vars (seeded by a.seed)."""
    rng = np.random.default_rng(a.seed)
    if a.model == "resnet50":
        image = rng.standard_normal((a.batch, 3, a.image_size, a.image_size), dtype=np.float32)
        label = rng.integers(0, a.classes, (a.batch, 1), dtype=np.int64)
        return {"image": image, "label": label}
    ids = rng.integers(0, a.vocab, (a.batch, a.seq_len), dtype=np.int64)
    pos = np.tile(np.arange(a.seq_len, dtype=np.int64), (a.batch, 1))
    seg = rng.integers(0, 2, (a.batch, a.seq_len), dtype=np.int64)
    label = rng.integers(0, a.classes, (a.batch, a.seq_len, 1), dtype=np.int64)
    return {"src_ids": ids, "pos_ids": pos, "sent_ids": seg, "label": label}


def loss_of(a, model, t, dtype=None):
    """The loss on tensors `t` (make_inputs' names, on the model's device)."""
    if a.model == "resnet50":
        image = t["image"] if dtype is None else t["image"].to(dtype)
        return torch.nn.functional.cross_entropy(model(image), t["label"][:, 0])
    logits = model(t["src_ids"], t["pos_ids"], t["sent_ids"])
    return torch.nn.functional.cross_entropy(logits.reshape(-1, a.classes).float(),
                                             t["label"].reshape(-1))
