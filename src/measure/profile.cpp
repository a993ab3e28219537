// The step profiler (see profile.h): Kineto's activity by category, the host's or the device's.
#include "trainbench/measure/profile.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include <ATen/Context.h>
#include <kineto/ActivityType.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "trainbench/core/errors.h"

namespace trainbench {
namespace {

namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// First rule that matches (a substring of the event name) names the category; the fused
// model's own scopes come before the aten names they contain ("linear_relu_dropout" is not a
// GEMM: its GEMMs are child events of their own).
const std::vector<std::pair<const char*, const char*>>& rules_() {
  static const std::vector<std::pair<const char*, const char*>> rules = {
      {"trainbench::optimizer", "optimizer"},
      {"trainbench::data", "data"},
      {"adam", "optimizer"},
      {"Adam", "optimizer"},
      {"head_cross_entropy", "loss"},
      {"HeadCrossEntropy", "loss"},
      {"cross_entropy", "loss"},
      {"nll_loss", "loss"},
      {"log_softmax", "loss"},
      {"fused::heads", "copy"},  // the attention's layout passes, inside causal_attention
      {"causal_attention", "attention"},
      {"CausalAttention", "attention"},
      {"scaled_dot_product", "attention"},
      {"flash_attention", "attention"},
      {"softmax", "attention"},
      {"drop_add_layer_norm", "normalisation"},
      {"DropAddLn", "normalisation"},
      {"layer_norm", "normalisation"},
      {"linear_relu_dropout", "pointwise"},
      {"LinearReluDropout", "pointwise"},
      {"aten::mm", "gemm"},
      {"aten::addmm", "gemm"},
      {"aten::bmm", "gemm"},
      {"aten::baddbmm", "gemm"},
      {"aten::matmul", "gemm"},
      {"aten::linear", "gemm"},
      {"MmBackward", "gemm"},
      {"AddmmBackward", "gemm"},
      {"BmmBackward", "gemm"},
      // Bytes moved into another dtype or layout: conversions, clones, stacks, concatenations
      // and their backwards (the math itself reads each tensor where it lies).
      {"copy_", "copy"},
      {"_to_copy", "copy"},
      {"ToCopyBackward", "copy"},
      {"aten::clone", "copy"},
      {"aten::contiguous", "copy"},
      {"aten::cat", "copy"},
      {"CatBackward", "copy"},
      {"aten::stack", "copy"},
      {"StackBackward", "copy"},
      {"UnbindBackward", "copy"},
      {"dropout", "pointwise"},
      {"bernoulli", "pointwise"},
      {"relu", "pointwise"},
      {"threshold", "pointwise"},
      {"aten::add", "pointwise"},
      {"aten::mul", "pointwise"},
      {"aten::div", "pointwise"},
      {"aten::sub", "pointwise"},
      {"aten::sum", "pointwise"},
      {"embedding", "pointwise"},
      {"aten::fill_", "pointwise"},
      {"aten::zero", "pointwise"},
  };
  return rules;
}

// The category of one profiler event name ("aten::addmm" → "gemm", the fused model's
// "fused::drop_add_layer_norm" → "normalisation", bench's "trainbench::optimizer" scope →
// "optimizer", ...); "other" for what no rule names.
std::string op_category(const std::string& name) {
  for (const auto& [part, category] : rules_()) {
    if (name.find(part) != std::string::npos) return category;
  }
  return "other";
}

// One open host event of the walk: its end, resolved category, direct children's time.
struct Frame {
  uint64_t end;
  std::string category;
  double children_ns;
  double duration_ns;
  bool gemm;  // a GEMM product (its inner GEMM ops are its own)
};

// A GEMM product's (batch, m, k, n) and its events' totals over the profiled steps.
using GemmShape = std::tuple<int64_t, int64_t, int64_t, int64_t>;
struct Product {
  double calls = 0, ns = 0, flops = 0;
};

// What the host events' walk finds: self time by category, each event's resolved category by
// correlation (ops and runtime calls apart: their ids are counted separately), the GEMM
// products, and whether any device event was recorded.
struct HostWalk {
  std::map<std::string, double> self_ns;
  std::map<uint64_t, std::string> op_of, launch_of;
  std::map<GemmShape, Product> products;
  bool device = false;
};

// Per thread, by start; of two events that start together the longer (the parent) first.
void sort_events_(std::vector<ProfileEvent>& events) {
  std::sort(events.begin(), events.end(), [](const ProfileEvent& a, const ProfileEvent& b) {
    return a.thread != b.thread
               ? a.thread < b.thread
               : (a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns);
  });
}

// e's category: its own, else (an optimizer or data scope above it, or none of its own) its
// parent's; its time counts as a child of that parent.
std::string resolve_category_(const ProfileEvent& e, std::vector<Frame>& stack) {
  std::string category = op_category(e.name);
  if (!stack.empty()) {
    const std::string& parent = stack.back().category;
    if (parent == "optimizer" || parent == "data" || category == "other") category = parent;
    stack.back().children_ns += static_cast<double>(e.end_ns - e.start_ns);
  }
  return category;
}

// The host events' walk, per thread (events sorted by sort_events_): a stack of open events.
HostWalk walk_host_events_(const std::vector<ProfileEvent>& events) {
  using Kind = ProfileEvent::Kind;
  HostWalk w;
  std::vector<Frame> stack;
  auto close = [&](const Frame& f) { w.self_ns[f.category] += f.duration_ns - f.children_ns; };
  uint64_t thread = ~0ULL;
  for (const ProfileEvent& e : events) {
    if (e.kind == Kind::kDevice) {
      w.device = true;
      continue;
    }
    if (e.thread != thread) {
      while (!stack.empty()) close(stack.back()), stack.pop_back();
      thread = e.thread;
    }
    while (!stack.empty() && stack.back().end <= e.start_ns) close(stack.back()), stack.pop_back();
    const std::string category = resolve_category_(e, stack);
    (e.kind == Kind::kHostOp ? w.op_of : w.launch_of)[e.correlation] = category;
    const bool inside_gemm =
        std::any_of(stack.begin(), stack.end(), [](const Frame& f) { return f.gemm; });
    const bool gemm = e.flops > 0 && !inside_gemm;
    if (gemm) {
      Product& p = w.products[{e.batch, e.m, e.k, e.n}];
      p.calls += 1;
      p.ns += static_cast<double>(e.end_ns - e.start_ns);
      p.flops += e.flops;
    }
    stack.push_back({e.end_ns, category, 0.0, static_cast<double>(e.end_ns - e.start_ns), gemm});
  }
  while (!stack.empty()) close(stack.back()), stack.pop_back();
  return w;
}

// Device time by category: a device event's op (linked), else the runtime call that launched it.
std::map<std::string, double> device_time_(const std::vector<ProfileEvent>& events,
                                           const HostWalk& host) {
  std::map<std::string, double> device_ns;
  for (const ProfileEvent& e : events) {
    if (e.kind != ProfileEvent::Kind::kDevice) continue;
    auto op = host.op_of.find(e.linked);
    auto launch = host.launch_of.find(e.correlation);
    const std::string& category = op != host.op_of.end()           ? op->second
                                  : launch != host.launch_of.end() ? launch->second
                                                                   : "other";
    device_ns[category] += static_cast<double>(e.end_ns - e.start_ns);
  }
  return device_ns;
}

// {category: ms per step} over n steps; "untraced": what of step_ms no category covers.
nlohmann::json ms_per_step_(const std::map<std::string, double>& ns, double n, double step_ms) {
  nlohmann::json ms = nlohmann::json::object();
  double traced_ms = 0;
  for (const std::string& c : profile_categories()) {
    if (c == "untraced") continue;  // the rest of the wall time, below
    const auto it = ns.find(c);
    const double v = it != ns.end() ? it->second / 1e6 / n : 0.0;
    ms[c] = v;
    traced_ms += v;
  }
  ms["untraced"] = std::max(0.0, step_ms - traced_ms);
  return ms;
}

// "gemm_products": each product's calls, ms and FLOP/s per step (n steps), the slowest first.
std::vector<nlohmann::json> gemm_rows_(const std::map<GemmShape, Product>& products, double n) {
  std::vector<nlohmann::json> rows;
  for (const auto& [shape, p] : products) {
    const auto& [batch, m, k, nn] = shape;
    rows.push_back({{"batch", batch},
                    {"m", m},
                    {"k", k},
                    {"n", nn},
                    {"calls_per_step", p.calls / n},
                    {"ms_per_step", p.ns / 1e6 / n},
                    {"flops_per_s", p.ns > 0 ? p.flops / (p.ns / 1e9) : 0.0}});
  }
  std::sort(rows.begin(), rows.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["ms_per_step"].get<double>() > b["ms_per_step"].get<double>();
  });
  return rows;
}

}  // namespace

