#!/usr/bin/env python3
"""A causal transformer language model trained on synthetic tokens: memwatch's second network.

Its memory is not a U-net's: the attention holds batch x heads x seq^2 scores per layer, the
activations batch x seq x d_model, the weights, their gradients and AdamW's moments 16 bytes
times about 12 x d_model^2 per layer. It knows nothing of memwatch; the last stdout line is a
JSON summary.
"""
import json
import os
import sys
import time

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from trainer_flags import Parser, UsageError, int_at_least  # noqa: E402


def parse_options(argv):
    p = Parser(prog="train.py", allow_abbrev=False,
               description="Trains a causal transformer language model on synthetic tokens.")
    p.add_argument("--batch-size", type=int_at_least(1), default=8)
    p.add_argument("--seq-len", type=int_at_least(1), default=256)
    p.add_argument("--d-model", type=int_at_least(1), default=128)
    p.add_argument("--heads", type=int_at_least(1), default=4)
    p.add_argument("--layers", type=int_at_least(1), default=2)
    p.add_argument("--vocab", type=int_at_least(2), default=1000)
    p.add_argument("--steps", type=int_at_least(0), default=2)
    p.add_argument("--threads", type=int_at_least(0), default=1, help="0: PyTorch's default")
    p.add_argument("--seed", type=int_at_least(0), default=0)
    o = p.parse_args(argv)
    if o.d_model % o.heads:
        raise UsageError(f"--d-model {o.d_model} is not divisible by --heads {o.heads}")
    return o


class LanguageModel(nn.Module):
    def __init__(self, o):
        super().__init__()
        self.embed = nn.Embedding(o.vocab, o.d_model)
        self.position = nn.Parameter(torch.zeros(o.seq_len, o.d_model))
        layer = nn.TransformerEncoderLayer(o.d_model, o.heads, dim_feedforward=4 * o.d_model,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, o.layers, enable_nested_tensor=False)
        self.head = nn.Linear(o.d_model, o.vocab)
        causal = torch.triu(torch.full((o.seq_len, o.seq_len), float("-inf")), diagonal=1)
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position
        return self.head(self.encoder(x, mask=self.causal))


def main(argv):
    o = parse_options(argv)
    if o.threads:
        torch.set_num_threads(o.threads)
    torch.manual_seed(o.seed)
    model = LanguageModel(o)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = time.monotonic()
    loss = None
    for _ in range(o.steps):
        tokens = torch.randint(0, o.vocab, (o.batch_size, o.seq_len + 1))
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, o.vocab), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    print(json.dumps({
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": o.steps,
        "final_loss": None if loss is None else loss.item(),
        "seconds": round(time.monotonic() - start, 3),
    }))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"train.py: {e}", file=sys.stderr)
        sys.exit(2)
