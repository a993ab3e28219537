// cxxopts front end over the flag table (core/flags.h): every flag is read as text and set by
// set_flag, so that a malformed value gets the same one-line error shape as one out of range.
#include "trainbench/app/cli.h"
#include "trainbench/core/run_files.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <vector>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "trainbench/core/choices.h"
#include "trainbench/core/flags.h"
#include "trainbench/report/results.h"
#include "trainbench/report/summary_fields.h"
#include "trainbench/report/tensorboard.h"

namespace trainbench {
namespace {

// `--resume DIR` alone continues the run as it was started (nanoGPT's init_from=resume): the
// flags recorded in DIR/config.json become the base, under the explicit flags; prepare_run then
// refuses the explicit ones a resume may not change, naming them. Without a config.json the
// base stays as it is and validate() names the folder.
void start_from_recorded_(RunConfig& cfg, const cxxopts::ParseResult& parsed) {
  const std::string file = run_file(parsed["resume"].as<std::string>(), RunFile::kConfig);
  if (!std::filesystem::is_regular_file(file)) return;
  RunConfig recorded;
  nlohmann::json j;
  try {
    j = read_json_file(file);
  } catch (const std::exception& e) {  // not JSON
    throw ConfigError("--resume: '" + file + "': " + json_message(e));
  }
  // One schema: a folder of another is refused, untouched, before its fields are read.
  if (const nlohmann::json v =
          j.is_object() ? j.value("schema_version", nlohmann::json()) : nlohmann::json();
      v != kSchemaVersion) {
    throw ConfigError("--resume: '" + file + "' has schema_version " +
                      (v.is_null() ? std::string("none") : v.dump()) + "; this bench reads " +
                      std::to_string(kSchemaVersion) +
                      " only: start the run again with its flags into a new folder");
  }
  try {
    from_json(j, recorded);
  } catch (const std::exception& e) {  // a field of the wrong type
    throw ConfigError("--resume: '" + file + "': " + json_message(e));
  }
  if (parsed.count("preset")) {
    apply_preset(recorded, choice_of<Preset>("preset", parsed["preset"].as<std::string>()));
  }
  // Testing aids belong to the session that set them: a resumed run would crash again.
  recorded.fault_nan_step = 0;
  recorded.fault_exit_step = 0;
  recorded.fault_escape_step = 0;
  recorded.overwrite = false;
  cfg = recorded;
}

const char* const kExitCodes =
    "\nExit status: 0 the run completed; 1 it failed or its loss diverged (summary.json says "
    "which);\n2 bad flags or input (one line says what is wrong and what is allowed; nothing "
    "is written);\n3 the --fault_exit_step testing aid; 128+N stopped by signal N (130 Ctrl-C, "
    "143 SIGTERM,\n129 SIGHUP) after writing its results and a checkpoint: bench --resume "
    "RUN_DIR continues it.\n";

// The known flag closest to an unknown `name` (an edit distance of at most 2, or one that
// starts with it), or "" when none is close: "num_layers" → "num_layer".
std::string closest_flag(const std::string& name) {
  // Levenshtein distance, two rows.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
      }
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  // Other trainers' spellings of bench's flags (nanoGPT, llm.c, torchtitan, tensorboard).
  static const std::map<std::string, std::string> kSynonyms = {{"out_dir", "save_dir"},
                                                               {"output_dir", "save_dir"},
                                                               {"run_dir", "save_dir"},
                                                               {"log_dir", "save_dir"},
                                                               {"logdir", "save_dir"},
                                                               {"n_layer", "num_layer"},
                                                               {"n_embd", "d_model"},
                                                               {"n_head", "num_heads"},
                                                               {"block_size", "seq_len"},
                                                               {"learning_rate", "lr"},
                                                               {"max_iters", "steps"},
                                                               {"max_steps", "steps"},
                                                               {"warmup_iters", "warmup_steps"},
                                                               {"precision", "dtype"},
                                                               {"data_path", "data"}};
  if (const auto it = kSynonyms.find(name); it != kSynonyms.end()) return it->second;
  std::string best;
  size_t best_d = 3;
  for (const FlagSpec& f : flag_table()) {
    const std::string cand = f.name;
    size_t d = distance(name, cand);
    if (name.size() >= 3 && cand.rfind(name, 0) == 0) d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = cand;
    }
  }
  return best;
}

// --help shows the values a run would take: the reference defaults, or a preset's
// (`bench --preset quick --help`).
RunConfig help_defaults_(int argc, const char* const* argv) {
  RunConfig defaults;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string preset;
    if (arg == "--preset" && i + 1 < argc) preset = argv[i + 1];
    if (arg.rfind("--preset=", 0) == 0) preset = arg.substr(9);
    if (const auto p = parse_choice<Preset>(preset)) apply_preset(defaults, *p);
  }
  return defaults;
}

