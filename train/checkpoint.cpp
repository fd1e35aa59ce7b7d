#include "train/checkpoint.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "codelets/splitmix.hpp"
#include "sim/json_file.hpp"
#include "graph/input_file.hpp"

namespace rrfp::train {

namespace {

constexpr char kMagic[8] = {'R', 'R', 'F', 'P', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 1;
// The checksum's FNV-1a offset basis in format 1: a digit short of FNV's
// own, kept so that existing checkpoints still load.
constexpr std::uint64_t kChecksumBasis = 1469598103934665603ULL;

template <class T>
void put(std::vector<char>& out, const T& v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

struct Reader {
  const std::vector<char>& b;
  size_t at;
  const std::string& where;
  void need(size_t n) {
    if (n > b.size() - at) throw CheckpointError(fmt::format("checkpoint '{}' is truncated", where));
  }
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  std::string str(size_t n) {
    need(n);
    std::string s(b.data() + at, n);
    at += n;
    return s;
  }
};

std::string errno_text() { return std::strerror(errno); }

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw SpecError(fmt::format("cannot open directory '{}': {}", dir, errno_text()));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw SpecError(fmt::format("fsync of directory '{}' failed: {}", dir, errno_text()));
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// This host's name: a process id means something only on its own host (a
// checkpoint directory may be shared over NFS).
std::string host_name() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0 || !h[0]) return "host";
  return h;
}

// Temporaries `<path>.tmp.<host>.<pid>` that writers on this host left
// when they died before their rename (a checkpoint can be gigabytes):
// removed once a write has succeeded. A live process's temporary, and any
// other host's, is left alone.
void remove_stale_temporaries(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string prefix = p.filename().string() + ".tmp." + host_name() + ".";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_of(path), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    const bool gone = ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
    if (gone) std::filesystem::remove(e.path(), ec);
  }
}

}  // namespace

const CkptTensor* Checkpoint::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.rrfp"; }

std::vector<char> encode_checkpoint(const Checkpoint& c) {
  std::vector<char> out(kMagic, kMagic + 8);
  put(out, kVersion);
  const std::string meta = c.meta.dump();
  put(out, static_cast<std::uint64_t>(meta.size()));
  out.insert(out.end(), meta.begin(), meta.end());
  put(out, static_cast<std::uint64_t>(c.tensors.size()));
  for (const CkptTensor& t : c.tensors) {
    put(out, static_cast<std::uint32_t>(t.name.size()));
    out.insert(out.end(), t.name.begin(), t.name.end());
    put(out, static_cast<std::uint32_t>(t.shape.size()));
    for (std::int64_t d : t.shape) put(out, d);
    put(out, static_cast<std::uint64_t>(t.data.size()));
    const char* p = reinterpret_cast<const char*>(t.data.data());
    out.insert(out.end(), p, p + t.data.size() * sizeof(float));
  }
  put(out, fnv1a64(out.data(), out.size(), kChecksumBasis));
  return out;
}

Checkpoint decode_checkpoint(const std::vector<char>& b, const std::string& where) {
  if (b.size() < 8 + 4 + 8 || std::memcmp(b.data(), kMagic, 8) != 0)
    throw CheckpointError(fmt::format("'{}' is not an RRFP checkpoint", where));
  std::uint64_t stored;
  std::memcpy(&stored, b.data() + b.size() - 8, 8);
  if (stored != fnv1a64(b.data(), b.size() - 8, kChecksumBasis))
    throw CheckpointError(fmt::format("checkpoint '{}' is corrupt (checksum mismatch)", where));
  Reader r{b, 8, where};
  const auto version = r.get<std::uint32_t>();
  if (version != kVersion)
    throw CheckpointError(fmt::format("checkpoint '{}' has format version {}, this build reads {}", where, version,
                                      kVersion));
  Checkpoint c;
  const auto meta_len = r.get<std::uint64_t>();
  try {
    c.meta = nlohmann::json::parse(r.str(meta_len));
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("checkpoint '{}' has a malformed header: {}", where, json_reason(e)));
  }
  if (!c.meta.is_object())
    throw CheckpointError(fmt::format("checkpoint '{}' has a malformed header: not a JSON object", where));
  const auto n = r.get<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    CkptTensor t;
    t.name = r.str(r.get<std::uint32_t>());
    const auto dims = r.get<std::uint32_t>();
    std::int64_t numel = 1;
    bool sane = true;  // no negative dimension, no product past the file's size
    for (std::uint32_t d = 0; d < dims; ++d) {
      t.shape.push_back(r.get<std::int64_t>());
      const std::int64_t x = t.shape.back();
      if (x < 0 || (x > 0 && numel > static_cast<std::int64_t>(b.size()) / x)) sane = false;
      if (sane) numel *= x;
    }
    const auto count = r.get<std::uint64_t>();
    if (!sane || count != static_cast<std::uint64_t>(numel) || count > (b.size() - r.at) / sizeof(float))
      throw CheckpointError(fmt::format("checkpoint '{}': tensor '{}' has a bad size", where, t.name));
    t.data.resize(count);
    if (count > 0) std::memcpy(t.data.data(), b.data() + r.at, count * sizeof(float));
    r.at += count * sizeof(float);
    c.tensors.push_back(std::move(t));
  }
  if (r.at != b.size() - 8) throw CheckpointError(fmt::format("checkpoint '{}' has trailing bytes", where));
  return c;
}

void write_file_atomic(const std::string& path, const std::vector<char>& bytes) {
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, host_name(), ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw SpecError(fmt::format("cannot create '{}': {}", tmp, errno_text()));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const std::string e = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw SpecError(fmt::format("writing '{}' failed: {}", tmp, e));
    }
    done += static_cast<size_t>(w);
  }
  const bool synced = ::fsync(fd) == 0;
  std::string flush_error = synced ? "" : errno_text();
  if (::close(fd) != 0 && synced) flush_error = errno_text();  // closed either way: no descriptor leaks
  if (!flush_error.empty()) {
    ::unlink(tmp.c_str());
    throw SpecError(fmt::format("flushing '{}' failed: {}", tmp, flush_error));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string e = errno_text();
    ::unlink(tmp.c_str());
    throw SpecError(fmt::format("renaming '{}' to '{}' failed: {}", tmp, path, e));
  }
  fsync_dir(dir_of(path));
  remove_stale_temporaries(path);
}

void save_checkpoint(const std::string& dir, const Checkpoint& c) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw SpecError(fmt::format("cannot create checkpoint directory '{}': {}", dir, errno_text()));
  write_file_atomic(checkpoint_path(dir), encode_checkpoint(c));
}

Checkpoint load_checkpoint(const std::string& dir) {
  const std::string path = checkpoint_path(dir);
  reject_directory(path, "checkpoint");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(fmt::format("cannot read checkpoint '{}': {}", path, errno_text()));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_checkpoint(bytes, path);
}

}  // namespace rrfp::train
