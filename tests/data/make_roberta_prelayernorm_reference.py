"""Makes tests/data/roberta_prelayernorm_tiny: a small random RoBERTa-PreLayerNorm
checkpoint in HF's layout and the outputs and gradients of HF's
RobertaPreLayerNormModel, re-expressed in torch (transformers is not
installable here) from transformers' modeling_roberta_prelayernorm.py at commit
b6dd89b47daad100034ac4e3b7beb2101f07d7f1:
- embeddings as RoBERTa's (word + token type + position, positions counting the
  non-padding tokens from padding_idx + 1), then embeddings.LayerNorm;
- each layer: a = attention.LayerNorm(x); h = x + attention.output.dense(self(a));
  y = h + output.dense(gelu(intermediate.dense(intermediate.LayerNorm(h))));
- last_hidden_state = LayerNorm(encoder output); hidden_states[-1] is the
  encoder output before it; pooler on last_hidden_state[:, 0].
Gradients: of sum(last_hidden_state * grad_seed) (padded positions 0), eval mode.
Run: /usr/bin/python3 tests/data/make_roberta_prelayernorm_reference.py"""
import json
import math
import os

import torch

from reference_io import save

torch.manual_seed(11)
V, D, H, L, I, P, PAD = 60, 32, 4, 2, 64, 20, 1
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "roberta_prelayernorm_tiny")


def rnd(*shape, std=0.3):
    return torch.randn(*shape) * std


def ln_pair(w, name):
    w[name + ".weight"], w[name + ".bias"] = 1 + rnd(D, std=0.1), rnd(D, std=0.1)


w = {"embeddings.word_embeddings.weight": rnd(V, D), "embeddings.position_embeddings.weight": rnd(P, D),
     "embeddings.token_type_embeddings.weight": rnd(1, D), "pooler.dense.weight": rnd(D, D),
     "pooler.dense.bias": rnd(D)}
ln_pair(w, "embeddings.LayerNorm")
ln_pair(w, "LayerNorm")
for l in range(L):
    p = f"encoder.layer.{l}."
    for n in ("query", "key", "value"):
        w[p + f"attention.self.{n}.weight"], w[p + f"attention.self.{n}.bias"] = rnd(D, D), rnd(D)
    w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"] = rnd(D, D), rnd(D)
    ln_pair(w, p + "attention.LayerNorm")
    ln_pair(w, p + "intermediate.LayerNorm")
    w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"] = rnd(I, D), rnd(I)
    w[p + "output.dense.weight"], w[p + "output.dense.bias"] = rnd(D, I), rnd(D)
for t in w.values():
    t.requires_grad_(True)

ids = torch.tensor([[0, 5, 9, 13, 22, 31, 40, 2, PAD, PAD], [0, 7, 8, 9, 10, 11, 12, 13, 14, 2]])
mask = (ids != PAD).long()
B, T = ids.shape


def ln(x, name):
    return torch.nn.functional.layer_norm(x, (D,), w[name + ".weight"], w[name + ".bias"], eps=1e-5)


pos = torch.cumsum(mask, dim=1) * mask + PAD  # create_position_ids_from_input_ids
h = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][torch.zeros_like(ids)]
h = ln(h + w["embeddings.position_embeddings.weight"][pos], "embeddings.LayerNorm")
hidden, attns = [h], []
ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
for l in range(L):
    p = f"encoder.layer.{l}."
    lin = lambda x, n: x @ w[p + n + ".weight"].t() + w[p + n + ".bias"]
    split = lambda x: x.view(B, -1, H, D // H).transpose(1, 2)
    a = ln(h, p + "attention.LayerNorm")
    q, k, v = split(lin(a, "attention.self.query")), split(lin(a, "attention.self.key")), split(lin(a, "attention.self.value"))
    probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // H) + ext, -1)
    z = (probs @ v).transpose(1, 2).reshape(B, -1, D)
    h1 = lin(z, "attention.output.dense") + h
    f = lin(torch.nn.functional.gelu(lin(ln(h1, p + "intermediate.LayerNorm"), "intermediate.dense")), "output.dense")
    h = f + h1
    hidden.append(h)
    attns.append(probs)
last = ln(h, "LayerNorm")
pooled = torch.tanh(last[:, 0] @ w["pooler.dense.weight"].t() + w["pooler.dense.bias"])
seed = torch.randn(B, T, D) * mask[:, :, None]
(last * seed).sum().backward()


os.makedirs(OUT, exist_ok=True)
save(os.path.join(OUT, "model.safetensors"), w, {"format": "pt"})
out = {"last_hidden_state": last, "pooler_output": pooled, "grad_seed": seed,
       **{f"hidden_states.{i}": x for i, x in enumerate(hidden)}, **{f"attentions.{i}": x for i, x in enumerate(attns)},
       **{f"grad.{n}": torch.zeros_like(t) if t.grad is None else t.grad for n, t in w.items()}}  # pooler: none
save(os.path.join(OUT, "expected.safetensors"), out, {"made_by": "tests/data/make_roberta_prelayernorm_reference.py"})


def write_folder_files(folder, architecture):
    """inputs.json and config.json of a reference folder."""
    json.dump({"input_ids": ids.tolist(), "attention_mask": mask.tolist()}, open(os.path.join(folder, "inputs.json"), "w"))
    json.dump({"architectures": [architecture], "model_type": "roberta-prelayernorm", "vocab_size": V,
               "hidden_size": D, "num_hidden_layers": L, "num_attention_heads": H, "intermediate_size": I,
               "max_position_embeddings": P, "type_vocab_size": 1, "pad_token_id": PAD, "layer_norm_eps": 1e-5,
               "hidden_act": "gelu", "position_embedding_type": "absolute"},
              open(os.path.join(folder, "config.json"), "w"), indent=1)


write_folder_files(OUT, "RobertaPreLayerNormModel")

# The same weights as RobertaPreLayerNormForMaskedLM (no pooler; HF's lm_head: dense, erf GELU,
# layer_norm, the decoder tied to the word embeddings, plus bias): its logits on the same inputs.
MLM = OUT.replace("_tiny", "_mlm_tiny")
head = {"lm_head.dense.weight": rnd(D, D), "lm_head.dense.bias": rnd(D), "lm_head.layer_norm.weight": 1 + rnd(D, std=0.1),
        "lm_head.layer_norm.bias": rnd(D, std=0.1), "lm_head.bias": rnd(V)}
with torch.no_grad():
    x = torch.nn.functional.gelu(last @ head["lm_head.dense.weight"].t() + head["lm_head.dense.bias"])
    x = torch.nn.functional.layer_norm(x, (D,), head["lm_head.layer_norm.weight"], head["lm_head.layer_norm.bias"], eps=1e-5)
    logits = x @ w["embeddings.word_embeddings.weight"].t() + head["lm_head.bias"]
os.makedirs(MLM, exist_ok=True)
save(os.path.join(MLM, "model.safetensors"),
     {**{"roberta_prelayernorm." + n: t for n, t in w.items() if not n.startswith("pooler.")}, **head}, {"format": "pt"})
save(os.path.join(MLM, "expected.safetensors"), {"logits": logits, "last_hidden_state": last},
     {"made_by": "tests/data/make_roberta_prelayernorm_reference.py"})
write_folder_files(MLM, "RobertaPreLayerNormForMaskedLM")
print("positions:", pos.tolist())
