"""Checks bench's torch model against PyTorch's own: reads what a C++ test wrote (the model's
sizes, its parameters by name, a batch, bench's logits and every parameter's gradient of the
mean cross-entropy), builds the original's TorchLM from nn.TransformerEncoder with norm_first
set alike (the same embedding, positional encoding, shift and decoder), loads the parameters by
name (strict: every name must match), runs the same batch and compares. Exit 0 when the logits
agree within 1e-5 and every gradient within 1e-4 (relative to the largest magnitude), else 1.
--flip builds the other block order, which must fail (the test's negative control).
Usage: torch_model_vs_pytorch.py FILE.json [--flip]"""
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class TorchLM(nn.Module):
    def __init__(self, j, norm_first):
        super().__init__()
        d = j["d_model"]
        self.embed = nn.Embedding(256, d)
        self.pos = nn.Parameter(torch.zeros(j["seq_len"], d))
        layer = nn.TransformerEncoderLayer(d, j["num_heads"], j["ff_dim"], 0.0,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, j["num_layer"], enable_nested_tensor=False)
        self.head = nn.Linear(d, 256)

    def forward(self, x):  # [S, B] bytes -> [S, B, 256]
        S = x.shape[0]
        e = self.embed(x)
        e = torch.cat([torch.zeros_like(e[:1]), e[:-1]], 0) + self.pos[:S].unsqueeze(1)
        mask = nn.Transformer.generate_square_subsequent_mask(S)
        return self.head(self.encoder(e, mask=mask))


def rel_err(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def main():
    j = json.load(open(sys.argv[1]))
    flip = "--flip" in sys.argv[2:]
    norm_first = bool(j["norm_first"]) != flip
    model = TorchLM(j, norm_first)
    state = {n: torch.tensor(p["data"], dtype=torch.float32).reshape(p["shape"])
             for n, p in j["params"].items()}
    model.load_state_dict(state, strict=True)
    model.train()
    x = torch.tensor(j["bytes"], dtype=torch.int64).reshape(j["seq_len"], j["batch"])
    logits = model(x)
    F.cross_entropy(logits.reshape(-1, 256), x.reshape(-1)).backward()
    ok = True
    e = rel_err(torch.tensor(j["logits"]).reshape(logits.shape), logits.detach())
    print(f"norm_first={int(norm_first)} logits: max relative error {e:.3g}")
    ok &= e <= 1e-5
    worst = (0.0, "")
    for n, p in model.named_parameters():
        g = torch.tensor(j["grads"][n]).reshape(p.shape)
        worst = max(worst, (rel_err(g, p.grad), n))
    print(f"gradients: max relative error {worst[0]:.3g} ({worst[1]})")
    ok &= worst[0] <= 1e-4
    print("equal" if ok else "DIFFERENT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
