// RunConfig presets, resolved values, run-folder names and the JSON round-trip.
#include "trainbench/core/config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainbench/core/choices.h"
#include "trainbench/core/flags.h"

namespace trainbench {

void apply_preset(RunConfig& cfg, const std::string& name) {
  const Preset preset = choice_of<Preset>("preset", name);
  cfg = RunConfig{};
  if (preset == Preset::kQuick) {
    // Sized to finish in about a minute on 2 CPU cores while still learning visibly.
    cfg.num_layer = 2;
    cfg.d_model = 128;
    cfg.num_heads = 4;
    cfg.ff_dim = 512;
    cfg.seq_len = 128;
    cfg.batch_size = 16;
    cfg.steps = 400;
    cfg.eval_every = 200;
    cfg.eval_batches = 10;
    cfg.save_dir = "runs/quick";
  }
  cfg.preset = name_of(preset);
}

std::string run_dir_name(const RunConfig& cfg) {
  if (!cfg.run_folder.empty()) return cfg.run_folder;
  std::string name =
      cfg.save_dir + "_" + cfg.model + "_layer" + std::to_string(cfg.num_layer) + "_" + cfg.dtype;
  if (const auto path = parse_choice<CompilePath>(cfg.compile)) name += row_of(*path).folder_suffix;
  if (cfg.flash) name += "_flash";
  return name;
}

int64_t resolved_valid_bytes(const RunConfig& cfg, int64_t corpus_bytes) {
  if (cfg.valid_bytes >= 0) return cfg.valid_bytes;
  return std::min<int64_t>(5'000'000, corpus_bytes / 20);
}

bool switch_on(const nlohmann::json& value) {
  if (value.is_boolean()) return value.get<bool>();
  return value.is_number() && value.get<double>() != 0;
}

std::string compile_path(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  return name_of(switch_on(value) ? CompilePath::kTorchScript : CompilePath::kNone);
}

bool same_setting(const nlohmann::json& a, const nlohmann::json& b) {
  // --compile was a switch before it named its path: false/0 is "none", true/1 "torchscript".
  if (a.is_string() != b.is_string() &&
      (a.is_boolean() || a.is_number() || b.is_boolean() || b.is_number())) {
    return compile_path(a) == compile_path(b);
  }
  if (a.is_boolean() != b.is_boolean() && (a.is_number() || b.is_number())) {
    return switch_on(a) == switch_on(b);
  }
  return a == b;
}

// One key per flag, named as the flag without dashes, in the flag table's order.
void to_json(nlohmann::json& j, const RunConfig& cfg) {
  j = nlohmann::json::object();
  for (const FlagSpec& f : flag_table()) {
    std::visit([&](auto member) { j[f.name] = cfg.*member; }, f.field);
  }
}

std::string json_message(const std::exception& e) {
  std::string m = e.what();
  if (m.rfind("[json.exception.", 0) == 0) {
    const size_t end = m.find("] ");
    if (end != std::string::npos) m = m.substr(end + 2);
  }
  return m;
}

namespace {

// What a flag's config.json value must be, in words, and whether `v` is one.
std::pair<const char*, bool> expected_(const FlagSpec& f, const nlohmann::json& v) {
  switch (f.kind) {
    case FlagKind::kInt:
      return {"an integer", v.is_number_integer()};
    case FlagKind::kNumber:
      return {"a number", v.is_number()};
    case FlagKind::kBool:
      return {"true or false (or 0/1)", v.is_boolean() || v.is_number_integer()};
    case FlagKind::kText:
      // --compile was a switch in older folders: 0/1 and false/true still name its paths.
      return {"a string", v.is_string() || (std::string(f.name) == "compile" &&
                                            (v.is_boolean() || v.is_number_integer()))};
  }
  return {"", true};
}

}  // namespace

void from_json(const nlohmann::json& j, RunConfig& cfg) {
  if (!j.is_object()) throw ConfigError("not a JSON object of flags");
  for (const FlagSpec& f : flag_table()) {
    if (!j.contains(f.name)) continue;
    const nlohmann::json& v = j.at(f.name);
    const auto [want, ok] = expected_(f, v);
    if (!ok) {
      throw ConfigError("field '" + std::string(f.name) + "' is " + v.type_name() + " (" +
                        v.dump() + "); expected " + want);
    }
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(cfg.*member)>;
          // Switches were written as 0/1 before they were bools (older run folders, the peers).
          if constexpr (std::is_same_v<T, bool>) {
            cfg.*member = v.is_number() ? switch_on(v) : v.get<bool>();
          } else if constexpr (std::is_same_v<T, std::string>) {
            // A text flag that was a switch (--compile): 0/1, false/true name its old choices.
            cfg.*member = v.is_string() ? v.get<std::string>() : compile_path(v);
          } else {
            v.get_to(cfg.*member);
          }
        },
        f.field);
  }
}

}  // namespace trainbench
