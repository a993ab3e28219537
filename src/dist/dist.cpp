// c10d rendezvous, process group and failure reports (see dist.h). The only file that includes
// c10d headers; TB_WITH_GLOO/USE_C10D_GLOO and TB_WITH_NCCL/USE_C10D_NCCL come from CMake.
#include "trainbench/dist/dist.h"

#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef TB_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/version.h>
#include <nlohmann/json.hpp>
#ifdef TB_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "sockets.h"
#include "trainbench/core/flags.h"

namespace trainbench {
namespace {

using dist_detail::bound_socket;
using dist_detail::host_address;
using dist_detail::sockets_to_port;

// The base class of every c10d process group (ProcessGroupGloo, ProcessGroupNCCL).
using GroupBase = c10d::Backend;

using Clock = std::chrono::steady_clock;

// The first line of an error's message, without LibTorch's C++ stack (error_text).
std::string message_of_(const std::exception& e) {
  const std::string m = error_text(e);
  return m.substr(0, m.find('\n'));
}

std::string key_(const std::string& stage, int rank) { return stage + "/" + std::to_string(rank); }

std::string ranks_text_(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

struct DistContext::Impl {
  DistEnv env;
  std::vector<std::string> hosts;  // hosts[r]: where rank r runs (filled once all have joined)
  DistBackend kind = DistBackend::kGloo;
  std::string backend;  // its name
  torch::Device device{torch::kCPU};
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<GroupBase> group;
  // The store client's socket(s). TCPStore's check(), set() and the end of a timed-out get()
  // receive without a deadline, so a store across a dead link would block them forever (until
  // TCP gives up, about 15 minutes): every operation is bounded at the socket instead.
  std::set<int> store_sockets;
  void bound_store_(std::chrono::milliseconds limit) {
    for (int fd : store_sockets) bound_socket(fd, limit);
  }

  bool has_(const std::string& key) { return store->check({key}); }

  // Polls for key_(stage, r) of the given ranks until all exist or `limit` passes; returns
  // the ranks still missing.
  std::vector<int> wait_for_(const std::string& stage, const std::vector<int>& ranks,
                             std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    std::vector<int> missing;
    while (true) {
      missing.clear();
      for (int r : ranks) {
        if (!has_(key_(stage, r))) missing.push_back(r);
      }
      if (missing.empty() || Clock::now() >= deadline) return missing;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::vector<int> wait_all_(const std::string& stage, std::chrono::milliseconds limit) {
    std::vector<int> all(static_cast<size_t>(env.world_size));
    for (int r = 0; r < env.world_size; ++r) all[static_cast<size_t>(r)] = r;
    return wait_for_(stage, all, limit);
  }

  std::string where_() const { return env.master_addr + ":" + std::to_string(env.master_port); }
  std::string timeout_text_() const { return std::to_string(timeout.count() / 1000); }

  // Rank 0 hosts the TCPStore (unless torchrun's agent does), the others connect to it; its
  // client sockets get the timeout as a deadline.
  void open_store_() {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(env.master_port);
    so.isServer = env.rank == 0 && !env.agent_store;
    so.numWorkers = static_cast<size_t>(env.world_size);
    so.waitWorkers = false;  // joining is checked in join_, where the missing ranks can be named
    so.timeout = timeout;
    const std::set<int> before = sockets_to_port(env.master_port);
    try {
      // Our keys (and the process group's) live under a prefix of their own: torchrun's store
      // also holds the agent's keys and those of earlier attempts.
      store = c10::make_intrusive<c10d::PrefixStore>(
          "trainbench/attempt" + std::to_string(env.restart_count),
          c10::make_intrusive<c10d::TCPStore>(env.master_addr, so));
    } catch (const std::exception& e) {
      const std::string m = message_of_(e);
      if (so.isServer && m.find("in use") != std::string::npos) {
        throw ConfigError(
            "MASTER_PORT: " + std::to_string(env.master_port) +
            " is already in use on this machine (another run or service holds "
            "it); use a free port (torchrun --master_port, scripts/launch.sh --port)");
      }
      if (so.isServer) throw RunError("rank 0 could not open the store on " + where_() + ": " + m);
      throw RunError("rank " + std::to_string(env.rank) + " could not reach the store at " +
                     where_() + " within " + timeout_text_() +
                     " s (--dist_timeout): " + (env.agent_store ? "torchrun's agent" : "rank 0") +
                     " is not running there or not reachable");
    }
    for (int fd : sockets_to_port(env.master_port)) {
      if (!before.count(fd)) store_sockets.insert(fd);
    }
    bound_store_(timeout);
  }

  // Every rank announces itself and its host, then waits for all the others (naming the ranks
  // that never came).
  void join_() {
    const std::string me = host_address();
    store->set(key_("host", env.rank), std::vector<uint8_t>(me.begin(), me.end()));
    store->set(key_("join", env.rank), std::vector<uint8_t>{'1'});
    const std::vector<int> missing = wait_all_("join", timeout);
    if (!missing.empty()) {
      throw RunError(ranks_text_(missing) + " of " + std::to_string(env.world_size) +
                     " did not join within " + timeout_text_() +
                     " s (--dist_timeout); start every rank with the same WORLD_SIZE, "
                     "MASTER_ADDR and MASTER_PORT (" +
                     where_() + ")");
    }
    for (int r = 0; r < env.world_size; ++r) hosts.push_back(get_(key_("host", r)));
  }

  // The Gloo or NCCL process group; it keeps its own keys under a prefix, apart from ours.
  void make_group_() {
    auto group_store = c10::make_intrusive<c10d::PrefixStore>("group", store);
    if (kind == DistBackend::kGloo) {
#ifdef TB_WITH_GLOO
      auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      const bool loopback = env.master_addr == "localhost" || env.master_addr.rfind("127.", 0) == 0;
      if (ifname && *ifname) {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      } else if (loopback) {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      group =
          c10::make_intrusive<c10d::ProcessGroupGloo>(group_store, env.rank, env.world_size, opts);
#else
      throw ConfigError("--dist_backend: 'gloo' is not in this build");
#endif
    } else {
#ifdef TB_WITH_NCCL
      // Without blocking wait, a dead peer leaves wait() returning and the host hanging on the
      // next read of a result; with it, wait() blocks and throws after the timeout.
      setenv("TORCH_NCCL_BLOCKING_WAIT", "1", 0);
      setenv("NCCL_BLOCKING_WAIT", "1", 0);
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      group =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(group_store, env.rank, env.world_size, opts);
#else
      throw ConfigError("--dist_backend: 'nccl' is not in this build; use --dist_backend gloo");
#endif
    }
  }

  std::string get_(const std::string& key) {
    const std::vector<uint8_t> v = store->get(key);
    return std::string(v.begin(), v.end());
  }
};

DistContext::DistContext(const RunPlan& plan) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.env = plan.dist;
  d.kind = plan.dist_backend;
  d.backend = name_of(d.kind);
  d.device = plan.device;
  d.timeout = std::chrono::milliseconds(plan.cfg.dist_timeout * 1000);
  d.open_store_();
  d.join_();
  d.make_group_();
}

DistContext::~DistContext() = default;

int DistContext::rank() const { return impl_->env.rank; }
int DistContext::world_size() const { return impl_->env.world_size; }
const std::string& DistContext::backend() const { return impl_->backend; }

std::string DistContext::agree(const std::string& stage, const std::string& my_error) {
  Impl& d = *impl_;
  const std::string msg = my_error.empty() ? std::string("ok") : "error: " + my_error;
  d.store->set(key_(stage, d.env.rank), std::vector<uint8_t>(msg.begin(), msg.end()));
  const std::vector<int> missing = d.wait_all_(stage, d.timeout);
  std::string first;
  for (int r = 0; r < d.env.world_size && first.empty(); ++r) {
    if (r == d.env.rank) continue;
    if (std::find(missing.begin(), missing.end(), r) != missing.end()) {
      first = "rank " + std::to_string(r) + ": no report within " +
              std::to_string(d.timeout.count() / 1000) + " s (--dist_timeout)";
      continue;
    }
    const std::string report = d.get_(key_(stage, r));
    if (report != "ok") first = "rank " + std::to_string(r) + ": " + report.substr(7);
  }
  d.store->set(key_(stage + "-read", d.env.rank), std::vector<uint8_t>{'1'});
  if (d.env.rank == 0) d.wait_all_(stage + "-read", d.timeout);
  return first;
}

void DistContext::check_same_config(const nlohmann::json& config) {
  Impl& d = *impl_;
  // Flags a rank may set for itself (the flag table's rank rule): they change no number of the
  // run.
  nlohmann::json shared;
  for (const auto& [k, v] : config.items()) {
    if (!ranks_may_differ(k)) shared[k] = v;
  }
  if (d.env.rank == 0) {
    const std::string text = shared.dump();
    d.store->set("config", std::vector<uint8_t>(text.begin(), text.end()));
    return;
  }
  // Rank 0 publishes its flags after its own checks (the run folder among them); a failure
  // there shows as its setup report instead, and agree() then tells every rank.
  // Rank 0 writes "config" before its setup report, so "config" is read again after the report
  // is seen: between a first look that finds no config and a look that finds the report, rank
  // 0 may have written both (a race that let differing flags through under load).
  const auto deadline = Clock::now() + d.timeout;
  while (!d.has_("config")) {
    if (d.has_(key_("setup", 0)) && !d.has_("config")) return;
    if (Clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const nlohmann::json rank0 = nlohmann::json::parse(d.get_("config"));
  std::string keys;
  for (const auto& [k, v] : shared.items()) {
    if (!rank0.contains(k) || rank0.at(k) != v) keys += (keys.empty() ? "--" : ", --") + k;
  }
  if (!keys.empty()) {
    throw ConfigError("these flags differ from rank 0's: " + keys +
                      "; every rank must run with the same flags");
  }
}

void DistContext::broadcast_from_rank0(std::vector<torch::Tensor> tensors) {
  if (tensors.empty()) return;
  c10d::BroadcastOptions opts;
  opts.rootRank = 0;
  if (!impl_->group) throw CollectiveError("the process group is closed");
  // One flat buffer, one collective (a c10d tensor list means one tensor per local device).
  std::vector<torch::Tensor> flat_parts;
  for (const auto& t : tensors) flat_parts.push_back(t.detach().reshape({-1}));
  std::vector<torch::Tensor> flat{torch::cat(flat_parts)};
  try {
    impl_->group->broadcast(flat, opts)->wait();
    torch::NoGradGuard no_grad;
    int64_t offset = 0;
    for (auto& t : tensors) {
      t.detach().copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  } catch (const std::exception& e) {
    throw CollectiveError("broadcast failed: " + message_of_(e));
  }
}

std::function<void()> DistContext::allreduce_async(std::vector<torch::Tensor> tensors,
                                                   ReduceOp op) {
  c10d::AllreduceOptions opts;
  opts.reduceOp = op == ReduceOp::kSum   ? c10d::ReduceOp::SUM
                  : op == ReduceOp::kMin ? c10d::ReduceOp::MIN
                                         : c10d::ReduceOp::MAX;
  if (!impl_->group) throw CollectiveError("the process group is closed");
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = impl_->group->allreduce(tensors, opts);
  } catch (const std::exception& e) {
    throw CollectiveError("all-reduce failed: " + message_of_(e));
  }
  return [work] {
    try {
      work->wait();
    } catch (const std::exception& e) {
      throw CollectiveError("all-reduce failed: " + message_of_(e));
    }
  };
}

void DistContext::allreduce(std::vector<torch::Tensor> tensors, ReduceOp op) {
  // NCCL reduces device memory only: host tensors (evaluation sums, per-rank figures) make a
  // round trip through the device.
  if (impl_->kind == DistBackend::kNccl) {
    std::vector<torch::Tensor> on_device;
    for (const auto& t : tensors) on_device.push_back(t.to(impl_->device));
    allreduce_async(on_device, op)();
    for (size_t i = 0; i < tensors.size(); ++i) tensors[i].copy_(on_device[i]);
    return;
  }
  allreduce_async(std::move(tensors), op)();
}

std::string DistContext::explain_failure(const std::string& what, bool collective) {
  Impl& d = *impl_;
  const auto grace = std::min<std::chrono::milliseconds>(d.timeout, std::chrono::seconds(5));
  std::string out = what;
  try {
    d.bound_store_(grace);  // a store across a dead link answers nothing: give up soon
    d.store->set(key_("failed", d.env.rank), std::vector<uint8_t>(what.begin(), what.end()));
    if (!collective) {
      d.store->set(key_("failed-read", d.env.rank), std::vector<uint8_t>{'1'});
      d.group.reset();  // the others' pending collectives now fail at once
      // The others learn of it when their next collective fails, which can take a step or an
      // evaluation: rank 0 keeps the store up longer for them.
      const auto patience =
          std::min<std::chrono::milliseconds>(d.timeout, std::chrono::seconds(60));
      if (d.env.rank == 0) d.wait_all_("failed-read", patience);
      return out;
    }
    const std::vector<int> silent = d.wait_all_("failed", grace);
    std::vector<int> reported;
    for (int r = 0; r < d.env.world_size; ++r) {
      if (r == d.env.rank) continue;
      if (std::find(silent.begin(), silent.end(), r) != silent.end()) {
        out += "; rank " + std::to_string(r) + " stopped responding (host " +
               d.hosts[static_cast<size_t>(r)] + "; no report within " +
               std::to_string(grace.count() / 1000) +
               " s: it exited, crashed, hangs or its network is down)";
      } else {
        reported.push_back(r);
        const std::string report = d.get_(key_("failed", r));
        if (report != what) out += "; rank " + std::to_string(r) + " reported: " + report;
      }
    }
    d.store->set(key_("failed-read", d.env.rank), std::vector<uint8_t>{'1'});
    if (d.env.rank == 0) d.wait_for_("failed-read", reported, grace);
  } catch (const std::exception&) {
    if (d.env.rank != 0 && !d.env.agent_store) {
      out += "; rank 0 (host of the store at " + d.env.master_addr + ":" +
             std::to_string(d.env.master_port) +
             ") is gone: it exited, crashed, hangs or its network is down";
    }
  }
  return out;
}

}  // namespace trainbench
