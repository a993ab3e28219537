"""Framework-free parts shared by the Python peers (pytorch_run.py, jax_run.py): the corpus,
the reference epoch sampler (bit-for-bit the C++ one: std::seed_seq + std::mt19937_64), the
flag set, FLOP accounting and the result files (the same contract as bench's)."""
import argparse
import json
import math
import os
import platform
import socket
import statistics
import sys
import time
import zipfile

SCHEMA_VERSION = 1
MASK32, MASK64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def seed_seq_generate(seeds, n):
    """std::seed_seq::generate for n 32-bit words (C++ [rand.util.seedseq])."""
    v = [s & MASK32 for s in seeds]
    s = len(v)
    b = [0x8B8B8B8B] * n
    t = 11 if n >= 623 else 7 if n >= 68 else 5 if n >= 39 else 3 if n >= 7 else (n - 1) // 2
    p = (n - t) // 2
    q = p + t
    m = max(s + 1, n)
    T = lambda x: x ^ (x >> 27)
    for k in range(m):
        r1 = (1664525 * T(b[k % n] ^ b[(k + p) % n] ^ b[(k - 1) % n])) & MASK32
        if k == 0:
            r2 = (r1 + s) & MASK32
        elif k <= s:
            r2 = (r1 + k % n + v[k - 1]) & MASK32
        else:
            r2 = (r1 + k % n) & MASK32
        b[(k + p) % n] = (b[(k + p) % n] + r1) & MASK32
        b[(k + q) % n] = (b[(k + q) % n] + r2) & MASK32
        b[k % n] = r2
    for k in range(m, m + n):
        r3 = (1566083941 * T((b[k % n] + b[(k + p) % n] + b[(k - 1) % n]) & MASK32)) & MASK32
        r4 = (r3 - k % n) & MASK32
        b[(k + p) % n] ^= r3
        b[(k + q) % n] ^= r4
        b[k % n] = r4
    return b


class Mt19937_64:
    """std::mt19937_64 seeded from a std::seed_seq."""
    N, M = 312, 156
    A = 0xB5026F5AA96619E9
    UPPER, LOWER = (MASK64 << 31) & MASK64, (1 << 31) - 1

    def __init__(self, seeds):
        w = seed_seq_generate(seeds, 2 * self.N)
        self.x = [w[2 * i] | (w[2 * i + 1] << 32) for i in range(self.N)]
        self.i = self.N

    def _twist(self):
        x, N, M = self.x, self.N, self.M
        for i in range(N):
            y = (x[i] & self.UPPER) | (x[(i + 1) % N] & self.LOWER)
            x[i] = x[(i + M) % N] ^ (y >> 1) ^ (self.A if y & 1 else 0)
        self.i = 0

    def __call__(self):
        if self.i >= self.N:
            self._twist()
        z = self.x[self.i]
        self.i += 1
        z ^= (z >> 29) & 0x5555555555555555
        z ^= (z << 17) & 0x71D67FFFEDA60000
        z ^= (z << 37) & 0xFFF7EEE000000000
        z ^= z >> 43
        return z & MASK64


