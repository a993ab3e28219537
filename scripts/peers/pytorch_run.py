#!/usr/bin/env python3
"""The trainbench reference workload in PyTorch-Python: same model, sampler, optimizer, timing
rules and result files as bench, so `bench report` sets C++ and Python side by side.
Runs on the project's torch 2.11 (CPU or CUDA). --compile 1 uses torch.compile with its
default (inductor) backend, as the original benchmark does, in its default mode or, with
--compile_mode max-autotune, at its strongest (GEMM templates autotuned; CUDA graphs on a GPU);
the compile time is the first step's excess over a timed step (summary.json compile_seconds). --flash 1 uses
scaled_dot_product_attention (its flash attention kernel on the CPU as on CUDA).
Example: pytorch_run.py --data corpus.bin --num_layer 8 --batch_size 8 --steps 12"""
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.require("pytorch_run.py", "torch")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Block(nn.Module):
    """Pre-LN block: x + drop(attn(LN1(x))), x + drop(FF(LN2(x))); x: [S, B, d]."""

    def __init__(self, a):
        super().__init__()
        self.h, self.p, self.flash = a.num_heads, a.dropout, a.flash
        self.ln1, self.ln2 = nn.LayerNorm(a.d_model), nn.LayerNorm(a.d_model)
        self.qkv, self.out = nn.Linear(a.d_model, 3 * a.d_model), nn.Linear(a.d_model, a.d_model)
        self.ff1, self.ff2 = nn.Linear(a.d_model, a.ff_dim), nn.Linear(a.ff_dim, a.d_model)

    def attention(self, x, mask):
        S, B, d = x.shape
        q, k, v = self.qkv(x).view(S, B, 3, self.h, d // self.h).permute(2, 1, 3, 0, 4)
        if self.flash:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            w = torch.softmax(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(d // self.h)) + mask, -1)
            o = w.to(v.dtype) @ v
        return o.permute(2, 0, 1, 3).reshape(S, B, d)

    def forward(self, x, mask):
        x = x + F.dropout(self.out(self.attention(self.ln1(x), mask)), self.p, self.training)
        f = self.ff2(F.dropout(F.relu(self.ff1(self.ln2(x))), self.p, self.training))
        return x + F.dropout(f, self.p, self.training)


class ByteLM(nn.Module):
    """bytes [S, B] → logits [S, B, 256]; handcraft (pre-LN) or torch (nn.TransformerEncoder,
    pre-LN with --norm_first 1 as the original, post-LN with 0: bench's torch model either way)."""

    def __init__(self, a):
        super().__init__()
        self.a = a
        self.embed = nn.Embedding(256, a.d_model)
        self.pos = nn.Parameter(torch.randn(a.seq_len, a.d_model))
        self.head = nn.Linear(a.d_model, 256)
        if a.model == "handcraft":
            self.blocks = nn.ModuleList(Block(a) for _ in range(a.num_layer))
        else:
            layer = nn.TransformerEncoderLayer(a.d_model, a.num_heads, a.ff_dim, a.dropout,
                                               norm_first=bool(a.norm_first))
            self.encoder = nn.TransformerEncoder(layer, a.num_layer, enable_nested_tensor=False)

    def forward(self, x):
        S = x.shape[0]
        e = self.embed(x)
        e = torch.cat([torch.zeros_like(e[:1]), e[:-1]], 0) + self.pos[:S].unsqueeze(1)
        h = F.dropout(e, self.a.dropout, self.training)
        mask = torch.full((S, S), float("-inf"), device=x.device).triu(1)
        if self.a.model == "handcraft":
            for b in self.blocks:
                h = b(h, mask)
        else:
            h = self.encoder(h, mask)
        return self.head(h)


def main():
    parser = common.arg_parser(__doc__)
    parser.add_argument("--compile_mode", default="default", choices=["default", "max-autotune"],
                        help="torch.compile's mode with --compile 1 (a 'compiled max-autotune' "
                        "row in reports)")
    a = common.parse_args(parser)
    if a.compile_mode != "default" and not a.compile:
        parser.error(f"--compile_mode: {a.compile_mode} is not allowed with --compile 0; "
                     "use --compile 1")
    device = torch.device("cuda" if a.device == "cuda" or (a.device == "auto" and
                                                             torch.cuda.is_available()) else "cpu")
    if a.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device")
    threads = a.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    data, source = common.load_corpus(a.data)
    valid = a.valid_bytes if a.valid_bytes >= 0 else min(5_000_000, len(data) // 20)
    train_end = len(data) - valid
    if train_end < a.batch_size * a.seq_len + a.seq_len - 1 or valid < a.seq_len:
        parser.error(f"--data: '{source}' is too small for one batch plus the held-out range")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(a.seed)
    model = ByteLM(a).to(device)
    params = sum(p.numel() for p in model.parameters())
    mode = None if a.compile_mode == "default" else a.compile_mode
    step_model = torch.compile(model, mode=mode) if a.compile else model
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    amp = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(a.dtype)
    scaler = torch.amp.GradScaler(device.type) if a.dtype == "float16" else None
    corpus = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    sampler = common.Sampler(a.seed, train_end, a.seq_len, a.batch_size)
    offsets = torch.arange(a.seq_len)

    def batch(starts):  # [S, B] int64
        idx = torch.tensor(starts).unsqueeze(0) + offsets.unsqueeze(1)
        return corpus[idx].long().to(device, non_blocking=True)

    def loss_of(net, x):
        with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
            return F.cross_entropy(net(x).reshape(-1, 256).float(), x.reshape(-1))

    def sync_now():
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter()

    def evaluate():
        model.eval()
        total, n = 0.0, 0
        with torch.no_grad():
            for starts in common.validation_batches(train_end, len(data), a.seq_len,
                                                    a.batch_size, a.eval_batches):
                x = batch(starts)
                total += loss_of(model, x).item() * x.numel()
                n += x.numel()
        model.train()
        return total / n

    res = common.Results(a)
    cfg = dict(vars(a), framework="pytorch", device=device.type, threads=threads,
               valid_bytes=valid, run_dir=res.dir, corpus_source=source, corpus_bytes=len(data),
               params=params)
    res.write("config.json", cfg)
    dev_name = torch.cuda.get_device_name(device) if device.type == "cuda" else common.cpu_name()
    env = common.base_env("torch " + torch.__version__, dev_name, threads, ("torch",))
    env["cuda_version"] = torch.version.cuda if device.type == "cuda" else None
    env["blas"] = blas_info()
    res.write("env.json", env)
    peak, peak_src = common.mfu_peak(a, "pytorch_run")
    log = common.StepLog(a, res)
    log.peak_flops = peak
    if device.type == "cuda":
        log.memory = lambda: torch.cuda.max_memory_allocated(device)
        uuid = str(torch.cuda.get_device_properties(device).uuid)
        log.energy = common.Energy(uuid if uuid.startswith("GPU-") else "GPU-" + uuid)

    def step():
        t0 = sync_now()
        x = batch(sampler.next_batch())
        opt.zero_grad(set_to_none=True)
        loss = loss_of(step_model, x)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        lv = loss.item()
        return t0, sync_now(), lv

    log.run(step, evaluate)
    mem = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else common.peak_rss()
    manifest = {"framework": "pytorch", "implementation": "torch.compile" if a.compile else "eager",
                "compile_options": f"mode={a.compile_mode}" if a.compile else "",
                "tf32": torch.backends.cuda.matmul.allow_tf32 if device.type == "cuda" else None,
                "compute": f"autocast {a.dtype}" if amp else a.dtype,
                "master_weights": str(next(model.parameters()).dtype).removeprefix("torch."),
                "optimizer": adam_kind(opt), "threads": threads,
                "attention": attention_kind(a, device, amp),
                "data_in_timer": True}  # the batch is gathered and copied after t0
    return log.write_summary(params, peak, peak_src, mem,
                             ("torch.compile" + (f" {mode}" if mode else "")) if a.compile
                             else "eager", manifest)


def adam_kind(opt):
    """Which Adam torch.optim runs here: with neither foreach nor fused given, its own default
    (the foreach kernels where every parameter is on a device that has them, as CUDA; else the
    for-loop, as on the CPU)."""
    from torch.optim.optimizer import _default_to_fused_or_foreach
    g = opt.param_groups[0]
    foreach = g["foreach"]
    if not g["fused"] and foreach is None:
        foreach = _default_to_fused_or_foreach(g["params"], g["differentiable"], False)[1]
    return f"torch.optim.Adam ({'fused' if g['fused'] else 'foreach' if foreach else 'for-loop'})"


def attention_kind(a, device, amp):
    """naive, or scaled_dot_product_attention and the kernel LibTorch picks for it (math, flash,
    ...: its _fused_sdp_choice for q, k, v as the run's are); the torch model's
    nn.MultiheadAttention calls it causal, with the run's dropout (math on the CPU when > 0)."""
    if a.model == "handcraft" and not a.flash:
        return "naive"
    q = torch.zeros(1, a.num_heads, a.seq_len, a.d_model // a.num_heads, device=device,
                    dtype=amp or torch.float32, requires_grad=True)
    choice = torch._fused_sdp_choice(q, q, q, None, a.dropout if a.model == "torch" else 0.0, True)
    names = ["math", "flash", "efficient", "cudnn", "overrideable"]
    name = names[choice] if 0 <= choice < len(names) else f"backend_{choice}"
    return f"sdpa {name}" + (" (nn.MultiheadAttention)" if a.model == "torch" else "")


def blas_info():
    """The BLAS and oneDNN that torch was built with, worded as bench's env.json words them."""
    import re
    cfg = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=([^,\s]+)", cfg)
    mkl = re.search(r"Math Kernel Library Version (\S+)", cfg)
    dnn = re.search(r"MKL-DNN (v\S+)", cfg)
    return (f"{blas[1] if blas else 'unknown'}" + (f" {mkl[1]}" if mkl else "") +
            (f", oneDNN {dnn[1]}" if dnn else ""))


if __name__ == "__main__":
    sys.exit(main())
