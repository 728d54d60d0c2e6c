"""PyTorch peer of bench/train_mini.c: the same BERT training step at the same
sizes (train-mini, train-tiny: masked LM on a fixed 15% of positions, the head
on those rows only; train-small: the study's 2-label classifier), with
torch.optim.AdamW, the same learning-rate schedule, clipping at norm 1 and
weight decay on the same tensors as posemb's AdamW. The model and the PEs are
in bench/torch_bert.py. Prints one JSON line with the same fields. With
POSEMB_BENCH_DUMP=DIR it starts from the weights and batch that
bench_train_mini wrote there (bench/run --same-init).
usage: torch_train_mini.py PE SIZE THREADS STEPS [bf16]

bf16: the forward and backward under torch.autocast("cpu", torch.bfloat16),
PyTorch's own mixed precision (bf16 products through oneDNN, fp32 weights and
optimizer), the peer of bench_train_mini's bf16 products."""
import sys

sys.dont_write_bytecode = True  # no __pycache__ in bench/
import torch  # noqa: E402

import torch_bert as tb  # noqa: E402

# layers, hidden, heads, inter, vocab, type_vocab, max_position, batch, len, head, lr, warmup, total: train_mini.c's SIZES
SIZES = {
    "train-mini": (4, 256, 4, 1024, 30522, 2, 128, 32, 128, "mlm", 1e-4, 0, 1000000),
    "train-tiny": (2, 64, 4, 256, 1000, 2, 64, 16, 64, "mlm", 1e-4, 0, 1000000),
    "train-small": (2, 64, 4, 128, 64, 1, 256, 32, 32, "classify", 3e-3, 25, 250),
}


def main():
    pe, size, threads, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    bf16 = len(sys.argv) > 5 and sys.argv[5] == "bf16"
    L, d, h, inter, vocab, types, max_pos, B, T, head, lr, warmup, total = SIZES[size]
    tb.set_threads(threads)
    torch.manual_seed(0)
    cfg = dict(layers=L, hidden=d, heads=h, inter=inter, vocab=vocab, type_vocab=types, max_position=max_pos)
    model = tb.Bert(cfg, pe, head)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(vocab // 4, vocab, (B, T), generator=g)  # a fixed batch
    chosen = torch.rand(B * T, generator=g) < 0.15               # a fixed 15% of positions
    labels = torch.randint(0, 2, (B,), generator=g)
    if tb.dump_dir():  # bench/run --same-init: posemb's initial weights and batch
        tb.load_posemb(model, tb.dump_dir() + "/model.safetensors")
        ids, tokens, labels = tb.read_batch(tb.dump_dir() + "/batch.bin", [B * T, B * T, B])
        ids, chosen = ids.view(B, T), tokens >= 0
    rows = chosen.nonzero().squeeze(1)
    targets = ids.reshape(-1)[rows]
    if head == "mlm":
        loss_fn, head_flops = (lambda x: model.mlm_loss(x, rows, targets)), 2 * rows.numel() * (d * d + d * vocab)
    else:
        loss_fn, head_flops = (lambda x: model.classify_loss(x, labels)), 2 * B * (d * d + d * 2)
    timed = tb.time_training(model, loss_fn, ids, lr, warmup, total, steps, bf16)
    print(tb.train_result(size, pe, threads, bf16, B * T, tb.encoder_flops(L, d, inter, B, T) + head_flops, timed,
                          steps, model))

if __name__ == "__main__":
    main()
