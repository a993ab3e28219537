"""Framework-free parts shared by the Python peers (pytorch_run.py, jax_run.py): the corpus,
the flag set, FLOP accounting, bench's timing rules and noise check, and the result files (the
same contract as bench's); the reference epoch sampler is sampler.py, the TensorBoard event
files board.py (both re-exported here)."""
import argparse
import ctypes
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import zipfile


def require(who, *modules):
    """One line and exit 2 where this Python lacks a framework the peer needs (system python3
    instead of the project's environment), rather than an ImportError's stack."""
    import importlib.util
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print(f"{who}: {sys.executable} has no {', '.join(missing)}; run it with "
              ".venv/bin/python (scripts/install_deps.sh installs it)", file=sys.stderr)
        sys.exit(2)

from bench_export import EXPORT
from board import Board  # noqa: F401  (the peers use common.Board)
from sampler import Mt19937_64, Sampler, plan_epoch, seed_seq_generate  # noqa: F401

SCHEMA_VERSION = 2


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


# bench's flag table and summary.json's fields, as `bench --help --json` exports them.
BENCH_FLAGS = {f["name"]: f for f in EXPORT["flags"]}
# The summary.json keys a peer writes, in bench's order (bench's table marks them "peers"),
# then the peers' own where the table lacks them: "manifest", what the run was (MANIFEST_KEYS).
SUMMARY_KEYS = [f["key"] for f in EXPORT["summary"] if f["peers"]]
SUMMARY_KEYS += [k for k in ("manifest",) if k not in SUMMARY_KEYS]
# summary.json's "manifest": how the peer ran, so a comparison shows whether its columns ran
# alike. The peer gives all but params and first_loss (step 1's loss), which StepLog adds.
MANIFEST_KEYS = ("framework", "implementation", "compile_options", "tf32", "compute",
                 "master_weights", "optimizer", "threads", "attention", "data_in_timer",
                 "params", "first_loss")

# The bench flags the peers take, each with bench's default and choices, except where a peer
# means something else by it (PEER_DIFFERS: its folder prefix, and --compile, which is 0|1
# for torch.compile / jax.jit) or accepts less (--dropout_impl: the framework's own dropout).
PEER_FLAGS = ["preset", "model", "norm_first", "dtype", "num_layer", "flash", "compile", "save_dir",
              "overwrite", "tensorboard", "seq_len", "d_model", "num_heads", "ff_dim", "dropout",
              "dropout_impl", "batch_size", "lr", "steps", "data", "valid_bytes", "device",
              "threads", "seed", "log_every", "eval_every", "eval_batches", "target_bpb",
              "stop_at_target", "warmup_steps", "peak_tflops"]
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
        if name == "peak_tflops":
            help_text = ("peak TFLOP/s for MFU: bench's for this machine and dtype "
                         "(peak_flops / 1e12 in a bench run's summary.json; compare.sh passes "
                         "it); 0: MFU not computed ('-')")
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
    # Time to target, refused as bench refuses it (its flag table's range, then what a target
    # needs: evaluations during the run, on enough held-out batches to judge it).
    if not (math.isfinite(args.target_bpb) and 0 <= args.target_bpb <= 8):
        parser.error(f"--target_bpb: {args.target_bpb:g} is out of range; allowed: 0 (none) or "
                     "in (0, 8]")
    if args.target_bpb and not args.eval_every:
        parser.error("--target_bpb: needs evaluations during the run; give --eval_every N > 0")
    if args.target_bpb and 0 < args.eval_batches < 4:
        parser.error(f"--target_bpb: --eval_batches {args.eval_batches} is too few to judge a "
                     "target; give 4 or more, or 0 for the whole held-out range")
    if args.stop_at_target and not args.target_bpb:
        parser.error("--stop_at_target: needs --target_bpb")


def flops_per_token(a):
    matmul = a.num_layer * (4 * a.d_model ** 2 + 2 * a.d_model * a.ff_dim) + a.d_model * 256
    return 6.0 * matmul + 12.0 * a.num_layer * a.seq_len * a.d_model