const std::vector<std::string>& profile_categories() {
  static const std::vector<std::string> categories = {
      "gemm", "attention", "normalisation", "pointwise", "copy",
      "loss", "optimizer", "data",          "other",     "untraced"};
  return categories;
}

StepProfiler::~StepProfiler() {
  if (running_) prof::disableProfiler();
}

void StepProfiler::start(bool cuda) {
  // Kineto looks for a GPU as it starts and logs an ERROR line where there is none
  // ("gpuGetDeviceCount failed with code 35"): on such a machine its log is off, unless the
  // user set KINETO_LOG_LEVEL.
  if (!at::hasCUDA()) setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  // Input shapes: the GEMM ops' products (set_gemm_product).
  const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/true);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  running_ = true;
}

void set_gemm_product(ProfileEvent& e, const std::vector<int64_t>* shapes, size_t count) {
  // The operands: mm(a, b), bmm(a, b); addmm(c, a, b), baddbmm(c, a, b).
  const bool add = e.name == "aten::addmm" || e.name == "aten::baddbmm";
  const bool batched = e.name == "aten::bmm" || e.name == "aten::baddbmm";
  if (!(add || batched || e.name == "aten::mm")) return;
  const size_t a = add ? 1 : 0, rank = batched ? 3 : 2;
  if (count < a + 2 || shapes[a].size() != rank || shapes[a + 1].size() != rank) return;
  const std::vector<int64_t>&x = shapes[a], &y = shapes[a + 1];
  e.batch = batched ? x[0] : 1;
  e.m = x[rank - 2];
  e.k = x[rank - 1];
  e.n = y[rank - 1];
  e.flops = 2.0 * static_cast<double>(e.batch) * static_cast<double>(e.m) *
            static_cast<double>(e.k) * static_cast<double>(e.n);
}

