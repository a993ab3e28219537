// cxxopts front end: every flag is read as text and converted here, so that a malformed value
// gets the same one-line error shape as a value out of range.
#include "trainbench/app/cli.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "trainbench/report/results.h"

namespace trainbench {
namespace {

int64_t parse_int_(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    throw ConfigError("--" + flag + ": '" + text + "' is not an integer; allowed: an integer");
  }
  return v;
}

double parse_double_(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    throw ConfigError("--" + flag + ": '" + text + "' is not a number; allowed: a number");
  }
  return v;
}

bool parse_bool_(const std::string& flag, const std::string& text) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  throw ConfigError("--" + flag + ": '" + text + "' is not allowed; use 0|1");
}

template <typename T>
std::string to_text_(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// One flag: its help line, the default shown in --help, and how its text lands in RunConfig.
struct Flag {
  std::string name;
  std::string help;
  std::function<std::string(const RunConfig&)> show;
  std::function<void(RunConfig&, const std::string&)> set;
};

#define TB_INT_FLAG(field, help)                                                                \
  Flag {                                                                                        \
#field, help,                                                                               \
        [](const RunConfig&                                                                     \
               c) { return to_text_(c.field); }, [](RunConfig & c,                              \
                                                    const std::string&                          \
                                                        t) { c.field = parse_int_(#field, t); } \
  }
#define TB_DOUBLE_FLAG(field, help)                                                                \
  Flag {                                                                                           \
#field, help,                                                                                  \
        [](const RunConfig&                                                                        \
               c) { return to_text_(c.field); }, [](RunConfig & c,                                 \
                                                    const std::string&                             \
                                                        t) { c.field = parse_double_(#field, t); } \
  }
#define TB_TEXT_FLAG(field, help)                                                             \
  Flag {                                                                                      \
#field, help,                                                                             \
        [](const RunConfig& c) { return c.field; }, [](RunConfig & c,                         \
                                                       const std::string& t) { c.field = t; } \
  }

std::vector<Flag> flags_() {
  return {
      TB_TEXT_FLAG(model,
                   "torch (nn::TransformerEncoder, post-LayerNorm) | handcraft (pre-LN "
                   "blocks from Linear/LayerNorm/matmul)"),
      TB_TEXT_FLAG(dtype, "float32 | float16 (CUDA, loss-scaled) | bfloat16 (autocast)"),
      TB_INT_FLAG(num_layer, "transformer blocks (>= 1)"),
      TB_INT_FLAG(flash, "1: fused scaled-dot-product attention (handcraft only)"),
      TB_INT_FLAG(compile,
                  "1: TorchScript graph of the handcraft model, run by the graph "
                  "executor with the tensor-expression fuser where it can fuse"),
      TB_TEXT_FLAG(save_dir,
                   "run folder prefix; the folder is "
                   "{save_dir}_{model}_layer{N}_{dtype}[_compiled][_flash]"),
      Flag{"overwrite", "reuse a non-empty run folder (its files are replaced)",
           [](const RunConfig& c) { return std::string(c.overwrite ? "1" : "0"); },
           [](RunConfig& c, const std::string& t) { c.overwrite = parse_bool_("overwrite", t); }},
      TB_INT_FLAG(seq_len, "bytes per sequence (>= 2)"),
      TB_INT_FLAG(d_model, "model width (a multiple of num_heads)"),
      TB_INT_FLAG(num_heads, "attention heads"),
      TB_INT_FLAG(ff_dim, "feed-forward hidden width"),
      TB_DOUBLE_FLAG(dropout, "dropout probability, [0, 1); off during evaluation"),
      TB_TEXT_FLAG(dropout_impl,
                   "auto | native (torch::dropout) | parallel (multi-threaded "
                   "mask; CPU, eager handcraft); auto: parallel where it applies"),
      TB_INT_FLAG(batch_size, "sequences per step"),
      TB_DOUBLE_FLAG(lr, "Adam learning rate (> 0, constant)"),
      TB_INT_FLAG(steps, "optimizer steps, warm-up included"),
      TB_TEXT_FLAG(data,
                   "corpus: a raw file (e.g. enwik9) or a .zip with one member; "
                   "empty: the embedded generated corpus"),
      TB_INT_FLAG(valid_bytes, "held-out tail for evaluation; -1: min(5,000,000, 5% of corpus)"),
      TB_TEXT_FLAG(device, "auto | cpu | cuda"),
      TB_INT_FLAG(threads, "intra-op CPU threads; 0: all available cores"),
      TB_INT_FLAG(seed, "seed for init, dropout and the sampler (>= 0)"),
      TB_INT_FLAG(log_every, "steps per timing/log window"),
      TB_INT_FLAG(eval_every, "steps between evaluations; 0: only at the end"),
      TB_INT_FLAG(eval_batches, "validation batches per evaluation; 0: the whole held-out range"),
      TB_INT_FLAG(warmup_steps, "first steps excluded from timing (< steps)"),
      TB_DOUBLE_FLAG(peak_tflops, "peak TFLOP/s for MFU; 0: GPU table or CPU GEMM probe"),
      TB_TEXT_FLAG(save_model,
                   "write the trained network as a TorchScript file (handcraft; "
                   "torch.jit.load opens it)"),
      TB_INT_FLAG(checkpoint_every, "steps between checkpoints in the run folder; 0: none"),
      TB_INT_FLAG(keep_checkpoints, "newest checkpoints kept (>= 1)"),
      TB_TEXT_FLAG(resume,
                   "continue the run in this folder from its newest checkpoint with its "
                   "recorded flags (alone is enough; --steps may grow, logging, evaluation, "
                   "checkpointing and threads may change)"),
      TB_INT_FLAG(fault_nan_step, "testing aid: make the loss of this step NaN; 0: off"),
      TB_TEXT_FLAG(dist_backend,
                   "multi-process runs (torchrun or scripts/launch.sh): auto | gloo | nccl; "
                   "auto: nccl on CUDA, gloo on CPU"),
      TB_INT_FLAG(dist_timeout,
                  "seconds a rank waits for the others (joining, each collective) before "
                  "failing with the missing rank's number"),
      TB_DOUBLE_FLAG(bucket_mb, "gradient all-reduce bucket size in MiB (multi-process)"),
      TB_INT_FLAG(dist_overlap,
                  "1: all-reduce gradient buckets while backward runs; 0: after it "
                  "(multi-process)"),
      TB_INT_FLAG(fault_exit_step, "testing aid: the process dies just before this step; 0: off"),
      TB_TEXT_FLAG(sdpa_backend,
                   "auto | flash | efficient | cudnn | math: the only kernel fused attention may "
                   "use (--flash 1); a forced one that cannot run is an error"),
      TB_INT_FLAG(fused_adam,
                  "1: Adam as one fused multi-tensor kernel, no host sync (CUDA; CPU from "
                  "LibTorch 2.4)"),
      TB_INT_FLAG(cuda_graph,
                  "1: capture the whole step as one CUDA graph after warm-up and replay it "
                  "(CUDA; needs --fused_adam 1, --compile 0, --warmup_steps >= 3)"),
  };
}

// `--resume DIR` alone continues the run as it was started (nanoGPT's init_from=resume): the
// flags recorded in DIR/config.json become the base, under the explicit flags; prepare_run then
// refuses the explicit ones a resume may not change, naming them. Without a config.json the
// base stays as it is and validate() names the folder.
void start_from_recorded_(RunConfig& cfg, const cxxopts::ParseResult& parsed) {
  const std::string file = parsed["resume"].as<std::string>() + "/config.json";
  if (!std::filesystem::is_regular_file(file)) return;
  RunConfig recorded;
  try {
    from_json(read_json_file(file), recorded);
  } catch (const std::exception& e) {  // not JSON, or a field of the wrong type
    throw ConfigError("--resume: '" + file + "' cannot be read as a run's flags: " + e.what());
  }
  if (parsed.count("preset")) apply_preset(recorded, parsed["preset"].as<std::string>());
  // Testing aids belong to the session that set them: a resumed run would crash again.
  recorded.fault_nan_step = 0;
  recorded.fault_exit_step = 0;
  recorded.overwrite = false;
  cfg = recorded;
}

}  // namespace

CliResult parse_cli(int argc, const char* const* argv) {
  cxxopts::Options options("bench",
                           "trainbench: byte-level transformer training benchmark (LibTorch)");
  options.custom_help("[flags]   |   bench report RUN_DIR...");
  const RunConfig defaults;
  auto adder = options.add_options();
  adder("h,help", "print this help and exit");
  adder("export_corpus",
        "write the embedded corpus to this file and exit (for the Python/JAX "
        "peers, which then read the same bytes with --data)",
        cxxopts::value<std::string>());
  adder("preset",
        "reference (the defaults shown) | quick (CPU-sized: 2 layers, d 128, seq 128, "
        "batch 16, 400 steps); explicit flags override it",
        cxxopts::value<std::string>()->default_value(defaults.preset));
  const std::vector<Flag> flags = flags_();
  for (const Flag& f : flags) {
    adder(f.name, f.help, cxxopts::value<std::string>()->default_value(f.show(defaults)));
  }

  CliResult out;
  out.help_text = options.help();
  // Unknown and repeated flags are caught here so that the message has our shape (cxxopts' has
  // its own, and takes the last of a repeated flag without a word).
  std::map<std::string, std::string> given;  // name -> its value as written
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    bool known = name == "help" || name == "preset" || name == "export_corpus";
    for (const Flag& f : flags) known |= f.name == name;
    if (!known) {
      throw ConfigError("--" + name + ": unknown flag; see bench --help for the allowed flags");
    }
    const std::string value = eq != std::string::npos ? arg.substr(eq + 1)
                              : i + 1 < argc          ? std::string(argv[i + 1])
                                                      : std::string();
    if (given.count(name)) {
      throw ConfigError("--" + name + ": given twice ('" + given[name] + "', then '" + value +
                        "'); give each flag once");
    }
    given[name] = value;
  }
  cxxopts::ParseResult parsed;
  try {
    parsed = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::no_such_option& e) {
    throw ConfigError(std::string(e.what()) + "; see bench --help for the allowed flags");
  } catch (const cxxopts::exceptions::exception& e) {
    throw ConfigError(std::string(e.what()) + "; see bench --help");
  }
  if (!parsed.unmatched().empty()) {
    throw ConfigError("unexpected argument '" + parsed.unmatched().front() +
                      "'; flags take the form --name value (see bench --help)");
  }
  if (parsed.count("help")) {
    out.help = true;
    return out;
  }
  if (parsed.count("export_corpus")) out.export_corpus = parsed["export_corpus"].as<std::string>();
  apply_preset(out.config, parsed["preset"].as<std::string>());
  if (parsed.count("resume")) start_from_recorded_(out.config, parsed);
  for (const Flag& f : flags) {
    if (parsed.count(f.name)) f.set(out.config, parsed[f.name].as<std::string>());
  }
  return out;
}

}  // namespace trainbench