def mfu_peak(a, who):
    """MFU's peak and where it came from: --peak_tflops, which compare.sh sets to bench's figure
    for this machine and dtype. There is no fallback of the peer's own (a GEMM timed here): MFU
    on another peak than bench's would not compare with bench's rows, so without the flag the
    run shows '-' and says why."""
    if a.peak_tflops > 0:
        return a.peak_tflops * 1e12, "flag"
    print(f"{who}: MFU shown as '-': no --peak_tflops; give bench's peak for this machine and "
          f"dtype (peak_flops / 1e12 in a bench run's summary.json; scripts/compare.sh passes it)",
          file=sys.stderr)
    return None, "unknown"


def run_dir_name(a):
    name = f"{a.save_dir}_{a.model}_layer{a.num_layer}_{a.dtype}"
    mode = getattr(a, "compile_mode", "default")  # pytorch_run's torch.compile mode
    return (name + ("_compiled" if a.compile else "") +
            (f"_{mode.replace('-', '')}" if a.compile and mode != "default" else "") +
            ("_flash" if a.flash else ""))


def summary_in_bench_order(summary):
    """The peer's summary.json in the order of bench's table; its keys must be exactly those
    the table gives the peers and their own (SUMMARY_KEYS), so that a field added to one side
    alone fails here, not in a report that silently lacks it."""
    if set(summary) != set(SUMMARY_KEYS):
        missing = sorted(set(SUMMARY_KEYS) - set(summary))
        extra = sorted(set(summary) - set(SUMMARY_KEYS))
        raise RuntimeError(f"summary.json keys differ from bench's table (flags.json 'summary'): "
                           f"missing {missing}, not in the table {extra}")
    return {k: summary[k] for k in SUMMARY_KEYS}


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
        for name in os.listdir(self.dir):  # --overwrite 1: an old run's curves go with it
            if name.startswith("events.out.tfevents."):
                os.remove(os.path.join(self.dir, name))
        self.metrics = open(os.path.join(self.dir, "metrics.jsonl"), "w")
        self.written = {}

    def write(self, name, value):
        value = {k: finite_or_none(v) if isinstance(v, float) else v for k, v in value.items()}
        self.written[name] = value
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