nlohmann::json profile_breakdown(std::vector<ProfileEvent> events, int64_t steps, double wall_s) {
  sort_events_(events);
  const HostWalk host = walk_host_events_(events);
  const std::map<std::string, double> device_ns = device_time_(events, host);
  const std::map<std::string, double>& ns = host.device ? device_ns : host.self_ns;
  const double n = static_cast<double>(std::max<int64_t>(1, steps));
  const double step_ms = wall_s * 1e3 / n;
  nlohmann::json ms = ms_per_step_(ns, n, step_ms);
  nlohmann::json share = nlohmann::json::object();
  for (const auto& [k, v] : ms.items()) share[k] = step_ms > 0 ? v.get<double>() / step_ms : 0.0;
  nlohmann::json out = {{"steps", steps},
                        {"step_ms", step_ms},
                        {"ms_per_step", ms},
                        {"share", share},
                        {"time_of", host.device ? "device" : "host ops"}};
  if (!host.device && !host.products.empty()) out["gemm_products"] = gemm_rows_(host.products, n);
  return out;
}

nlohmann::json StepProfiler::stop(int64_t steps, double wall_s, const std::string& trace_path) {
  running_ = false;
  std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
  using Kind = ProfileEvent::Kind;
  std::vector<ProfileEvent> evs;
  for (const auto& e : result->events()) {
    const auto type = static_cast<libkineto::ActivityType>(e.activityType());
    Kind kind = Kind::kHostOp;
    if (e.deviceType() != c10::DeviceType::CPU) {
      // Kernels, copies and sets; the device's annotation ranges repeat the ops' spans.
      if (type != libkineto::ActivityType::CONCURRENT_KERNEL &&
          type != libkineto::ActivityType::GPU_MEMCPY &&
          type != libkineto::ActivityType::GPU_MEMSET) {
        continue;
      }
      kind = Kind::kDevice;
    } else if (type == libkineto::ActivityType::CUDA_RUNTIME ||
               type == libkineto::ActivityType::CUDA_DRIVER) {
      kind = Kind::kHostRuntime;
    }
    if (e.durationNs() == 0) continue;
    evs.push_back({kind, e.startThreadId(), e.startNs(), e.endNs(), e.name(), e.correlationId(),
                   e.linkedCorrelationId()});
    if (kind == Kind::kHostOp && e.hasShapes()) {
      const auto shapes = e.shapes();
      set_gemm_product(evs.back(), shapes.data(), shapes.size());
    }
  }
  try {
    result->save(trace_path);
  } catch (const std::exception& e) {
    throw RunError("--profile_steps: cannot write the trace '" + trace_path +
                   "': " + error_text(e));
  }
  nlohmann::json j = profile_breakdown(std::move(evs), steps, wall_s);
  j["trace"] = std::filesystem::path(trace_path).filename().string();
  return j;
}

}  // namespace trainbench
