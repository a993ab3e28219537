// RunConfig: every setting of a benchmark run as its flag gives it, with the reference defaults,
// presets and JSON. It is parsed once (app/cli.h) and validated once (app/validate.h); each
// choice flag is its enum (core/choices.h), named as text only at the edges: the command line,
// config.json, the exported flag table. Its `auto` values are resolved once into a RunPlan
// (core/plan.h).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "trainbench/core/choices.h"
#include "trainbench/core/errors.h"

namespace trainbench {

struct RunConfig {
  // The choice flags are their enums; the rows of core/choices.h say what each value means.
  Preset preset = Preset::kReference;  // explicit flags override it
  ModelKind model = ModelKind::kHandcraft;
  // torch model: pre-LayerNorm blocks as the original (PyTorch's norm_first=True), computed from
  // TransformerEncoderLayer's own modules; false: LibTorch's own (post-LN) layer forward.
  bool norm_first = true;
  Precision dtype = Precision::kFloat32;
  int64_t num_layer = 24;                    // transformer blocks (the reference code's default)
  bool flash = false;                        // flash attention: SDPA instead of explicit scores
  CompilePath compile = CompilePath::kNone;  // (0 | 1 on the command line: none | torchscript)
  std::string save_dir = "runs/run";         // run folder prefix; the config suffix is appended
  bool overwrite = false;                    // allow reusing a non-empty run folder
  std::string run_folder;                    // the run folder itself; empty: the name from save_dir
  bool tensorboard = true;                   // TensorBoard event files in the run folder
  // Timed repetitions of this configuration, each a fresh bench process, into RUN_DIR/rep-K
  // (app/repeat.h); the folder's summary.json aggregates them.
  int64_t repeat = 1;
  int64_t repetition = 0;  // with repeat > 1: run only repetition K (1..repeat); 0: all of them

  int64_t seq_len = 256;  // bytes per sequence (the context length)
  int64_t d_model = 512;  // model width
  int64_t num_heads = 8;  // attention heads; d_model % num_heads == 0
  int64_t ff_dim = 2048;  // feed-forward hidden width
  double dropout = 0.1;   // dropout on embeddings, residual branches and FF hidden
  DropoutImpl dropout_impl = DropoutImpl::kAuto;  // see model/dropout.h
  // --compile fused with bfloat16/float16 on the CPU: GEMMs in the dtype itself (native) or as
  // float32 GEMMs of operands rounded to it (float32); auto: the faster route as measured by
  // the GEMM probe before the model is built (measure/gemm_probe.h, app/run_setup.cpp).
  GemmRoute lowp_gemm = GemmRoute::kAuto;
  int64_t batch_size = 100;  // sequences per step
  double lr = 1e-3;          // Adam learning rate (no schedule)
  int64_t steps = 5000;      // optimizer steps, warm-up included

  std::string data;          // raw file or .zip; empty: the embedded generated corpus
  int64_t valid_bytes = -1;  // held-out tail; -1: min(5,000,000, 5% of the corpus)
  DeviceChoice device = DeviceChoice::kAuto;
  int64_t threads = 0;                         // intra-op threads; 0: all available cores
  KeepMemory keep_memory = KeepMemory::kAuto;  // caching CPU allocator (train/host_memory.h)
  int64_t seed = 1234;                         // seeds the model init, dropout and the sampler
  int64_t log_every = 20;                      // steps per timing/log window
  int64_t eval_every = 500;                    // steps between evaluations (0: only at the end)
  int64_t eval_batches = 20;    // validation batches per evaluation (0: the whole range)
  double target_bpb = 0;        // held-out bpb to reach (time to target); 0: none
  bool stop_at_target = false;  // end the run at the first evaluation at or below target_bpb
  int64_t warmup_steps = 5;     // first steps, excluded from timing
  double peak_tflops = 0;       // peak for MFU; 0: known table (CUDA) or a GEMM probe (CPU)
  // The CPU GEMM probe's figures per machine (measure/probe_cache.h): a file, "" for the user's
  // cache folder, "off" to measure every run; reprobe measures again and replaces them.
  std::string probe_cache;
  bool reprobe = false;
  std::string save_model;        // write the trained network as a TorchScript file here
  int64_t checkpoint_every = 0;  // steps between checkpoints (0: only at a signal; -1: never)
  int64_t keep_checkpoints = 2;  // newest checkpoints kept
  std::string resume;            // run folder to continue from its newest checkpoint
  int64_t fault_nan_step = 0;    // testing aid: the loss of this step becomes NaN (0: off)
  int64_t profile_steps = 0;     // steps profiled after the warm-up (not timed); 0: off

  // Multi-process runs (torchrun's RANK/WORLD_SIZE/...; see dist.h). Ignored by one process.
  DistBackend dist_backend = DistBackend::kAuto;  // auto: nccl on CUDA, gloo on CPU
  int64_t dist_timeout = 300;     // seconds to wait for a rank (joining or a collective)
  double bucket_mb = 25;          // gradient all-reduce bucket size in MiB
  bool dist_overlap = true;       // all-reduce buckets during backward (else after it)
  int64_t fault_exit_step = 0;    // testing aid: the process dies before this step (0: off)
  int64_t fault_escape_step = 0;  // testing aid: an uncatchable error before this step (0: off)

  // GPU fast paths (rules in sdpa_backend.h, fused_adam.h, cuda_graph.h).
  SdpaBackend sdpa_backend = SdpaBackend::kAuto;  // with --flash 1
  bool fused_adam = false;                        // Adam in one pass (bench's kernel)
  AdamKernel adam_kernel = AdamKernel::kParam;    // how fused Adam launches it
  bool cuda_graph = false;                        // the whole step captured once, then replayed
  GpuRows gpu_kernels = GpuRows::kV1;             // the CUDA row kernels of --compile fused
};

// Steps the TorchScript graph executor spends profiling and optimizing (--compile torchscript);
// they must fall inside the warm-up.
inline constexpr int64_t kProfilingSteps = 2;

// Applies a preset to cfg (kReference resets to the defaults, kQuick is CPU-sized).
void apply_preset(RunConfig& cfg, Preset preset);

// Reference run-folder name: {save_dir}_{model}_layer{N}_{dtype}[_compiled|_fused][_flash]
// (_compiled: TorchScript, as the reference names its compiled runs); --run_folder instead
// where given.
std::string run_dir_name(const RunConfig& cfg);

// Bytes held out for validation from a corpus of corpus_bytes.
int64_t resolved_valid_bytes(const RunConfig& cfg, int64_t corpus_bytes);

// A switch as a peer's config.json holds it: 0/1, the original benchmark's spelling (bench
// writes true/false). Absent or null: off.
bool switch_on(const nlohmann::json& value);

// A JSON library error in words: nlohmann's "[json.exception.parse_error.101] parse error at
// line 1, column 2: ..." without its bracketed tag.
std::string json_message(const std::exception& e);

void to_json(nlohmann::json& j, const RunConfig& cfg);
// Throws ConfigError naming the field and what it should hold ("field 'num_layer' is string
// ("8"); expected an integer", "... expected one of float32|float16|bfloat16").
void from_json(const nlohmann::json& j, RunConfig& cfg);

}  // namespace trainbench