def base_env(framework_version, device_name, threads, packages):
    """env.json's common part; packages: the Python packages whose versions it records
    ({name}_version)."""
    import importlib.metadata
    ids = source_id()
    env = {"libtorch_version": None, "framework_version": framework_version,
           "device_name": device_name, "cuda_version": None, "num_threads": threads,
           "available_cores": len(os.sched_getaffinity(0)), "thread_env": thread_env(),
           "blas": None, "compiler": "python " + platform.python_version(),
           "git_revision": ids["build_revision"], **ids, "hostname": socket.gethostname(),
           "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    env.update({f"{p}_version": importlib.metadata.version(p) for p in packages})
    return dict(env, **machine_facts())


def source_id():
    """What the peers run from, by scripts/source_id.sh over scripts/peers: a script is built as
    it runs, so build_* and tree_* are the same; null where the script cannot say."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "source_id.sh")
    try:
        lines = subprocess.run(["bash", script, "scripts/peers"], capture_output=True, text=True,
                               timeout=60, check=True).stdout.split("\n")
        revision, source_hash, diff_hash = (v or None for v in lines[:3])
    except (OSError, subprocess.SubprocessError, ValueError):
        revision = source_hash = diff_hash = None
    return {"build_revision": revision, "build_source_hash": source_hash,
            "build_diff_hash": diff_hash, "tree_revision": revision,
            "tree_source_hash": source_hash}


def machine_facts():
    """The machine as bench's env.json records it: CPU identity and flags, memory, OS, kernel."""
    def fields(path, sep):  # the first value of each key in a "key SEP value" file
        out = {}
        try:
            with open(path) as f:
                for line in f:
                    key, _, value = line.partition(sep)
                    out.setdefault(key.strip(), value.strip().strip('"'))
        except OSError:
            pass
        return out
    cpu, mem = fields("/proc/cpuinfo", ":"), fields("/proc/meminfo", ":")
    u = platform.uname()
    return {"cpu": {"vendor": cpu.get("vendor_id"), "family": cpu.get("cpu family"),
                    "model": cpu.get("model"), "stepping": cpu.get("stepping"),
                    "model_name": cpu.get("model name"), "isa": cpu.get("flags", "").split(),
                    "online_cpus": os.sysconf("SC_NPROCESSORS_ONLN")},
            "memory_bytes": (int(mem["MemTotal"].split()[0]) * 1024 if "MemTotal" in mem
                             else None),
            "os": fields("/etc/os-release", "=").get("PRETTY_NAME"),
            "kernel": f"{u.system} {u.release} {u.machine}"}


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


# bench's noise rule (measure/cpu_noise.h): a timed step is disturbed when other work took more
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


class Energy:
    """A GPU's energy counter as bench reads it (measure/energy.h): NVML's total energy through
    ctypes (TB_NVML_LIB names another library). gpu: the CUDA device's UUID ("GPU-..."), True
    for the machine's one GPU (a peer that cannot name its device), None for a CPU run.
    joules(): the counter in joules, or None; source: "nvml: NAME" or "none: WHY"."""

    def __init__(self, gpu=None):
        self.read, self.source = None, "none: a CPU run (NVML's counter is a GPU's)"
        if gpu:
            self._open(gpu)

    def _open(self, gpu):
        name = os.environ.get("TB_NVML_LIB") or "libnvidia-ml.so.1"
        try:
            lib = ctypes.CDLL(name)
            init, count, by_uuid, by_index = (lib.nvmlInit_v2, lib.nvmlDeviceGetCount_v2,
                                              lib.nvmlDeviceGetHandleByUUID,
                                              lib.nvmlDeviceGetHandleByIndex_v2)
            energy, get_name, error = (lib.nvmlDeviceGetTotalEnergyConsumption,
                                       lib.nvmlDeviceGetName, lib.nvmlErrorString)
        except OSError:
            self.source = f"none: {name} cannot be loaded (the NVIDIA driver's NVML)"
            return
        except AttributeError:
            self.source = f"none: {name} lacks NVML's entry points"
            return
        error.restype = ctypes.c_char_p
        dev, n, mj = ctypes.c_void_p(), ctypes.c_uint(), ctypes.c_ulonglong()
        steps = [("init", lambda: init())]
        if gpu is True:
            steps += [("device count", lambda: count(ctypes.byref(n)) or (n.value != 1 and -1)),
                      ("GPU 0", lambda: by_index(0, ctypes.byref(dev)))]
        else:
            steps += [(gpu, lambda: by_uuid(gpu.encode(), ctypes.byref(dev)))]
        steps += [("total energy", lambda: energy(dev, ctypes.byref(mj)))]
        for what, call in steps:
            e = call()
            if e == -1:
                self.source = f"none: {n.value} GPUs, and this peer cannot tell which it runs on"
                return
            if e:
                self.source = f"none: NVML {what}: {error(e).decode()}"
                return
        buf = ctypes.create_string_buffer(96)
        get_name(dev, buf, 96)
        self.source = "nvml: " + buf.value.decode()
        self.read = lambda: mj.value / 1e3 if energy(dev, ctypes.byref(mj)) == 0 else None

    def joules(self):
        return self.read() if self.read else None


class StepLog:
    """bench's timing rules for the peers: the training loop (run), warm-up kept apart, windows
    of log_every steps (metrics.jsonl + stderr, with window_steps and includes_warmup),
    divergence on a non-finite loss, evaluations, time to target, the noise check,
    summary.json."""

    def __init__(self, args, results):
        self.a, self.res = args, results
        self.timed, self.warm_s, self.step, self.status = [], 0.0, 0, "completed"
        self.first_s = None  # the first step: where torch.compile / jax.jit compile
        self.first_loss = float("nan")
        self.last, self.vloss = float("nan"), float("nan")
        self.wl, self.ws, self.wn, self.ww = 0.0, 0.0, 0, False
        self.wtl, self.wtn = 0.0, 0  # the window's timed steps (no warm-up)
        self.wls = []  # the window's every step loss (metrics.jsonl step_losses)
        self.timed_loss, self.timed_steps = float("nan"), 0
        self.other = []  # per timed step: (other work's, steal) CPU seconds
        self.cpu = cpu_sample()
        self.e0, self.joules = None, 0.0  # the energy counter before the step; timed steps'
        self.wsteps = []  # the window's step seconds
        self.train_s, self.eval_s = 0.0, 0.0  # every step's seconds; the evaluations' seconds
        self.hit = None  # the first evaluation at or below --target_bpb: its step, seconds
        self.stopped = False  # --stop_at_target ended the run there
        self.board = Board(results, getattr(args, "tensorboard", True), BENCH_FLAGS)
        self.start = time.perf_counter()

    def before(self):
        """Call just before a step's t0: the CPU sample the noise check compares against, and
        the energy counter."""
        self.cpu = cpu_sample()
        self.e0 = self.energy.joules()

    def record(self, t0, t1, loss):
        """One step that ran from t0 to t1 (device synchronized); False once diverged."""
        a = self.a
        self.step += 1
        e1 = self.energy.joules()
        after = cpu_sample()
        if self.step == 1:
            self.first_s, self.first_loss = t1 - t0, loss
            # bench's step-0 record: the loss before any update, where the loss curves start.
            self.res.metric(step=0, initial_loss=loss, initial_bpb=loss / math.log(2),
                            elapsed_s=0.0)
        self.train_s += t1 - t0  # every step, warm-up included: the time to target's clock
        warm = self.step <= a.warmup_steps
        if warm:
            self.warm_s += t1 - t0
        else:
            self.timed.append((t1 - t0) * 1e3)
            if self.cpu and after:
                busy, steal = after[0] - self.cpu[0], after[1] - self.cpu[1]
                self.other.append((max(0.0, busy - (after[2] - self.cpu[2])), max(0.0, steal)))
            self.wtl, self.wtn = self.wtl + loss, self.wtn + 1
            ok = self.joules is not None and e1 is not None and self.e0 is not None
            self.joules = self.joules + e1 - self.e0 if ok else None
        self.cpu = after
        self.wl, self.ws, self.wn = self.wl + loss, self.ws + t1 - t0, self.wn + 1
        self.ww = self.ww or warm
        self.wls.append(loss)
        self.wsteps.append(t1 - t0)
        self.board.scalar("train_bpb_step", self.step, loss / math.log(2))
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
            b = self.board
            b.scalar("train_bpb", self.step, self.last / math.log(2))
            b.scalar("seq_per_s", self.step, seq)
            b.scalar("tokens_per_s", self.step, seq * a.seq_len)
            b.scalar("step_ms", self.step, statistics.median(self.wsteps) * 1e3)
            if self.peak_flops:
                b.scalar("mfu_percent", self.step,
                         100 * seq * a.seq_len * flops_per_token(a) / self.peak_flops)
            b.scalar("peak_mb", self.step, self.memory() / (1 << 20))
            b.flush()
            self.wsteps = []
            self.wl, self.ws, self.wn, self.ww, self.wtl, self.wtn = 0.0, 0.0, 0, False, 0.0, 0
            self.wls = []
        return True

    # Set by the peer where it knows them: the MFU peak, and a function for peak memory.
    peak_flops = None
    memory = staticmethod(peak_rss)
    energy = Energy()  # a CPU run's: none

    def run(self, step, evaluate):
        """The training loop as bench runs it. step(): one training step, its (t0, t1, loss),
        t0 and t1 where the device is synchronized; evaluate(): the held-out loss. Evaluations
        every --eval_every steps and after the last; --stop_at_target 1 ends the run at the
        first at or below --target_bpb (no further steps, no second evaluation)."""
        a = self.a
        while self.step < a.steps:
            self.before()
            if not self.record(*step()):
                return
            if a.eval_every and self.step % a.eval_every == 0 and self.step < a.steps:
                self.evaluation(evaluate)
                if self.stopped:
                    return
        self.evaluation(evaluate)

    def evaluation(self, evaluate):
        """One evaluation, timed apart from the steps; the first at or below --target_bpb
        records the time to target (and, with --stop_at_target 1, that the run ends there)."""
        t = time.perf_counter()
        valid_loss = evaluate()
        self.eval_s += time.perf_counter() - t
        self.vloss, bpb = valid_loss, valid_loss / math.log(2)
        self.res.metric(step=self.step, valid_loss=valid_loss, valid_bpb=bpb,
                        train_s=self.train_s)
        self.board.scalar("valid_bpb", self.step, bpb)
        self.board.scalar("valid_bpb_by_train_ms", round(self.train_s * 1e3), bpb)
        self.board.flush()
        if not self.a.target_bpb or self.hit or not bpb <= self.a.target_bpb:
            return
        self.hit = {"steps": self.step, "time_s": self.train_s, "eval_s": self.eval_s}
        self.stopped = bool(self.a.stop_at_target)
        print(f"target {self.a.target_bpb:g} bits/byte reached at step {self.step} after "
              f"{self.train_s:.3f} s of training" + (": the run ends here" if self.stopped
                                                    else ""), file=sys.stderr)

    def target_fields(self):
        """summary.json's time to target: null without a target; the *_to_target figures null
        where it was not reached."""
        a, hit = self.a, self.hit
        return {"target_bpb": a.target_bpb or None,
                "target_reached": hit is not None if a.target_bpb else None,
                "steps_to_target": hit["steps"] if hit else None,
                "tokens_to_target": hit["steps"] * a.batch_size * a.seq_len if hit else None,
                "time_to_target_s": hit["time_s"] if hit else None,
                "eval_seconds_to_target": hit["eval_s"] if hit else None,
                "stopped_at_target": self.stopped}

    def write_summary(self, params, peak_flops, peak_source, memory_bytes, backend, manifest):
        """manifest: the peer's MANIFEST_KEYS but params and first_loss."""
        a, st = self.a, step_stats(self.timed)
        manifest = dict(manifest, params=params, first_loss=finite_or_none(self.first_loss))
        if set(manifest) != set(MANIFEST_KEYS):
            raise RuntimeError(f"manifest keys differ from MANIFEST_KEYS: {sorted(manifest)}")
        seq = a.batch_size * 1e3 / st["median"] if st["median"] else None
        fpt = flops_per_token(a)
        # MFU as bench reports it: never above 100% (a run faster than its peak means the
        # peak is wrong, and the summary says so instead).
        mfu = seq * a.seq_len * fpt / peak_flops if seq and peak_flops else None
        unreliable = mfu is not None and mfu > 1.0
        self.res.write("summary.json", summary_in_bench_order({
            "status": self.status, "params": params, "steps_done": self.step,
            "steps_timed": len(self.timed), "step_time_ms": st,
            "step_time_ms_samples": self.timed, "sequences_per_s": seq,
            "tokens_per_s": seq * a.seq_len if seq else None, "flops_per_token": fpt,
            "mfu": None if unreliable else mfu, "peak_unreliable": unreliable,
            "peak_flops": peak_flops or None, "peak_flops_source": peak_source,
            "peak_memory_bytes": memory_bytes,
            # as bench: the GPU's energy over the timed steps, and their tokens per joule
            "energy_joules": self.joules if self.timed and self.joules is not None else None,
            "tokens_per_joule": (len(self.timed) * a.batch_size * a.seq_len / self.joules
                                 if self.timed and self.joules else None),
            "energy_source": self.energy.source, "warmup_seconds": self.warm_s,
            # the first step less a typical step: the compiler's share of the warm-up
            "compile_seconds": (max(0.0, self.first_s - st["median"] / 1e3)
                                if backend != "eager" and self.first_s and st["median"]
                                else None),
            "compile_backend": backend, "noise": noise_summary([t / 1e3 for t in self.timed],
                                                              self.other),
            # as bench: both over the timed steps of the last window that had any
            "final_train_loss": self.timed_loss, "final_train_bpb": self.timed_loss / math.log(2),
            "final_train_steps": self.timed_steps, "final_valid_loss": self.vloss,
            "final_valid_bpb": self.vloss / math.log(2), **self.target_fields(),
            "manifest": {k: manifest[k] for k in MANIFEST_KEYS}}))
        b = self.board
        b.scalar("final_seq_per_s", self.step, seq)
        b.scalar("final_tokens_per_s", self.step, seq * a.seq_len if seq else None)
        b.scalar("final_valid_bpb", self.step, self.vloss / math.log(2))
        b.scalar("final_completed", self.step, 1.0 if self.status == "completed" else 0.0)
        b.close(self.status, self.step)
        if seq:
            # The table's figure: the median timed step (warm-up and compiling apart), which a
            # window line holding the warm-up does not show.
            print(f"{seq:.2f} seq/s (median of {len(self.timed)} timed steps; warm-up "
                  f"{self.warm_s:.1f} s apart)", file=sys.stderr)
        print(f"results: {self.res.dir}")
        return 0 if self.status == "completed" else 1
