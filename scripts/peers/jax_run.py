#!/usr/bin/env python3
"""The trainbench reference workload in JAX/flax with optax Adam: the handcraft model (pre-LN,
one qkv projection, naive causal attention), the same sampler and the same result files as bench.
Linear weights use variance scaling (scale 1/3, fan_in, uniform), which equals PyTorch's
default uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)); biases likewise uniform in that range.
float32 and bfloat16 (parameters float32, compute bfloat16, LayerNorm and softmax float32).
Runs on the CPU (jaxlib) and on a GPU where jax has one; the step is one jax.jit, whose compile
time is the first step's excess over a timed step (summary.json compile_seconds). The loop is
common.StepLog.run's, as pytorch_run.py's: evaluations every --eval_every steps and at the end,
time to --target_bpb.
--threads N: XLA:CPU sizes its thread pool from the cores the process may use, so the process
is confined to N of them before jax starts.
Example: jax_run.py --data corpus.bin --num_layer 8 --batch_size 100 --steps 300"""
import argparse
import importlib.metadata
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def confine_threads(argv):
    """Before jax starts: --threads N keeps the process (and so XLA's pool) on N cores."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=0)
    n = pre.parse_known_args(argv)[0].threads
    cores = sorted(os.sched_getaffinity(0))
    if 0 < n < len(cores):
        os.sched_setaffinity(0, cores[:n])


confine_threads(sys.argv[1:])
common.require("jax_run.py", "jax", "flax", "optax", "numpy")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import flax.linen as nn  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

TORCH_INIT = nn.initializers.variance_scaling(1 / 3, "fan_in", "uniform")


def torch_bias_init(fan_in):
    bound = 1 / math.sqrt(fan_in)
    return lambda key, shape, dtype=jnp.float32: jax.random.uniform(key, shape, dtype, -bound,
                                                                    bound)


def dense(features, fan_in, dtype, name):
    return nn.Dense(features, dtype=dtype, kernel_init=TORCH_INIT,
                    bias_init=torch_bias_init(fan_in), name=name)


class Block(nn.Module):
    d: int
    heads: int
    ff: int
    p: float
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, mask, train):  # x: [S, B, d]
        S, B, d = x.shape
        hd = d // self.heads
        drop = nn.Dropout(self.p, deterministic=not train)
        a = nn.LayerNorm(epsilon=1e-5, dtype=jnp.float32, name="ln1")(x)
        qkv = dense(3 * d, d, self.dtype, "qkv")(a).reshape(S, B, 3, self.heads, hd)
        q, k, v = [qkv[:, :, i].transpose(1, 2, 0, 3) for i in range(3)]  # [B, H, S, hd]
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k).astype(jnp.float32) / math.sqrt(hd) + mask
        w = jax.nn.softmax(scores, -1).astype(v.dtype)
        o = jnp.einsum("bhqk,bhkd->bhqd", w, v).transpose(2, 0, 1, 3).reshape(S, B, d)
        x = x + drop(dense(d, d, self.dtype, "out")(o))
        f = nn.LayerNorm(epsilon=1e-5, dtype=jnp.float32, name="ln2")(x)
        f = drop(nn.relu(dense(self.ff, d, self.dtype, "ff1")(f)))
        return x + drop(dense(d, self.ff, self.dtype, "ff2")(f))


class ByteLM(nn.Module):
    a: object
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x, train):  # x: [S, B] int32 → [S, B, 256]
        a = self.a
        S = x.shape[0]
        e = nn.Embed(256, a.d_model, embedding_init=nn.initializers.normal(1.0), name="embed")(x)
        e = jnp.concatenate([jnp.zeros_like(e[:1]), e[:-1]], 0)
        pos = self.param("pos", nn.initializers.normal(1.0), (a.seq_len, a.d_model))
        h = nn.Dropout(a.dropout, deterministic=not train)(e + pos[:S][:, None, :])
        mask = jnp.triu(jnp.full((S, S), -jnp.inf), 1)
        for i in range(a.num_layer):
            h = Block(a.d_model, a.num_heads, a.ff_dim, a.dropout, self.dtype, name=f"blocks_{i}")(
                h, mask, train)
        return dense(256, a.d_model, self.dtype, "head")(h).astype(jnp.float32)


def main():
    parser = common.arg_parser(__doc__, accepts={
        "model": (["handcraft"], "handcraft (the pre-LN blocks of bench's handcraft model)"),
        "dtype": (["float32", "bfloat16"], "float32 | bfloat16"),
        "flash": ([0], "0 (explicit attention scores)"),
        "compile": ([0], "0 (jax.jit is always on)")})
    a = common.parse_args(parser)
    if a.model != "handcraft" or a.flash or a.compile or a.dtype == "float16":
        parser.error("jax_run.py runs --model handcraft --flash 0 --compile 0 (jit is always on) "
                     "with --dtype float32|bfloat16")
    if a.device == "cpu":  # before jax starts a backend
        jax.config.update("jax_platforms", "cpu")
    platform = jax.devices()[0].platform
    if a.device == "cuda" and platform != "gpu":
        parser.error(f"--device cuda: jax has no GPU here (platform {platform})")
    threads = len(os.sched_getaffinity(0)) if platform == "cpu" else None
    dtype = jnp.bfloat16 if a.dtype == "bfloat16" else jnp.float32
    data, source = common.load_corpus(a.data)
    valid = a.valid_bytes if a.valid_bytes >= 0 else min(5_000_000, len(data) // 20)
    train_end = len(data) - valid
    corpus = np.frombuffer(data, dtype=np.uint8)
    sampler = common.Sampler(a.seed, train_end, a.seq_len, a.batch_size)
    offsets = np.arange(a.seq_len)[:, None]

    def batch(starts):
        return jnp.asarray(corpus[np.asarray(starts)[None, :] + offsets].astype(np.int32))

    model = ByteLM(a, dtype)
    key = jax.random.PRNGKey(a.seed)
    params = model.init(key, batch(sampler.next_batch()), False)
    sampler = common.Sampler(a.seed, train_end, a.seq_len, a.batch_size)
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    opt = optax.adam(a.lr)
    opt_state = opt.init(params)

    def loss_fn(p, x, rng, train):
        logits = model.apply(p, x, train, rngs={"dropout": rng})
        return optax.softmax_cross_entropy_with_integer_labels(logits.reshape(-1, 256),
                                                               x.reshape(-1)).mean()

    @jax.jit
    def train_step(p, s, x, rng):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, rng, True)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    eval_loss = jax.jit(lambda p, x: loss_fn(p, x, jax.random.PRNGKey(0), False))

    res = common.Results(a)
    device = "cuda" if platform == "gpu" else platform
    res.write("config.json", dict(vars(a), framework="jax", device=device, threads=threads,
                                  valid_bytes=valid, run_dir=res.dir, corpus_source=source,
                                  corpus_bytes=len(data), params=n_params))
    env = common.base_env("jax " + jax.__version__, common.cpu_name() if platform == "cpu"
                          else jax.devices()[0].device_kind, threads,
                          ("jax", "jaxlib", "flax", "optax"))
    env["blas"] = f"XLA:{platform.upper()} (jaxlib {importlib.metadata.version('jaxlib')})"
    res.write("env.json", env)
    log = common.StepLog(a, res)
    peak, peak_src = common.mfu_peak(a, "jax_run")
    log.peak_flops = peak
    if platform == "gpu":
        log.energy = common.Energy(True)  # JAX names no device NVML knows: the one GPU only
    batches = common.validation_batches(train_end, len(data), a.seq_len, a.batch_size,
                                        a.eval_batches)

    def step():
        nonlocal params, opt_state, key
        key, sub = jax.random.split(key)
        t0 = time.perf_counter()
        params, opt_state, loss = train_step(params, opt_state, batch(sampler.next_batch()), sub)
        lv = float(loss)  # blocks until the step is done
        return t0, time.perf_counter(), lv

    def evaluate():
        tot = sum(float(eval_loss(params, batch(b))) * len(b) for b in batches)
        return tot / sum(len(b) for b in batches)

    log.run(step, evaluate)
    mem = common.peak_rss() if platform == "cpu" else None
    # On a GPU, XLA's default matmul precision lets float32 matmuls run in TF32.
    precision = jax.config.jax_default_matmul_precision
    manifest = {"framework": "jax", "implementation": "jax.jit", "compile_options": "",
                "tf32": precision not in ("highest", "float32") if platform == "gpu" else None,
                "compute": ("float32" if a.dtype == "float32" else
                            "mixed bfloat16 (flax dtype; float32 LayerNorm, softmax)"),
                "master_weights": str(jax.tree_util.tree_leaves(params)[0].dtype),
                "optimizer": "optax.adam", "threads": threads, "attention": "naive",
                "data_in_timer": True}  # the batch is gathered and copied after t0
    return log.write_summary(n_params, peak, peak_src, mem, "jax.jit", manifest)


if __name__ == "__main__":
    sys.exit(main())
