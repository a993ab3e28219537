// Files written whole or not at all: the run folder's JSON files, checkpoints and their
// records, --save_model's network and --export_corpus. Each is written to a temporary file
// beside its place ("PATH.tmp.PID": two processes never share one), flushed, and renamed over
// PATH, so a reader (or a crash at any moment) sees the old file or the new one, never a part.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace trainbench {

// Writes `bytes` to `file` (created or truncated), retrying short writes; "" or why it failed
// (strerror's words).
std::string write_bytes(const std::string& file, std::string_view bytes);

// Writes `bytes` to `path` atomically. Throws RunError "cannot write 'TMP': WHY" (the temporary
// file is removed) or "cannot move 'TMP' to 'PATH': WHY".
void write_file_atomic(const std::string& path, std::string_view bytes);

// The same for a file another writer fills: `fill(tmp)` writes the temporary file and returns
// "" or why it failed; that, or a failed rename, is RunError "<what> 'PATH': WHY" (the
// temporary file removed, PATH untouched). `what` names the file in messages ("cannot write
// checkpoint 'PATH': ...").
void write_file_atomic(const std::string& path,
                       const std::function<std::string(const std::string& tmp)>& fill,
                       const std::string& what = "cannot write");

}  // namespace trainbench
