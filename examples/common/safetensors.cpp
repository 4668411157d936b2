#include "common/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace examples {
namespace {

// The format's own bound on the header (100 MB), which keeps a corrupt length from being trusted.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

constexpr std::pair<std::string_view, xhal::DType> kDTypeNames[] = {
    {"F32", xhal::DType::f32}, {"F16", xhal::DType::f16}, {"BF16", xhal::DType::bf16},
    {"F64", xhal::DType::f64}, {"I32", xhal::DType::i32}, {"I64", xhal::DType::i64},
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(fmt::format("safetensors file '{}': {}", path, what));
}

// The product of `shape` times `element` bytes, or fail on a negative dim or an overflow.
size_t checked_bytes(const std::string& path, const std::string& name, const std::vector<int64_t>& shape,
                     size_t element) {
  size_t bytes = element;
  for (int64_t d : shape) {
    if (d < 0) fail(path, fmt::format("tensor '{}' has a negative dim in its shape", name));
    if (__builtin_mul_overflow(bytes, size_t(d), &bytes)) {
      fail(path, fmt::format("tensor '{}': the size of its shape overflows", name));
    }
  }
  return bytes;
}

}  // namespace

std::string_view safetensors_dtype_name(xhal::DType dtype) {
  for (const auto& [name, d] : kDTypeNames) {
    if (d == dtype) return name;
  }
  throw std::invalid_argument(fmt::format("safetensors: no name for dtype {}", xhal::dtype_name(dtype)));
}

xhal::DType dtype_from_safetensors(std::string_view name) {
  for (const auto& [n, d] : kDTypeNames) {
    if (n == name) return d;
  }
  throw std::invalid_argument(
      fmt::format("safetensors: dtype '{}' has no xhal dtype (F32, F16, BF16, F64, I32, I64)", name));
}

SafeTensorsFile::SafeTensorsFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, std::strerror(err));
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      const int err = errno;
      ::close(fd);
      fail(path, fmt::format("cannot map it: {}", std::strerror(err)));
    }
  }
  ::close(fd);
  try {
    const auto* bytes = static_cast<const std::byte*>(map_);
    if (size_ < 8) fail(path, fmt::format("{} bytes, shorter than the 8-byte header length", size_));
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | uint64_t(bytes[i]);
    if (header_bytes > kMaxHeaderBytes || header_bytes > size_ - 8) {
      fail(path, fmt::format("a header of {} bytes in a file of {} bytes", header_bytes, size_));
    }
    const std::string_view text(reinterpret_cast<const char*>(bytes + 8), size_t(header_bytes));
    nlohmann::json header;
    try {
      header = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      fail(path, fmt::format("its header is not JSON: {}", e.what()));
    }
    if (!header.is_object()) fail(path, "its header is not a JSON object");
    const std::byte* data = bytes + 8 + header_bytes;
    const size_t data_bytes = size_ - 8 - size_t(header_bytes);
    std::vector<std::pair<size_t, size_t>> ranges;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object()) fail(path, "__metadata__ is not an object");
        for (const auto& [key, value] : entry.items()) {
          if (!value.is_string()) fail(path, fmt::format("__metadata__ '{}' is not a string", key));
          metadata_[key] = value.get<std::string>();
        }
        continue;
      }
      try {
        const xhal::DType dtype = dtype_from_safetensors(entry.at("dtype").get<std::string>());
        const auto shape = entry.at("shape").get<std::vector<int64_t>>();
        const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
        if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_bytes) {
          fail(path, fmt::format("tensor '{}': data_offsets must be [begin, end] within the {} data bytes", name,
                                 data_bytes));
        }
        const size_t expected = checked_bytes(path, name, shape, xhal::dtype_size(dtype));
        if (offsets[1] - offsets[0] != expected) {
          fail(path,
               fmt::format("tensor '{}': {} bytes for a shape of {} bytes", name, offsets[1] - offsets[0], expected));
        }
        ranges.emplace_back(size_t(offsets[0]), size_t(offsets[1]));
        tensors_.emplace(name, SafeTensor{dtype, shape, data + offsets[0], size_t(expected)});
      } catch (const nlohmann::json::exception& e) {
        fail(path, fmt::format("tensor '{}': {}", name, e.what()));
      } catch (const std::invalid_argument& e) {
        fail(path, fmt::format("tensor '{}': {}", name, e.what()));
      }
    }
    // The tensors tile the data section: sorted, each begins where the previous ended.
    std::sort(ranges.begin(), ranges.end());
    size_t end = 0;
    for (const auto& [begin, stop] : ranges) {
      if (begin != end)
        fail(path, fmt::format("tensors overlap or leave a hole at data byte {}", std::min(begin, end)));
      end = stop;
    }
    if (end != data_bytes) fail(path, fmt::format("{} data bytes after the last tensor", data_bytes - end));
  } catch (...) {
    if (map_ != nullptr) ::munmap(map_, size_);
    throw;
  }
}

SafeTensorsFile::~SafeTensorsFile() {
  if (map_ != nullptr) ::munmap(map_, size_);
}

const SafeTensor& SafeTensorsFile::at(std::string_view name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(path_, fmt::format("no tensor '{}'", name));
  return it->second;
}

void write_safetensors(const std::string& path, const std::vector<SafeTensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const SafeTensorToWrite& t : tensors) {
    const size_t expected = checked_bytes(path, t.name, t.shape, xhal::dtype_size(t.dtype));
    if (t.bytes.size() != expected) {
      fail(path, fmt::format("tensor '{}': {} bytes for a shape of {} bytes", t.name, t.bytes.size(), expected));
    }
    header[t.name] = {
        {"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section 8-byte aligned, as writers pad it
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, "cannot open it for writing");
  char length[8];
  for (int i = 0; i < 8; ++i) length[i] = char(uint64_t(text.size()) >> (8 * i) & 0xFF);
  out.write(length, 8);
  out.write(text.data(), std::streamsize(text.size()));
  for (const SafeTensorToWrite& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
  }
  if (!out.flush()) fail(path, "writing failed");
}

}  // namespace examples
