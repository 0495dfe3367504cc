#include "runtime/core/Safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "runtime/core/Error.h"

namespace scanforge {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this runtime writes tensors' memory as it is");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr const char *kMetadataKey = "__metadata__";

const char *formatName(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
  }
  return "?";
}

bool parseFormatName(const std::string &name, DType &dtype) {
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::I64})
    if (name == formatName(d)) {
      dtype = d;
      return true;
    }
  return false;
}

std::string systemError() { return std::strerror(errno); }

// Writes all of `bytes`, retrying short writes and interrupted calls.
bool writeAll(int fd, const void *bytes, size_t size) {
  const char *p = static_cast<const char *>(bytes);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

uint64_t readUnsigned(const nlohmann::json &value, const std::string &op, const std::string &what) {
  if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0))
    throw RuntimeError(op, what + " must be a non-negative integer, got " + value.dump());
  return value.get<uint64_t>();
}

Entry parseEntry(const std::string &name, const nlohmann::json &info, const std::string &op) {
  std::string where = "tensor '" + name + "'";
  if (!info.is_object()) throw RuntimeError(op, where + " must map to an object, got " + info.dump());
  for (const auto &[key, value] : info.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      throw RuntimeError(op, where + " has an unknown field '" + key + "'");
  for (const char *key : {"dtype", "shape", "data_offsets"})
    if (!info.contains(key)) throw RuntimeError(op, where + " lacks the field '" + key + "'");
  Entry e{name, DType::F32, {}, 0, 0};
  const auto &dtype = info["dtype"];
  if (!dtype.is_string() || !parseFormatName(dtype.get<std::string>(), e.dtype))
    throw RuntimeError(op, where + " has unknown dtype " + dtype.dump() + " (this reader knows F32, F64, BF16, I64)");
  const auto &shape = info["shape"];
  if (!shape.is_array()) throw RuntimeError(op, where + " has a shape that is not an array: " + shape.dump());
  uint64_t numel = 1;
  for (const auto &size : shape) {
    uint64_t s = readUnsigned(size, op, where + "'s shape entry");
    if (s > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) || (s && numel > UINT64_MAX / s))
      throw RuntimeError(op, where + " has an impossibly large shape " + shape.dump());
    numel *= s;
    e.shape.push_back(static_cast<int64_t>(s));
  }
  const auto &offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    throw RuntimeError(op, where + "'s data_offsets must be [begin, end], got " + offsets.dump());
  e.begin = readUnsigned(offsets[0], op, where + "'s data_offsets begin");
  e.end = readUnsigned(offsets[1], op, where + "'s data_offsets end");
  if (e.end < e.begin) throw RuntimeError(op, where + " has data_offsets " + offsets.dump() + " with end < begin");
  uint64_t size = sizeOf(e.dtype);
  if (numel > UINT64_MAX / size || numel * size != e.end - e.begin)
    throw RuntimeError(op, where + " is " + std::string(nameOf(e.dtype)) + " " + shapeString(e.shape) + " but its data_offsets " +
                               offsets.dump() + " span " + std::to_string(e.end - e.begin) + " bytes");
  return e;
}

std::string range(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

}  // namespace

