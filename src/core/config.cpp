// RunConfig presets, resolved values, run-folder names and the JSON round-trip.
#include "trainbench/core/config.h"

#include <algorithm>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "trainbench/core/choices.h"
#include "trainbench/core/flags.h"

namespace trainbench {

void apply_preset(RunConfig& cfg, Preset preset) {
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
  cfg.preset = preset;
}

std::string run_dir_name(const RunConfig& cfg) {
  if (!cfg.run_folder.empty()) return cfg.run_folder;
  std::string name = cfg.save_dir + "_" + name_of(cfg.model) + "_layer" +
                     std::to_string(cfg.num_layer) + "_" + name_of(cfg.dtype) +
                     row_of(cfg.compile).folder_suffix;
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

// One key per flag, named as the flag without dashes, in the flag table's order; a choice flag
// by its name.
void to_json(nlohmann::json& j, const RunConfig& cfg) {
  j = nlohmann::json::object();
  for (const FlagSpec& f : flag_table()) {
    if (const auto* choice = std::get_if<ChoiceField>(&f.field)) {
      j[f.name] = choice->get(cfg);
    } else {
      std::visit(
          [&](auto member) {
            if constexpr (!std::is_same_v<decltype(member), ChoiceField>) j[f.name] = cfg.*member;
          },
          f.field);
    }
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

bool is_choice_(const FlagSpec& f, const std::string& name) {
  return std::find(f.choices.begin(), f.choices.end(), name) != f.choices.end();
}

// What a flag's config.json value must be, in words, and whether `v` is one.
std::pair<std::string, bool> expected_(const FlagSpec& f, const nlohmann::json& v) {
  switch (f.kind) {
    case FlagKind::kInt:
      return {"an integer", v.is_number_integer()};
    case FlagKind::kNumber:
      return {"a number", v.is_number()};
    case FlagKind::kBool:
      return {"true or false", v.is_boolean()};
    case FlagKind::kText:
      if (f.choices.empty()) return {"a string", v.is_string()};
      std::string names;
      for (const std::string& n : f.choices) names += (names.empty() ? "" : "|") + n;
      // A boolean where 0 and 1 are choices: a run folder from before the flag took auto.
      if (v.is_boolean()) return {"one of " + names, is_choice_(f, "1") && is_choice_(f, "0")};
      return {"one of " + names, v.is_string() && is_choice_(f, v.get<std::string>())};
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
    if (const auto* choice = std::get_if<ChoiceField>(&f.field)) {
      choice->set(cfg, v.is_boolean() ? (v.get<bool>() ? "1" : "0") : v.get<std::string>());
    } else {
      std::visit(
          [&](auto member) {
            if constexpr (!std::is_same_v<decltype(member), ChoiceField>) v.get_to(cfg.*member);
          },
          f.field);
    }
  }
}

}  // namespace trainbench
