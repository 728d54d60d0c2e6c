"""Makes tests/data/roberta_tiny: a small random RoBERTa checkpoint in HF's
layout and the outputs of HF's RobertaModel forward, re-expressed in torch
(transformers is not installable here): RobertaEmbeddings with
create_position_ids_from_input_ids (positions count non-padding tokens from
padding_idx + 1, padding gets padding_idx), no token types beyond 0, then
BERT's post-LayerNorm layers with the additive (1 - mask) * finfo.min mask.
Run: /usr/bin/python3 tests/data/make_roberta_reference.py"""
import json
import math
import os

import torch

from reference_io import save

torch.manual_seed(7)
V, D, H, L, I, P, PAD = 60, 32, 4, 2, 64, 20, 1
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "roberta_tiny")


def rnd(*shape, std=0.3):
    return torch.randn(*shape) * std


w = {"embeddings.word_embeddings.weight": rnd(V, D), "embeddings.position_embeddings.weight": rnd(P, D),
     "embeddings.token_type_embeddings.weight": rnd(1, D), "embeddings.LayerNorm.weight": 1 + rnd(D, std=0.1),
     "embeddings.LayerNorm.bias": rnd(D, std=0.1), "pooler.dense.weight": rnd(D, D), "pooler.dense.bias": rnd(D)}
for l in range(L):
    p = f"encoder.layer.{l}."
    for n in ("query", "key", "value"):
        w[p + f"attention.self.{n}.weight"], w[p + f"attention.self.{n}.bias"] = rnd(D, D), rnd(D)
    w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = rnd(D, D), rnd(D)
    w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"] = 1 + rnd(D, std=0.1), rnd(D, std=0.1)
    w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = rnd(I, D), rnd(I)
    w[p + "output.dense.weight"], w[p + "output.dense.bias"] = rnd(D, I), rnd(D)
    w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = 1 + rnd(D, std=0.1), rnd(D, std=0.1)

ids = torch.tensor([[0, 5, 9, 13, 22, 31, 40, 2, PAD, PAD], [0, 7, 8, 9, 10, 11, 12, 13, 14, 2]])
mask = (ids != PAD).long()


def ln(x, g, b):
    return torch.nn.functional.layer_norm(x, (D,), g, b, eps=1e-5)


pos = torch.cumsum(mask, dim=1) * mask + PAD  # create_position_ids_from_input_ids
h = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][torch.zeros_like(ids)]
h = ln(h + w["embeddings.position_embeddings.weight"][pos], w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
hidden, attns = [h], []
ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
for l in range(L):
    p = f"encoder.layer.{l}."
    lin = lambda x, n: x @ w[p + n + ".weight"].t() + w[p + n + ".bias"]
    split = lambda x: x.view(2, -1, H, D // H).transpose(1, 2)
    q, k, v = split(lin(h, "attention.self.query")), split(lin(h, "attention.self.key")), split(lin(h, "attention.self.value"))
    a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // H) + ext, -1)
    z = (a @ v).transpose(1, 2).reshape(2, -1, D)
    h1 = ln(lin(z, "attention.output.dense") + h, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
    f = lin(torch.nn.functional.gelu(lin(h1, "intermediate.dense")), "output.dense")
    h = ln(f + h1, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    hidden.append(h)
    attns.append(a)


os.makedirs(OUT, exist_ok=True)
save(os.path.join(OUT, "model.safetensors"), w, {"format": "pt"})
out = {"last_hidden_state": h, **{f"hidden_states.{i}": x for i, x in enumerate(hidden)},
       **{f"attentions.{i}": x for i, x in enumerate(attns)}}
save(os.path.join(OUT, "expected.safetensors"), out, {"made_by": "tests/data/make_roberta_reference.py"})
json.dump({"input_ids": ids.tolist(), "attention_mask": mask.tolist()}, open(os.path.join(OUT, "inputs.json"), "w"))
json.dump({"architectures": ["RobertaModel"], "model_type": "roberta", "vocab_size": V, "hidden_size": D,
           "num_hidden_layers": L, "num_attention_heads": H, "intermediate_size": I, "max_position_embeddings": P,
           "type_vocab_size": 1, "pad_token_id": PAD, "layer_norm_eps": 1e-5, "hidden_act": "gelu",
           "position_embedding_type": "absolute"}, open(os.path.join(OUT, "config.json"), "w"), indent=1)
print("positions:", pos.tolist())
