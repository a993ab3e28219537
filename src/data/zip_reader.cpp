// A single-member zip reader on zlib's raw inflate: enough for enwik9.zip as published
// (one deflated member, no zip64), with every field bounds-checked since input is untrusted.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "trainbench/core/errors.h"
#include "trainbench/data/corpus.h"

namespace trainbench {
namespace {

uint32_t le32_(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint16_t le16_(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

[[noreturn]] void corrupt_(const std::string& name, const std::string& what) {
  throw ConfigError("--data: '" + name + "' is not a readable zip (" + what +
                    "); allowed: a zip with one stored or deflated member, or a raw file");
}

// The end-of-central-directory record: the last "PK\5\6" within the final 64 KiB + 22 bytes.
const uint8_t* find_eocd_(const uint8_t* zip, int64_t size) {
  const int64_t kEocd = 22;
  if (size < kEocd) return nullptr;
  const int64_t lowest = std::max<int64_t>(0, size - kEocd - 65535);
  for (int64_t i = size - kEocd; i >= lowest; --i) {
    if (le32_(zip + i) == 0x06054b50u) return zip + i;
  }
  return nullptr;
}

void inflate_into_(const uint8_t* src, uint64_t src_len, std::vector<uint8_t>& dst,
                   const std::string& name) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) corrupt_(name, "zlib init failed");
  uint64_t in_done = 0, out_done = 0;
  int rc = Z_OK;
  // zlib counts in uInt, so feed and drain in chunks below 4 GiB.
  const uint64_t kChunk = std::numeric_limits<uInt>::max() / 2;
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_done < src_len) {
      zs.next_in = const_cast<Bytef*>(src + in_done);
      zs.avail_in = static_cast<uInt>(std::min(kChunk, src_len - in_done));
      in_done += zs.avail_in;
    }
    if (zs.avail_out == 0) {
      if (out_done >= dst.size()) break;  // more output than the header declared
      zs.next_out = dst.data() + out_done;
      zs.avail_out = static_cast<uInt>(std::min<uint64_t>(kChunk, dst.size() - out_done));
      out_done += zs.avail_out;
    }
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_done >= src_len) break;
  }
  const uint64_t produced = out_done - zs.avail_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) corrupt_(name, "deflate stream is damaged or truncated");
  if (produced != dst.size()) corrupt_(name, "inflated size differs from the header");
}

}  // namespace

std::vector<uint8_t> unzip_single_member(const uint8_t* zip, int64_t size, const std::string& name,
                                         std::string* member_name) {
  const uint8_t* eocd = find_eocd_(zip, size);
  if (!eocd) corrupt_(name, "no end-of-central-directory record");
  const uint16_t entries = le16_(eocd + 10);
  const uint32_t cd_size = le32_(eocd + 12), cd_offset = le32_(eocd + 16);
  if (entries == 0xffff || cd_offset == 0xffffffffu) corrupt_(name, "zip64 is not supported");
  if (uint64_t(cd_offset) + cd_size > uint64_t(eocd - zip)) {
    corrupt_(name, "central directory out of bounds");
  }
  // Count file members (directory entries end in '/'), remembering the one file.
  const uint8_t* p = zip + cd_offset;
  const uint8_t* cd_end = p + cd_size;
  const uint8_t* member = nullptr;
  int files = 0;
  for (int i = 0; i < entries; ++i) {
    if (cd_end - p < 46 || le32_(p) != 0x02014b50u) corrupt_(name, "bad central directory entry");
    const uint16_t name_len = le16_(p + 28), extra_len = le16_(p + 30), comment_len = le16_(p + 32);
    if (cd_end - p < 46 + name_len + extra_len + comment_len) {
      corrupt_(name, "central directory entry out of bounds");
    }
    const bool is_dir = name_len > 0 && p[46 + name_len - 1] == '/';
    if (!is_dir) {
      ++files;
      member = p;
    }
    p += 46 + name_len + extra_len + comment_len;
  }
  if (files != 1) {
    throw ConfigError("--data: '" + name + "' holds " + std::to_string(files) +
                      " file members; allowed: a zip with exactly one member (like enwik9.zip)");
  }
  const uint16_t flags = le16_(member + 8), method = le16_(member + 10);
  const uint32_t crc = le32_(member + 16), comp_size = le32_(member + 20),
                 raw_size = le32_(member + 24), local_offset = le32_(member + 42);
  if (member_name)
    *member_name = std::string(reinterpret_cast<const char*>(member + 46), le16_(member + 28));
  if (flags & 1u) corrupt_(name, "the member is encrypted");
  if (comp_size == 0xffffffffu || raw_size == 0xffffffffu) corrupt_(name, "zip64 is not supported");
  if (method != 0 && method != 8) {
    corrupt_(name, "compression method " + std::to_string(method) + "; allowed: stored or deflate");
  }
  if (uint64_t(local_offset) + 30 > uint64_t(size) || le32_(zip + local_offset) != 0x04034b50u) {
    corrupt_(name, "bad local file header");
  }
  const uint64_t data_offset =
      uint64_t(local_offset) + 30 + le16_(zip + local_offset + 26) + le16_(zip + local_offset + 28);
  if (data_offset + comp_size > uint64_t(size)) corrupt_(name, "member data out of bounds");
  // Deflate expands at most 1032:1; a larger declared size is a damaged (or hostile) header,
  // refused before allocating it.
  if (method == 8 && uint64_t(raw_size) > uint64_t(comp_size) * 1032 + 1024) {
    corrupt_(name, "declared size " + std::to_string(raw_size) + " is impossible for " +
                       std::to_string(comp_size) + " compressed bytes");
  }

  // A stored member's two sizes must agree, also checked before allocating (a header declaring
  // 4 GB for 12 stored bytes took 1.9 GB here before failing; found by scripts/fuzz.sh).
  if (method == 0 && comp_size != raw_size) corrupt_(name, "stored member sizes differ");

  std::vector<uint8_t> out(raw_size);
  if (method == 0) {
    if (raw_size) std::memcpy(out.data(), zip + data_offset, raw_size);
  } else if (raw_size > 0) {
    inflate_into_(zip + data_offset, comp_size, out, name);
  }
  // crc32 takes uInt lengths; feed it in chunks as well.
  uLong c = crc32(0L, Z_NULL, 0);
  for (uint64_t done = 0; done < out.size();) {
    const uInt n = static_cast<uInt>(std::min<uint64_t>(1u << 30, out.size() - done));
    c = crc32(c, out.data() + done, n);
    done += n;
  }
  if (c != crc) corrupt_(name, "CRC-32 mismatch: the member is damaged");
  return out;
}

}  // namespace trainbench
