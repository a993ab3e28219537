// Clock reads: a steady clock that follows the device (synchronize first, then read), and the
// time of day in UTC for logs and records.
#pragma once

#include <string>

// Declared, not included: the files that only read the clock or the host facts stay torch-free.
namespace c10 {
struct Device;
}  // namespace c10

namespace trainbench {

// Seconds on a monotonic clock, read after all queued work on `device` is done (no wait on
// CPU, where ops are synchronous).
double synchronized_now_s(const c10::Device& device);

// The time now in UTC, as strftime's `format` writes it.
std::string utc_now(const char* format);
// ISO-8601 UTC timestamp, e.g. 2026-11-30T10:23:40Z.
std::string utc_now_iso8601();

}  // namespace trainbench
