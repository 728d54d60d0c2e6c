"""PyTorch peer of bench/forward_base.c: the forward pass of a BERT encoder, no
head, eval mode, under torch.inference_mode (no autograd bookkeeping), at the
same sizes (forward-base: BERT-base, 8 x 128 tokens; forward-tiny). The model
and the PEs are in bench/torch_bert.py. Prints one JSON line with the same
fields. With POSEMB_BENCH_DUMP=DIR it runs the weights and batch that
bench_forward_base wrote there (bench/run --same-init). usage: torch_forward_base.py PE SIZE THREADS STEPS [bf16]

bf16: under torch.autocast("cpu", torch.bfloat16) (bf16 products through oneDNN).
POSEMB_TORCH_JIT=1: the model traced and frozen (torch.jit.trace, torch.jit.freeze),
which lets PyTorch fold and fuse the graph for inference."""
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in bench/
import torch  # noqa: E402

import torch_bert as tb  # noqa: E402

# layers, hidden, heads, inter, vocab, batch, len: forward_base.c's SIZES (BERT-base: 512 positions, 2 token types)
SIZES = {
    "forward-base": (12, 768, 12, 3072, 30522, 8, 128),
    "forward-tiny": (2, 256, 4, 1024, 30522, 4, 128),
}


def main():
    pe, size, threads, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    bf16 = len(sys.argv) > 5 and sys.argv[5] == "bf16"
    L, d, h, inter, vocab, B, T = SIZES[size]
    tb.set_threads(threads)
    torch.manual_seed(0)
    cfg = dict(layers=L, hidden=d, heads=h, inter=inter, vocab=vocab, type_vocab=2, max_position=512)
    model = tb.Bert(cfg, pe, None).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(vocab // 4, vocab, (B, T), generator=g)
    if tb.dump_dir():  # bench/run --same-init: posemb's initial weights and batch
        tb.load_posemb(model, tb.dump_dir() + "/model.safetensors")
        ids = tb.read_batch(tb.dump_dir() + "/batch.bin", [B * T])[0].view(B, T)
    peak_before = tb.sgemm_peak()  # the peak moves with the host's load: before and after, MFU against the higher
    times = []
    jit = os.environ.get("POSEMB_TORCH_JIT") == "1"
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        run = torch.jit.freeze(torch.jit.trace(model, ids, check_trace=False)) if jit else model
        for i in range(steps + 2):  # two warm-up passes (a frozen graph optimises itself on the first)
            t0 = time.perf_counter()
            out = run(ids).float()
            if i >= 2:
                times.append(1e3 * (time.perf_counter() - t0))
        mean_abs, mean_c0 = out.abs().mean().item(), out[..., 0].mean().item()
    med = tb.median(times)
    gflops = tb.encoder_flops(L, d, inter, B, T) / (med / 1e3) / 1e9
    peak_after = tb.sgemm_peak()
    peak = max(peak_before, peak_after)
    print(json.dumps({"engine": "pytorch", "bench": size, "pe": pe, "threads": threads, "precision": "bf16" if bf16 else "fp32", "ms_per_batch": round(med, 3),
                      "tokens_per_s": round(B * T / (med / 1e3), 1), "gflops": round(gflops, 3),
                      "sgemm_peak_gflops": round(peak, 2), "sgemm_peak_before": round(peak_before, 2),
                      "sgemm_peak_after": round(peak_after, 2), "mfu": round(gflops / peak, 4),
                      "max_rss_kb": tb.max_rss_kb(), "out_mean_abs": round(mean_abs, 6), "out_mean_c0": round(mean_c0, 6), "steps": steps,
                      "params": model.n_params(), "torch": torch.__version__, "jit": jit, **tb.tuning()}))


if __name__ == "__main__":
    main()
