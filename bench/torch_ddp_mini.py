"""PyTorch peer of `mpirun -np N posemb train` (bench/mpi): torch_train_mini's
training step under DistributedDataParallel over N processes on this
machine (the gloo backend, PyTorch's CPU one), each computing 1/N of the
global batch of the bench size, DDP averaging the gradients while the
backward pass runs. Prints one JSON line (rank 0's timing, the global
batch's tokens per second) with the fields of bench/torch_train_mini.py.
usage: torch_ddp_mini.py PE SIZE RANKS THREADS STEPS"""
import os
import socket
import sys

sys.dont_write_bytecode = True  # no __pycache__ in bench/
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import torch_bert as tb  # noqa: E402
from torch_train_mini import SIZES  # noqa: E402


def rank_main(rank, world, port, pe, size, threads, steps, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    L, d, h, inter, vocab, types, max_pos, B, T, head, lr, warmup, total = SIZES[size]
    tb.set_threads(threads)
    torch.manual_seed(0)  # every rank builds the same model; DDP checks it
    model = tb.Bert(dict(layers=L, hidden=d, heads=h, inter=inter, vocab=vocab, type_vocab=types,
                         max_position=max_pos), pe, head)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(vocab // 4, vocab, (B, T), generator=g)  # the fixed global batch of torch_train_mini
    chosen = torch.rand(B * T, generator=g) < 0.15
    share = B // world
    ids = ids[rank * share:(rank + 1) * share]
    chosen = chosen.view(B, T)[rank * share:(rank + 1) * share].reshape(-1)
    rows = chosen.nonzero().squeeze(1)
    targets = ids.reshape(-1)[rows]
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    timed = tb.time_training(ddp, lambda x: model.mlm_loss(x, rows, targets), ids, lr, warmup, total, steps, False)
    head_flops = 2 * rows.numel() * (d * d + d * vocab) * world
    if rank == 0:
        line = tb.train_result(size, pe, threads, False, B * T, tb.encoder_flops(L, d, inter, B, T) + head_flops,
                               timed, steps, model, ranks=world, backend="gloo")
        with open(out, "w") as f:
            f.write(line)
    dist.destroy_process_group()


def main():
    pe, size, world, threads, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    if SIZES[size][9] != "mlm" or SIZES[size][7] % world:
        sys.exit(f"torch_ddp_mini: {size}: an MLM size whose batch splits over {world} ranks is needed")
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = f"/tmp/torch_ddp_mini.{os.getpid()}.json"
    mp.spawn(rank_main, args=(world, port, pe, size, threads, steps, out), nprocs=world)
    with open(out) as f:
        print(f.read())
    os.remove(out)


if __name__ == "__main__":
    main()
