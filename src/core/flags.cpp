// The flag table (see flags.h) and what is derived from it for one flag at a time.
#include "trainbench/core/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "trainbench/core/choices.h"

namespace trainbench {
namespace {

using C = RunConfig;
using K = FlagKind;
using G = HelpGroup;

FlagSpec row(const char* name, G group, K kind, FlagSpec::Field field, std::string help) {
  FlagSpec f;
  f.name = name;
  f.group = group;
  f.kind = kind;
  f.field = field;
  f.help = std::move(help);
  return f;
}
FlagSpec int_flag(const char* name, G group, int64_t C::*field, int64_t min, const char* help) {
  FlagSpec f = row(name, group, K::kInt, field, help);
  f.min = min;
  return f;
}
FlagSpec number_flag(const char* name, G group, double C::*field, double lo, bool lo_open,
                     double hi, bool hi_open, const char* allowed, const char* help) {
  FlagSpec f = row(name, group, K::kNumber, field, help);
  f.lo = lo;
  f.lo_open = lo_open;
  f.hi = hi;
  f.hi_open = hi_open;
  f.allowed = allowed;
  return f;
}
FlagSpec text_flag(const char* name, G group, std::string C::*field, const char* help) {
  return row(name, group, K::kText, field, help);
}
// A flag whose values are the rows of E's table (core/choices.h): its choices, its help (head,
// each row's name and words, tail) and its other spellings (a row's aliases) come from there.
template <class E>
FlagSpec choice_flag(const char* name, G group, E C::*field, const std::string& head,
                     const std::string& tail) {
  const ChoiceField typed{[field](const RunConfig& cfg) { return name_of(cfg.*field); },
                          [field](RunConfig& cfg, const std::string& text) {
                            const std::optional<E> v = parse_choice<E>(text);
                            if (v) cfg.*field = *v;
                            return v.has_value();
                          }};
  FlagSpec f = row(name, group, K::kText, typed, choice_help<E>(head, tail));
  f.choices = choice_names<E>();
  for (const auto& r : ChoiceTable<E>::rows) {
    if constexpr (requires { r.aliases; }) {
      std::string spellings = r.aliases;
      for (size_t at = 0; !spellings.empty() && at != std::string::npos;) {
        const size_t bar = spellings.find('|', at);
        f.aliases.emplace_back(spellings.substr(at, bar - at), r.name);
        at = bar == std::string::npos ? bar : bar + 1;
      }
    }
  }
  return f;
}
FlagSpec switch_flag(const char* name, G group, bool C::*field, const char* help) {
  return row(name, group, K::kBool, field, help);
}
// Marks a row: --resume may change it / the ranks may differ in it.
FlagSpec resumable(FlagSpec f) {
  f.resume_may_change = true;
  return f;
}
FlagSpec per_rank(FlagSpec f) {
  f.ranks_may_differ = true;
  return f;
}

const double kInf = std::numeric_limits<double>::infinity();

// The table in --help order; each row's group is its --help section.
std::vector<FlagSpec> make_table_() {
  return {
      resumable(
          choice_flag<Preset>("preset", G::kModel, &C::preset, "", "; explicit flags override it")),
      choice_flag<ModelKind>("model", G::kModel, &C::model, "", ""),
      choice_flag<Precision>(
          "dtype", G::kPrecision, &C::dtype, "",
          "; on the CPU see --lowp_gemm for CPUs without their GEMM instructions"),
      switch_flag("norm_first", G::kModel, &C::norm_first,
                  "torch model: 1 pre-LayerNorm blocks as the original (PyTorch's "
                  "norm_first=True), from TransformerEncoderLayer's own modules; 0 LibTorch's own "
                  "post-LN layer forward"),
      int_flag("num_layer", G::kModel, &C::num_layer, 1, "transformer blocks (>= 1)"),
      switch_flag("flash", G::kPrecision, &C::flash,
                  "1: flash attention, LibTorch's scaled_dot_product_attention instead of explicit "
                  "scores (handcraft only)"),
      choice_flag<CompilePath>("compile", G::kPrecision, &C::compile, "",
                               "; 0|1 mean none|torchscript"),
      resumable(text_flag("save_dir", G::kResults, &C::save_dir,
                          "run folder prefix; the folder is "
                          "{save_dir}_{model}_layer{N}_{dtype}[_compiled|_fused][_flash]")),
      resumable(switch_flag("overwrite", G::kResults, &C::overwrite,
                            "1: reuse a non-empty run folder (its files are replaced)")),
      resumable(switch_flag("tensorboard", G::kResults, &C::tensorboard,
                            "1: TensorBoard event files in the run folder, written as the run "
                            "goes (tensorboard --logdir runs); 0: none")),
      resumable(text_flag("run_folder", G::kResults, &C::run_folder,
                          "the run folder itself, instead of the name made from --save_dir")),
      resumable(int_flag("repeat", G::kResults, &C::repeat, 1,
                         "timed repetitions of this configuration, each a fresh bench process, "
                         "into RUN_DIR/rep-1 ... rep-N; RUN_DIR/summary.json aggregates them "
                         "(mean, median, stddev, cv, min-max)")),
      resumable(int_flag("repetition", G::kResults, &C::repetition, 0,
                         "with --repeat N: run only repetition K (1..N) and refresh the "
                         "aggregate, so that a sweep interleaves configurations; 0: all")),
      int_flag("seq_len", G::kModel, &C::seq_len, 2, "bytes per sequence (>= 2)"),
      int_flag("d_model", G::kModel, &C::d_model, 1, "model width (a multiple of num_heads)"),
      int_flag("num_heads", G::kModel, &C::num_heads, 1, "attention heads"),
      int_flag("ff_dim", G::kModel, &C::ff_dim, 1, "feed-forward hidden width"),
      number_flag("dropout", G::kModel, &C::dropout, 0, false, 1, true, "[0, 1)",
                  "dropout probability, [0, 1); off during evaluation"),
      choice_flag<DropoutImpl>("dropout_impl", G::kModel, &C::dropout_impl, "",
                               "; auto: fused with --compile fused, else native"),
      choice_flag<GemmRoute>("lowp_gemm", G::kPrecision, &C::lowp_gemm,
                             "--compile fused with bfloat16/float16 on the CPU: ", ""),
      int_flag("batch_size", G::kModel, &C::batch_size, 1, "sequences per step"),
      number_flag("lr", G::kModel, &C::lr, 0, true, kInf, true, "a finite number > 0",
                  "Adam learning rate (> 0, constant)"),
      resumable(int_flag("steps", G::kModel, &C::steps, 1, "optimizer steps, warm-up included")),
      text_flag("data", G::kData, &C::data,
                "corpus: a raw file (e.g. enwik9) or a .zip with one member; empty: the embedded "
                "generated corpus"),
      int_flag("valid_bytes", G::kData, &C::valid_bytes, -1,
               "held-out tail for evaluation; -1: min(5,000,000, 5% of corpus)"),
      choice_flag<DeviceChoice>("device", G::kModel, &C::device, "", ""),
      per_rank(resumable(int_flag("threads", G::kModel, &C::threads, 0,
                                  "intra-op CPU threads; 0: all available cores"))),
      resumable(choice_flag<KeepMemory>("keep_memory", G::kModel, &C::keep_memory, "",
                                        "; a run's summary and report name it where it is on")),
      int_flag("seed", G::kModel, &C::seed, 0, "seed for init, dropout and the sampler (>= 0)"),
      resumable(
          int_flag("log_every", G::kResults, &C::log_every, 1, "steps per timing/log window")),
      resumable(int_flag("eval_every", G::kResults, &C::eval_every, 0,
                         "steps between evaluations; 0: only at the end")),
      resumable(int_flag("eval_batches", G::kResults, &C::eval_batches, 0,
                         "validation batches per evaluation; 0: the whole held-out range")),
      resumable(number_flag("target_bpb", G::kResults, &C::target_bpb, 0, false, 8, false,
                            "0 (none) or in (0, 8]",
                            "held-out bits per byte to reach: the first evaluation at or below it "
                            "records time, steps and tokens to target in summary.json (needs "
                            "--eval_every > 0); 0: none")),
      resumable(switch_flag("stop_at_target", G::kResults, &C::stop_at_target,
                            "1: end the run at the first evaluation at or below --target_bpb "
                            "(status completed, stopped_at_target true)")),
      resumable(int_flag("warmup_steps", G::kResults, &C::warmup_steps, 0,
                         "first steps excluded from timing (< steps)")),
      resumable(number_flag("peak_tflops", G::kResults, &C::peak_tflops, 0, false, kInf, true,
                            ">= 0 (0: auto)",
                            "peak TFLOP/s for MFU; 0: GPU table or CPU GEMM probe")),
      resumable(text_flag("probe_cache", G::kResults, &C::probe_cache,
                          "file keeping the CPU GEMM probe's figures per machine, dtype and "
                          "shape, so runs on one machine share one MFU peak; empty: "
                          "$XDG_CACHE_HOME/trainbench/gemm_probe.json (~/.cache/...); off: "
                          "measure every run")),
      resumable(switch_flag("reprobe", G::kResults, &C::reprobe,
                            "1: measure the GEMM probe again and replace its cached figures")),
      resumable(text_flag(
          "save_model", G::kResults, &C::save_model,
          "write the trained network as a TorchScript file (handcraft; torch.jit.load opens it)")),
      resumable(int_flag("checkpoint_every", G::kCheckpoints, &C::checkpoint_every, -1,
                         "steps between checkpoints in the run folder; 0: only when stopped by "
                         "a signal, so --resume continues it (the default); -1: never")),
      resumable(int_flag("keep_checkpoints", G::kCheckpoints, &C::keep_checkpoints, 1,
                         "newest checkpoints kept (>= 1)")),
      resumable(int_flag("profile_steps", G::kResults, &C::profile_steps, 0,
                         "profile this many steps after the warm-up (not timed): time by op "
                         "category in summary.json (on CUDA the GPU's kernels by the op that "
                         "launched them), a Chrome trace (trace.json) in the run folder; 0: off")),
      resumable(text_flag("resume", G::kCheckpoints, &C::resume,
                          "continue the run in this folder from its newest checkpoint with its "
                          "recorded flags (alone is enough; --steps may grow, logging, "
                          "evaluation, checkpointing and threads may change)")),
      per_rank(resumable(int_flag("fault_nan_step", G::kTesting, &C::fault_nan_step, 0,
                                  "testing aid: make the loss of this step NaN; 0: off"))),
      resumable(choice_flag<DistBackend>("dist_backend", G::kDist, &C::dist_backend,
                                         "multi-process runs (torchrun or scripts/launch.sh): ",
                                         "; auto: nccl on CUDA, gloo on CPU")),
      per_rank(resumable(int_flag("dist_timeout", G::kDist, &C::dist_timeout, 1,
                                  "seconds a rank waits for the others (joining, each "
                                  "collective) before failing with the missing rank's number"))),
      resumable(number_flag("bucket_mb", G::kDist, &C::bucket_mb, 0, true, kInf, true,
                            "a number > 0",
                            "gradient all-reduce bucket size in MiB (multi-process)")),
      resumable(switch_flag("dist_overlap", G::kDist, &C::dist_overlap,
                            "1: all-reduce gradient buckets while backward runs; 0: after it "
                            "(multi-process)")),
      per_rank(resumable(int_flag("fault_exit_step", G::kTesting, &C::fault_exit_step, 0,
                                  "testing aid: the process dies just before this step; 0: off"))),
      per_rank(resumable(int_flag("fault_escape_step", G::kTesting, &C::fault_escape_step, 0,
                                  "testing aid: just before this step a tensor's deleter "
                                  "throws, an error no caller can catch (bench's one line, "
                                  "summary.json failed, exit 1); 0: off"))),
      resumable(choice_flag<SdpaBackend>(
          "sdpa_backend", G::kPrecision, &C::sdpa_backend, "",
          ": the only kernel flash attention may use (--flash 1); a forced one that cannot run "
          "is an error")),
      switch_flag("fused_adam", G::kPrecision, &C::fused_adam,
                  "1: Adam in one pass per parameter (bench's kernel), no host sync (CUDA and "
                  "CPU); with --compile fused in bfloat16/float16 that pass also writes the "
                  "16-bit weight copies the GEMMs read (no per-step cast)"),
      resumable(choice_flag<AdamKernel>("adam_kernel", G::kPrecision, &C::adam_kernel,
                                        "--fused_adam 1: ", "")),
      resumable(choice_flag<GpuRows>("gpu_kernels", G::kPrecision, &C::gpu_kernels,
                                     "--compile fused on CUDA: ", "")),
      resumable(switch_flag(
          "cuda_graph", G::kPrecision, &C::cuda_graph,
          "1: capture the whole step as one CUDA graph after warm-up and replay it (CUDA; needs "
          "--fused_adam 1, --compile none or fused, --warmup_steps >= 3)")),
  };
}

std::string number_text_(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

const std::vector<FlagSpec>& flag_table() {
  static const std::vector<FlagSpec> table = make_table_();
  return table;
}

const FlagSpec* find_flag(const std::string& name) {
  for (const FlagSpec& f : flag_table()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

std::string flag_text(const FlagSpec& f, const RunConfig& cfg) {
  if (const auto* choice = std::get_if<ChoiceField>(&f.field)) return choice->get(cfg);
  if (const auto* text = std::get_if<std::string C::*>(&f.field)) return cfg.**text;
  if (const auto* on = std::get_if<bool C::*>(&f.field)) return cfg.**on ? "1" : "0";
  if (const auto* number = std::get_if<double C::*>(&f.field)) return number_text_(cfg.**number);
  return std::to_string(cfg.*std::get<int64_t C::*>(f.field));
}

void set_flag(const FlagSpec& f, RunConfig& cfg, const std::string& text) {
  const std::string flag = std::string("--") + f.name;
  errno = 0;
  char* end = nullptr;
  if (const auto* choice = std::get_if<ChoiceField>(&f.field)) {
    std::string name = text;
    for (const auto& [spelling, value] : f.aliases) {
      if (text == spelling) name = value;
    }
    if (!choice->set(cfg, name)) throw not_a_choice(f.name, text, f.choices);
  } else if (const auto* any = std::get_if<std::string C::*>(&f.field)) {
    cfg.** any = text;
  } else if (const auto* on = std::get_if<bool C::*>(&f.field)) {
    if (text != "0" && text != "1" && text != "true" && text != "false") {
      // A number is shown as it is, other text quoted: "2 is not allowed", "'maybe' ...".
      const bool number =
          !text.empty() && text.find_first_not_of("-0123456789") == std::string::npos;
      throw ConfigError(flag + ": " + (number ? text : "'" + text + "'") +
                        " is not allowed; use 0|1");
    }
    cfg.** on = text == "1" || text == "true";
  } else if (const auto* number = std::get_if<double C::*>(&f.field)) {
    const double d = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || errno == ERANGE) {
      throw ConfigError(flag + ": '" + text + "' is not a number; allowed: a number");
    }
    cfg.** number = d;
  } else {
    const long long i = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE) {
      throw ConfigError(flag + ": '" + text + "' is not an integer; allowed: an integer");
    }
    cfg.*std::get<int64_t C::*>(f.field) = i;
  }
}

void check_flag(const FlagSpec& f, const RunConfig& cfg) {
  const std::string flag = std::string("--") + f.name;
  switch (f.kind) {
    case K::kInt: {
      const int64_t v = cfg.*std::get<int64_t C::*>(f.field);
      if (v < f.min) {
        throw ConfigError(flag + ": " + std::to_string(v) +
                          " is out of range; allowed: >= " + std::to_string(f.min));
      }
      break;
    }
    case K::kNumber: {
      const double v = cfg.*std::get<double C::*>(f.field);
      const bool ok = std::isfinite(v) && (f.lo_open ? v > f.lo : v >= f.lo) &&
                      (f.hi_open ? v < f.hi : v <= f.hi);
      if (!ok) {
        throw ConfigError(flag + ": " + number_text_(v) +
                          " is out of range; allowed: " + f.allowed);
      }
      break;
    }
    case K::kText:  // any text, or a choice flag's enum, which holds only its rows
    case K::kBool:
      break;
  }
}

bool resume_may_change(const std::string& key) {
  if (const FlagSpec* f = find_flag(key)) return f->resume_may_change;
  // Keys the run writes beside its flags: its folder, the file format, the resume itself, the
  // global batch (checked apart, as WORLD_SIZE) and the attention kernel that ran.
  for (const char* k : {"run_dir", "schema_version", "resumed_from_step", "global_batch_size",
                        "sdpa_backend_used"}) {
    if (key == k) return true;
  }
  return false;
}

bool ranks_may_differ(const std::string& key) {
  const FlagSpec* f = find_flag(key);
  return f && f->ranks_may_differ;
}

}  // namespace trainbench