// The commands, then every flag of the table as text, in its help group.
void add_flags_(cxxopts::Options& options, const RunConfig& defaults) {
  auto adder = options.add_options();
  adder("h,help", "print this help and exit (--help --json: the flag table as JSON)");
  adder("version", "print bench's version (source revision, LibTorch) and exit");
  adder("export_corpus",
        "write the embedded corpus to this file and exit (for the Python/JAX "
        "peers, which then read the same bytes with --data)",
        cxxopts::value<std::string>());
  // --help in groups, each in the flag table's order.
  for (const auto& group : ChoiceTable<HelpGroup>::rows) {
    auto in_group = options.add_options(group.name);
    for (const FlagSpec& f : flag_table()) {
      if (f.group != group.value) continue;
      in_group(f.name, f.help,
               cxxopts::value<std::string>()->default_value(flag_text(f, defaults)));
    }
  }
}

// The usage text: the groups in the table's order under titles in plain words ("Checkpoints:",
// not cxxopts' " checkpoints options:", which alone would also sort them by name), then the
// exit codes.
std::string help_text_(cxxopts::Options& options, const RunConfig& defaults) {
  std::vector<std::string> groups = choice_names<HelpGroup>();
  groups.insert(groups.begin(), "");  // help, version, export_corpus first
  std::string text = options.help(groups);
  for (const std::string& g : choice_names<HelpGroup>()) {
    std::string title = g;
    title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
    const std::string theirs = " " + g + " options:\n";
    if (const size_t at = text.find(theirs); at != std::string::npos) {
      text.replace(at, theirs.size(), title + ":\n");
    }
  }
  if (defaults.preset == Preset::kQuick) {
    text += "\n(defaults shown: --preset quick's values)\n";
  }
  return text + kExitCodes;
}

// Unknown and repeated flags, caught before cxxopts so that the message has our shape (cxxopts'
// has its own, and takes the last of a repeated flag without a word).
void check_given_flags_(int argc, const char* const* argv) {
  std::map<std::string, std::string> given;  // name -> its value as written
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) continue;
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool known =
        name == "help" || name == "version" || name == "export_corpus" || find_flag(name);
    if (!known) {
      const std::string near = closest_flag(name);
      throw ConfigError("--" + name + ": unknown flag" +
                        (near.empty() ? "" : "; did you mean --" + near + "?") +
                        " (see bench --help for the allowed flags)");
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
}

cxxopts::ParseResult parse_(cxxopts::Options& options, int argc, const char* const* argv) {
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
  return parsed;
}

}  // namespace

nlohmann::json flag_table_json() {
  RunConfig quick;
  apply_preset(quick, Preset::kQuick);
  const nlohmann::json reference_values = RunConfig{}, quick_values = quick;
  nlohmann::json flags = nlohmann::json::array();
  for (const FlagSpec& f : flag_table()) {
    static const char* const kKinds[] = {"int", "number", "text", "switch"};
    flags.push_back({{"name", f.name},
                     {"kind", kKinds[static_cast<int>(f.kind)]},
                     {"group", name_of(f.group)},
                     {"help", f.help},
                     {"choices", f.choices},
                     {"default", reference_values.at(f.name)},
                     {"quick", quick_values.at(f.name)}});
  }
  return {{"schema_version", kSchemaVersion},
          {"flags", flags},
          {"summary", summary_fields_json()},
          {"tensorboard", tensorboard_scalars_json()}};
}

CliResult parse_cli(int argc, const char* const* argv) {
  cxxopts::Options options("bench",
                           "trainbench: byte-level transformer training benchmark (LibTorch)");
  options.custom_help("[flags]   |   bench report RUN_DIR...");
  const RunConfig defaults = help_defaults_(argc, argv);
  add_flags_(options, defaults);
  CliResult out;
  if (argc == 3 && ((std::string(argv[1]) == "--help" && std::string(argv[2]) == "--json") ||
                    (std::string(argv[1]) == "--json" && std::string(argv[2]) == "--help"))) {
    out.help_json = true;
    return out;
  }
  out.help_text = help_text_(options, defaults);
  check_given_flags_(argc, argv);
  const cxxopts::ParseResult parsed = parse_(options, argc, argv);
  out.help = parsed.count("help") > 0;
  out.version = !out.help && parsed.count("version") > 0;
  if (out.help || out.version) return out;
  if (parsed.count("export_corpus")) out.export_corpus = parsed["export_corpus"].as<std::string>();
  apply_preset(out.config, choice_of<Preset>("preset", parsed["preset"].as<std::string>()));
  if (parsed.count("resume")) start_from_recorded_(out.config, parsed);
  for (const FlagSpec& f : flag_table()) {
    if (parsed.count(f.name) && std::string(f.name) != "preset") {
      set_flag(f, out.config, parsed[f.name].as<std::string>());
    }
  }
  return out;
}

}  // namespace trainbench