def plan_epoch(seed, epoch, train_end, seq_len, train_begin=0):
    """(offset, shuffled slice starts) of one epoch, identical to EpochSampler::plan."""
    rng = Mt19937_64([seed, epoch, 0x7B])
    offset = rng() % seq_len
    first = train_begin + offset
    count = max((train_end - first) // seq_len, 0)
    starts = [first + i * seq_len for i in range(count)]
    for i in range(count - 1, 0, -1):
        j = rng() % (i + 1)
        starts[i], starts[j] = starts[j], starts[i]
    return offset, starts


class Sampler:
    """Full batches of slice starts, moving through epochs like the C++ sampler."""

    def __init__(self, seed, train_end, seq_len, batch_size):
        self.seed, self.train_end, self.seq_len, self.batch = seed, train_end, seq_len, batch_size
        self.epoch, self.index = 0, 0
        self.starts = plan_epoch(seed, 0, train_end, seq_len)[1]

    def next_batch(self):
        while self.index >= len(self.starts) // self.batch:
            self.epoch += 1
            self.index = 0
            self.starts = plan_epoch(self.seed, self.epoch, self.train_end, self.seq_len)[1]
        out = self.starts[self.index * self.batch:(self.index + 1) * self.batch]
        self.index += 1
        return out


def load_corpus(path):
    """bytes of a raw file, or of the single member of a zip (like bench's --data)."""
    if not path:
        sys.exit("error: --data is required (bench --export_corpus FILE writes bench's embedded "
                 "corpus, so both sides read the same bytes)")
    if not os.path.isfile(path):
        sys.exit(f"error: --data: '{path}' is not a file")
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            members = [i for i in z.infolist() if not i.is_dir()]
            if len(members) != 1:
                sys.exit(f"error: --data: '{path}' holds {len(members)} members; allowed: one")
            return z.read(members[0]), f"{path}!{members[0].filename}"
    with open(path, "rb") as f:
        return f.read(), path


def validation_batches(valid_begin, valid_end, seq_len, batch_size, max_batches):
    batches, batch = [], []
    for s in range(valid_begin, valid_end - seq_len + 1, seq_len):
        batch.append(s)
        if len(batch) == batch_size:
            batches.append(batch)
            batch = []
            if max_batches and len(batches) == max_batches:
                return batches
    if batch:
        batches.append(batch)
    return batches


# bench's flag table, as `bench --help --json` exports it (scripts/peers/flags.json; a test
# fails when the file and bench's table differ: regenerate it with
# `build/bench --help --json > scripts/peers/flags.json`).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "flags.json")) as _f:
    BENCH_FLAGS = {f["name"]: f for f in json.load(_f)["flags"]}

# The bench flags the peers take, each with bench's default and choices, except where a peer
# means something else by it (PEER_DIFFERS: its folder prefix, and --compile, which is 0|1
# for torch.compile / jax.jit) or accepts less (--dropout_impl: the framework's own dropout).
PEER_FLAGS = ["preset", "model", "norm_first", "dtype", "num_layer", "flash", "compile", "save_dir",
              "overwrite", "seq_len", "d_model", "num_heads", "ff_dim", "dropout",
              "dropout_impl", "batch_size", "lr", "steps", "data", "valid_bytes", "device",
              "threads", "seed", "log_every", "eval_every", "eval_batches", "warmup_steps",
              "peak_tflops"]
PEER_DIFFERS = {"save_dir": "runs/peer", "compile": 0}
PEER_CHOICES = {"compile": [0, 1], "dropout_impl": ["auto", "native"]}

# bench's --preset quick (the table's "quick" values); explicit flags override it.
QUICK = {n: BENCH_FLAGS[n]["quick"] for n in PEER_FLAGS
         if n != "preset" and BENCH_FLAGS[n]["quick"] != BENCH_FLAGS[n]["default"]}


def arg_parser(description, accepts=None):
    """The bench flags the peers share, with bench's defaults (from its flag table). accepts:
    {flag: (values, help)} for flags a peer takes fewer values of than bench: --help lists only
    those (the peer's own check names what it runs instead of the others)."""
    accepts = accepts or {}
    p = argparse.ArgumentParser(description=description)
    types = {"int": int, "number": float, "text": str, "switch": int}
    for name in PEER_FLAGS:
        f = BENCH_FLAGS[name]
        default = PEER_DIFFERS.get(name, f["default"])
        if f["kind"] == "switch":  # 0|1 on the command line, as bench takes them
            default = int(default)
        choices = PEER_CHOICES.get(name) or f["choices"] or ([0, 1] if f["kind"] == "switch"
                                                             else None)
        help_text = ("accepted for bench's flag set; the peers always use their framework's "
                     "dropout" if name == "dropout_impl" else f["help"].replace("%", "%%"))
        if name == "compile":
            help_text = "0 | 1: the framework's compiler (torch.compile with inductor)"
        if name == "dtype":
            help_text = "float32 | float16 (autocast, loss-scaled) | bfloat16 (autocast)"
        if name == "save_dir":
            help_text = ("run folder prefix; the folder is "
                         "{save_dir}_{model}_layer{N}_{dtype}[_compiled][_flash]")
        metavar = None
        if name in accepts:
            values, help_text = accepts[name]
            metavar = "{" + ",".join(str(v) for v in values) + "}"
        kind = "int" if name == "compile" else f["kind"]
        p.add_argument("--" + name, type=types[kind], default=default, choices=choices,
                       metavar=metavar, help=help_text)
    return p


def parse_args(parser, argv=None):
    """Parses with bench's preset rule: --preset quick changes the defaults, flags win."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset", default="reference", choices=["reference", "quick"])
    known, _ = pre.parse_known_args(argv)
    if known.preset == "quick":
        parser.set_defaults(**QUICK)
    args = parser.parse_args(argv)
    check_args(args, parser)
    return args


def check_args(args, parser):
    if args.num_layer < 1 or args.seq_len < 2 or args.batch_size < 1 or args.steps < 1:
        parser.error("num_layer, batch_size and steps must be >= 1 and seq_len >= 2")
    if not args.norm_first and args.model != "torch":
        parser.error(f"--norm_first: 0 is not allowed with --model {args.model} (its blocks are "
                     "pre-LayerNorm); use --model torch or --norm_first 1")
    if args.d_model % args.num_heads:
        parser.error(f"--d_model {args.d_model} is not divisible by --num_heads {args.num_heads}")
    if not 0 <= args.dropout < 1 or args.lr <= 0 or args.warmup_steps >= args.steps:
        parser.error("dropout must be in [0, 1), lr > 0 and warmup_steps < steps")


def flops_per_token(a):
    matmul = a.num_layer * (4 * a.d_model ** 2 + 2 * a.d_model * a.ff_dim) + a.d_model * 256
    return 6.0 * matmul + 12.0 * a.num_layer * a.seq_len * a.d_model


def run_dir_name(a):
    name = f"{a.save_dir}_{a.model}_layer{a.num_layer}_{a.dtype}"
    return name + ("_compiled" if a.compile else "") + ("_flash" if a.flash else "")


def write_json_atomic(path, value):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=2, allow_nan=False, default=str)
        f.write("\n")
    os.replace(tmp, path)


def finite_or_none(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


class Results:
    """The run folder: config.json, env.json, metrics.jsonl (flushed), summary.json (atomic)."""

    def __init__(self, args):
        self.dir = run_dir_name(args)
        if os.path.isdir(self.dir) and os.listdir(self.dir) and not args.overwrite:
            sys.exit(f"error: --save_dir: run folder '{self.dir}' already holds results; choose "
                     "another --save_dir or pass --overwrite 1")
        os.makedirs(self.dir, exist_ok=True)
        self.metrics = open(os.path.join(self.dir, "metrics.jsonl"), "w")

    def write(self, name, value):
        value = {k: finite_or_none(v) if isinstance(v, float) else v for k, v in value.items()}
        write_json_atomic(os.path.join(self.dir, name), dict(value, schema_version=SCHEMA_VERSION))

    def metric(self, **line):
        line = {k: finite_or_none(v) if isinstance(v, float) else v for k, v in line.items()}
        self.metrics.write(json.dumps(dict(line, schema_version=SCHEMA_VERSION)) + "\n")
        self.metrics.flush()


# The variables that steer the CPU thread pools (OpenMP, MKL, oneDNN, XLA); bench's env.json
# records the same list, so a comparison table can show that every column ran alike.
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "GOMP_SPINCOUNT",
                   "KMP_BLOCKTIME", "MKL_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "XLA_FLAGS")


def thread_env():
    return {v: os.environ.get(v) for v in THREAD_ENV_VARS}


def base_env(framework_version, device_name, threads):
    return {"libtorch_version": None, "framework_version": framework_version,
            "device_name": device_name, "cuda_version": None, "num_threads": threads,
            "available_cores": len(os.sched_getaffinity(0)), "thread_env": thread_env(),
            "blas": None, "compiler": "python " + platform.python_version(),
            "git_revision": None, "hostname": socket.gethostname(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "cpu"


def peak_rss():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def step_stats(ms):
    if not ms:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(ms), "min": min(ms), "max": max(ms)}


# bench's noise rule (core/cpu_noise.h): a timed step is disturbed when other work took more
# than this share of the cores' time meanwhile; unstable above these shares.
DISTURBED_SHARE, UNSTABLE_DISTURBED, UNSTABLE_CV = 0.10, 0.25, 0.15


def cpu_sample():
    """(busy + steal seconds of all CPUs from /proc/stat, steal seconds, this process's CPU
    seconds), or None where /proc/stat cannot be read."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    busy = (v[0] + v[1] + v[2] + v[5] + v[6]) * tick
    steal = (v[7] if len(v) > 7 else 0) * tick
    return busy, steal, time.process_time()


def noise_summary(step_s, other):
    """summary.json's "noise" as bench writes it, from the timed steps' seconds and the other
    work's (other, steal) seconds during each."""
    n = min(len(step_s), len(other))
    if n == 0:
        return None
    cores, tick = os.cpu_count() or 1, 1.0 / os.sysconf("SC_CLK_TCK")
    mean = sum(step_s[:n]) / n
    cv = math.sqrt(max(0.0, sum(s * s for s in step_s[:n]) / n - mean * mean)) / mean if mean else 0
    wall = sum(s * cores for s in step_s[:n])
    disturbed = sum(1 for s, (o, st) in zip(step_s, other)
                    if o + st > DISTURBED_SHARE * s * cores + tick * cores)
    share = disturbed / n
    return {"timed_steps": n, "disturbed_step_share": share, "step_time_cv": cv,
            "other_cpu_share": sum(o for o, _ in other[:n]) / wall if wall else 0.0,
            "steal_share": sum(st for _, st in other[:n]) / wall if wall else 0.0,
            "disturbed_threshold": DISTURBED_SHARE, "cores": cores,
            "unstable": share > UNSTABLE_DISTURBED or cv > UNSTABLE_CV}


class StepLog:
    """bench's timing rules for the peers: warm-up kept apart, windows of log_every steps
    (metrics.jsonl + stderr, with window_steps and includes_warmup), divergence on a
    non-finite loss, evaluations, the noise check, summary.json."""

    def __init__(self, args, results):
        self.a, self.res = args, results
        self.timed, self.warm_s, self.step, self.status = [], 0.0, 0, "completed"
        self.first_s = None  # the first step: where torch.compile / jax.jit compile
        self.last, self.vloss = float("nan"), float("nan")
        self.wl, self.ws, self.wn, self.ww = 0.0, 0.0, 0, False
        self.wtl, self.wtn = 0.0, 0  # the window's timed steps (no warm-up)
        self.wls = []  # the window's every step loss (metrics.jsonl step_losses)
        self.timed_loss, self.timed_steps = float("nan"), 0
        self.other = []  # per timed step: (other work's, steal) CPU seconds
        self.cpu = cpu_sample()
        self.start = time.perf_counter()

    def before(self):
        """Call just before a step's t0: the CPU sample the noise check compares against."""
        self.cpu = cpu_sample()

    def record(self, t0, t1, loss):
        """One step that ran from t0 to t1 (device synchronized); False once diverged."""
        a = self.a
        self.step += 1
        after = cpu_sample()
        if self.step == 1:
            self.first_s = t1 - t0
            # bench's step-0 record: the loss before any update, where the loss curves start.
            self.res.metric(step=0, initial_loss=loss, initial_bpb=loss / math.log(2),
                            elapsed_s=0.0)
        warm = self.step <= a.warmup_steps
        if warm:
            self.warm_s += t1 - t0
        else:
            self.timed.append((t1 - t0) * 1e3)
            if self.cpu and after:
                busy, steal = after[0] - self.cpu[0], after[1] - self.cpu[1]
                self.other.append((max(0.0, busy - (after[2] - self.cpu[2])), max(0.0, steal)))
            self.wtl, self.wtn = self.wtl + loss, self.wtn + 1
        self.cpu = after
        self.wl, self.ws, self.wn = self.wl + loss, self.ws + t1 - t0, self.wn + 1
        self.ww = self.ww or warm
        self.wls.append(loss)
        if not math.isfinite(loss):
            self.status = "diverged"
            print(f"loss is {loss} at step {self.step}; the run diverged", file=sys.stderr)
            return False
        if self.step % a.log_every == 0 or self.step == a.steps:
            self.last, seq = self.wl / self.wn, a.batch_size * self.wn / self.ws
            if self.wtn:
                self.timed_loss, self.timed_steps = self.wtl / self.wtn, self.wtn
            self.res.metric(step=self.step, loss=self.last, sequences_per_s=seq,
                            tokens_per_s=seq * a.seq_len, elapsed_s=t1 - self.start,
                            window_steps=self.wn, includes_warmup=self.ww,
                            step_losses=[finite_or_none(v) for v in self.wls])
            print(f"step {self.step}/{a.steps}  loss {self.last:.4f}  {seq:.2f} seq/s"
                  + ("  (window includes warm-up)" if self.ww else ""), file=sys.stderr)
            self.wl, self.ws, self.wn, self.ww, self.wtl, self.wtn = 0.0, 0.0, 0, False, 0.0, 0
            self.wls = []
        return True

    def evaluation(self, valid_loss):
        self.vloss = valid_loss
        self.res.metric(step=self.step, valid_loss=valid_loss, valid_bpb=valid_loss / math.log(2))

    def write_summary(self, params, peak_flops, peak_source, memory_bytes, backend):
        a, st = self.a, step_stats(self.timed)
        seq = a.batch_size * 1e3 / st["median"] if st["median"] else None
        fpt = flops_per_token(a)
        # MFU as bench reports it: never above 100% (a run faster than its peak means the
        # peak is wrong, and the summary says so instead).
        mfu = seq * a.seq_len * fpt / peak_flops if seq and peak_flops else None
        unreliable = mfu is not None and mfu > 1.0
        self.res.write("summary.json", {
            "status": self.status, "params": params, "steps_done": self.step,
            "steps_timed": len(self.timed), "step_time_ms": st,
            "step_time_ms_samples": self.timed, "sequences_per_s": seq,
            "tokens_per_s": seq * a.seq_len if seq else None, "flops_per_token": fpt,
            "mfu": None if unreliable else mfu, "peak_unreliable": unreliable,
            "peak_flops": peak_flops or None, "peak_flops_source": peak_source,
            "peak_memory_bytes": memory_bytes, "warmup_seconds": self.warm_s,
            # the first step less a typical step: the compiler's share of the warm-up
            "compile_seconds": (max(0.0, self.first_s - st["median"] / 1e3)
                                if backend != "eager" and self.first_s and st["median"]
                                else None),
            "compile_backend": backend, "noise": noise_summary([t / 1e3 for t in self.timed],
                                                              self.other),
            # as bench: both over the timed steps of the last window that had any
            "final_train_loss": self.timed_loss, "final_train_bpb": self.timed_loss / math.log(2),
            "final_train_steps": self.timed_steps, "final_valid_loss": self.vloss,
            "final_valid_bpb": self.vloss / math.log(2)})
        if seq:
            # The table's figure: the median timed step (warm-up and compiling apart), which a
            # window line holding the warm-up does not show.
            print(f"{seq:.2f} seq/s (median of {len(self.timed)} timed steps; warm-up "
                  f"{self.warm_s:.1f} s apart)", file=sys.stderr)
        print(f"results: {self.res.dir}")
        return 0 if self.status == "completed" else 1