void saveCheckpoint(const std::string &path, const Checkpoint &checkpoint) {
  std::string op = "safetensors write '" + path + "'";
  nlohmann::json header = nlohmann::json::object();
  std::vector<Tensor> data;
  uint64_t offset = 0;
  for (const auto &[name, tensor] : checkpoint.tensors) {
    if (name.empty() || name == kMetadataKey) throw RuntimeError(op, "'" + name + "' is not a valid tensor name");
    if (!tensor.defined()) throw RuntimeError(op, "tensor '" + name + "' is undefined");
    uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * sizeOf(tensor.dtype());
    header[name] = {{"dtype", formatName(tensor.dtype())}, {"shape", tensor.shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(tensor.contiguous());
  }
  if (!checkpoint.metadata.empty()) header[kMetadataKey] = checkpoint.metadata;
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception &e) {
    throw RuntimeError(op, std::string("a tensor name or metadata string is not valid UTF-8: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N is then a multiple of 8: aligned data
  uint64_t length = text.size();

  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError(op, "cannot create '" + tmp + "': " + systemError());
  bool ok = writeAll(fd, &length, sizeof length) && writeAll(fd, text.data(), text.size());
  for (size_t i = 0; ok && i < data.size(); ++i)
    if (data[i].numel()) ok = writeAll(fd, data[i].rawData(), static_cast<size_t>(data[i].numel()) * sizeOf(data[i].dtype()));
  std::string failure = ok ? "" : "write failed: " + systemError();
  if (ok && ::fsync(fd) != 0) failure = "fsync failed: " + systemError();
  if (::close(fd) != 0 && failure.empty()) failure = "close failed: " + systemError();
  if (failure.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) failure = "rename over the target failed: " + systemError();
  if (!failure.empty()) {
    ::unlink(tmp.c_str());
    throw RuntimeError(op, failure);
  }
  // Make the rename itself durable.
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dirFd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
}

Checkpoint loadCheckpoint(const std::string &path) {
  std::string op = "safetensors read '" + path + "'";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RuntimeError(op, "cannot open the file: " + systemError());
  std::error_code ec;
  uint64_t fileSize = std::filesystem::file_size(path, ec);
  if (ec) throw RuntimeError(op, "cannot read the file size: " + ec.message());
  if (fileSize < 8)
    throw RuntimeError(op, "truncated: " + std::to_string(fileSize) + " bytes, fewer than the 8-byte header length");
  uint64_t length = 0;
  in.read(reinterpret_cast<char *>(&length), sizeof length);
  if (length > kMaxHeaderBytes)
    throw RuntimeError(op, "the header length field says " + std::to_string(length) +
                               " bytes, more than the format's 100 MB limit: not a safetensors file, or corrupt");
  if (length > fileSize - 8)
    throw RuntimeError(op, "truncated: the header length field says " + std::to_string(length) + " bytes but only " +
                               std::to_string(fileSize - 8) + " follow it");
  std::string text(length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(length));
  if (!in) throw RuntimeError(op, "could not read the " + std::to_string(length) + "-byte header");

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    throw RuntimeError(op, std::string("the header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) throw RuntimeError(op, "the header must be a JSON object, got " + std::string(header.type_name()));

  Checkpoint checkpoint;
  std::vector<Entry> entries;
  for (const auto &[key, value] : header.items()) {
    if (key != kMetadataKey) {
      entries.push_back(parseEntry(key, value, op));
      continue;
    }
    if (!value.is_object()) throw RuntimeError(op, "__metadata__ must be an object of strings, got " + value.dump());
    for (const auto &[k, v] : value.items()) {
      if (!v.is_string()) throw RuntimeError(op, "__metadata__ value of '" + k + "' is not a string: " + v.dump());
      checkpoint.metadata[k] = v.get<std::string>();
    }
  }

  // The tensors must tile the data section exactly.
  uint64_t dataSize = fileSize - 8 - length;
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t cursor = 0;
  const Entry *previous = nullptr;
  for (const Entry &e : entries) {
    if (e.end > dataSize)
      throw RuntimeError(op, "tensor '" + e.name + "' has data_offsets " + range(e.begin, e.end) +
                                 " beyond the data section's " + std::to_string(dataSize) + " bytes (truncated file?)");
    if (e.begin < cursor)
      throw RuntimeError(op, "tensor '" + e.name + "' bytes " + range(e.begin, e.end) + " overlap tensor '" +
                                 previous->name + "' bytes " + range(previous->begin, previous->end));
    if (e.begin > cursor)
      throw RuntimeError(op, "data bytes " + range(cursor, e.begin) + " before tensor '" + e.name + "' belong to no tensor");
    cursor = e.end;
    previous = &e;
  }
  if (cursor != dataSize)
    throw RuntimeError(op, "data bytes " + range(cursor, dataSize) + " at the end of the file belong to no tensor");

  for (const Entry &e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) {
      in.read(reinterpret_cast<char *>(t.rawData()), static_cast<std::streamsize>(e.end - e.begin));
      if (!in) throw RuntimeError(op, "could not read the data of tensor '" + e.name + "' (did the file change?)");
    }
    checkpoint.tensors[e.name] = t;
  }
  return checkpoint;
}

}  // namespace scanforge
