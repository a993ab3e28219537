// TensorBoard event files (report/tensorboard.h): TFRecord framing, the event messages, the
// writer and the resume trim.
#include "trainbench/report/tensorboard.h"

#include <fcntl.h>
#include <nmmintrin.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "proto/tb_event.pb.h"
#include "proto/tb_hparams.pb.h"
#include "trainbench/core/atomic_file.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/errors.h"
#include "trainbench/core/flags.h"
#include "trainbench/core/run_files.h"

namespace trainbench {

namespace fs = std::filesystem;

namespace {

const char* const kPrefix = name_of(RunFile::kEvents);
constexpr const char* kStartTag = "_hparams_/session_start_info";  // the plugin's tags
constexpr const char* kEndTag = "_hparams_/session_end_info";
constexpr const char* kExperimentTag = "_hparams_/experiment";

// CRC-32C with SSE4.2's crc32 instruction, 8 bytes at a time.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42_(const unsigned char* p, size_t n) {
  uint64_t crc = 0xFFFFFFFFu;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = _mm_crc32_u64(crc, word);
  }
  auto c = static_cast<uint32_t>(crc);
  for (; n > 0; --n, ++p) c = _mm_crc32_u8(c, *p);
  return c ^ 0xFFFFFFFFu;
}

void put_le_(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t get_le_(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::string hostname_() {
  char buf[256] = "";
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "host";
  return buf;
}

// Makes `e` an event of one summary value tagged `tag` and returns that value, to fill in.
tensorboard::Summary::Value* value_of_(tensorboard::Event& e, const std::string& tag, int64_t step,
                                       double wall_time) {
  e.set_wall_time(wall_time);
  e.set_step(step);
  tensorboard::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  return v;
}

// The plugin metadata of an hparams record: plugin "hparams", content the serialized data.
tensorboard::Event hparams_event_(const std::string& tag, int64_t step, double wall_time,
                                  const tensorboard::hparams::HParamsPluginData& data) {
  tensorboard::Event e;
  tensorboard::Summary::Value* v = value_of_(e, tag, step, wall_time);
  auto* plugin = v->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name("hparams");
  plugin->set_content(data.SerializeAsString());
  return e;
}

// TFRecord's mask of the CRC-32C of `n` bytes.
uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n, const CpuIsa& isa) {
  if (!isa.sse4_2) {
    throw RunError(
        "TensorBoard event files need the CPU's SSE4.2 CRC-32C instruction, which "
        "this CPU lacks; run with --tensorboard 0");
  }
  return crc32c_sse42_(static_cast<const unsigned char*>(data), n);
}

uint32_t crc32c(const void* data, size_t n) {
  static const CpuIsa isa = hardware_isa();
  return crc32c(data, n, isa);
}

std::string tfrecord(const std::string& payload) {
  std::string out, len;
  put_le_(len, payload.size(), 8);
  out += len;
  put_le_(out, masked_crc32c(len.data(), len.size()), 4);
  out += payload;
  put_le_(out, masked_crc32c(payload.data(), payload.size()), 4);
  return out;
}

std::vector<std::string> read_tfrecords(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::string> out;
  size_t at = 0;
  while (at + 12 <= bytes.size()) {
    const uint64_t n = get_le_(bytes.data() + at, 8);
    if (masked_crc32c(bytes.data() + at, 8) != get_le_(bytes.data() + at + 8, 4)) break;
    if (n > bytes.size() || at + 12 + n + 4 > bytes.size()) break;  // a short last record
    const char* payload = bytes.data() + at + 12;
    if (masked_crc32c(payload, n) != get_le_(payload + n, 4)) break;
    out.emplace_back(payload, n);
    at += 12 + n + 4;
  }
  return out;
}

std::vector<std::string> event_files(const std::string& run_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    if (e.path().filename().string().rfind(kPrefix, 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void trim_event_files(const std::string& run_dir, int64_t last_step) {
  for (const std::string& file : event_files(run_dir)) {
    const std::vector<std::string> records = read_tfrecords(file);
    std::string kept;
    bool changed = false;
    for (const std::string& r : records) {
      tensorboard::Event e;
      const bool parsed = e.ParseFromString(r);
      // The session's end and its whole_run/* metrics belong to the session that ends the run.
      const std::string tag = parsed && e.has_summary() && e.summary().value_size() > 0
                                  ? e.summary().value(0).tag()
                                  : "";
      const bool session_end = tag == kEndTag || tag.rfind(tb_tag::kFinalPrefix, 0) == 0;
      if (!parsed || e.step() > last_step || session_end) {
        changed = true;
        continue;
      }
      kept += tfrecord(r);
    }
    std::error_code ec;
    if (changed || kept.size() != fs::file_size(file, ec)) write_file_atomic(file, kept);
  }
}

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TensorBoardWriter::TensorBoardWriter(const std::string& run_dir) {
  const double now = wall_time_now();
  // TensorBoard's name: events.out.tfevents.<seconds>.<host>; the pid and a suffix keep two
  // sessions of one second apart (a resume right after a stop).
  file_ = run_dir + "/" + kPrefix + std::to_string(static_cast<int64_t>(now)) + "." + hostname_() +
          "." + std::to_string(getpid()) + ".bench";
  fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw RunError("cannot create '" + file_ + "': " + std::strerror(errno));
  tensorboard::Event first;
  first.set_wall_time(now);
  first.set_file_version("brain.Event:2");
  append_(first.SerializeAsString());
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  try {
    flush();
  } catch (const std::exception&) {  // the run already reported its file errors
  }
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::append_(const std::string& event) { pending_ += tfrecord(event); }

void TensorBoardWriter::scalar(const std::string& tag, int64_t step, double value,
                               double wall_time) {
  tensorboard::Event e;
  tensorboard::Summary::Value* v = value_of_(e, tag, step, wall_time);
  v->set_simple_value(static_cast<float>(value));
  append_(e.SerializeAsString());
}

void TensorBoardWriter::text(const std::string& tag, int64_t step, const std::string& markdown,
                             double wall_time) {
  tensorboard::Event e;
  tensorboard::Summary::Value* v = value_of_(e, tag, step, wall_time);
  auto* meta = v->mutable_metadata();
  meta->mutable_plugin_data()->set_plugin_name("text");
  meta->set_data_class(tensorboard::DATA_CLASS_TENSOR);
  auto* t = v->mutable_tensor();
  t->set_dtype(tensorboard::DT_STRING);
  t->mutable_tensor_shape();  // a scalar string
  t->add_string_val(markdown);
  append_(e.SerializeAsString());
}

void TensorBoardWriter::hparams_start(const nlohmann::json& flags, double wall_time) {
  namespace hp = tensorboard::hparams;
  hp::HParamsPluginData exp_data, start_data;
  hp::Experiment* exp = exp_data.mutable_experiment();
  hp::SessionStartInfo* start = start_data.mutable_session_start_info();
  start->set_start_time_secs(wall_time);
  for (const FlagSpec& f : flag_table()) {
    if (!flags.contains(f.name)) continue;
    const nlohmann::json& v = flags.at(f.name);
    hp::HParamValue value;
    hp::HParamInfo* info = exp->add_hparam_infos();
    info->set_name(f.name);
    if (v.is_boolean()) {
      value.set_bool_value(v.get<bool>());
      info->set_type(hp::DATA_TYPE_BOOL);
    } else if (v.is_number()) {
      value.set_number_value(v.get<double>());
      info->set_type(hp::DATA_TYPE_FLOAT64);
    } else {
      value.set_string_value(v.is_string() ? v.get<std::string>() : v.dump());
      info->set_type(hp::DATA_TYPE_STRING);
    }
    (*start->mutable_hparams())[f.name] = value;
  }
  for (const char* tag : {tb_tag::kFinalSeqPerS, tb_tag::kFinalTokensPerS, tb_tag::kFinalValidBpb,
                          tb_tag::kFinalCompleted}) {
    exp->add_metric_infos()->mutable_name()->set_tag(tag);
  }
  exp->set_time_created_secs(wall_time);
  append_(hparams_event_(kExperimentTag, 0, wall_time, exp_data).SerializeAsString());
  append_(hparams_event_(kStartTag, 0, wall_time, start_data).SerializeAsString());
}

void TensorBoardWriter::hparams_end(const std::string& status, int64_t step, double wall_time) {
  namespace hp = tensorboard::hparams;
  hp::HParamsPluginData data;
  hp::SessionEndInfo* end = data.mutable_session_end_info();
  end->set_status(status == "completed"                        ? hp::STATUS_SUCCESS
                  : status == "failed" || status == "diverged" ? hp::STATUS_FAILURE
                                                               : hp::STATUS_UNKNOWN);
  end->set_end_time_secs(wall_time);
  append_(hparams_event_(kEndTag, step, wall_time, data).SerializeAsString());
}

void TensorBoardWriter::flush() {
  if (pending_.empty() || fd_ < 0) return;
  const std::string why = [&]() -> std::string {
    size_t done = 0;
    while (done < pending_.size()) {
      const ssize_t w = ::write(fd_, pending_.data() + done, pending_.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return std::strerror(errno);
      done += static_cast<size_t>(w);
    }
    return "";
  }();
  pending_.clear();
  if (!why.empty()) throw RunError("cannot write '" + file_ + "': " + why);
}

nlohmann::json tensorboard_scalars_json() {
  nlohmann::json out = nlohmann::json::object();
  for (const TensorBoardScalar& s : kTensorBoardScalars) out[s.key] = s.tag;
  return out;
}

}  // namespace trainbench
