// Reading and writing safetensors files (Hugging Face's weight format): an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte range, then the bytes.
// The reader maps the file and checks everything the header claims (sizes against shapes, ranges
// within the file, no overlaps, no holes) before handing out a tensor; a bad file is an error
// naming the file and what is wrong with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "xhal/dtype.hpp"

namespace examples {

struct SafeTensor {
  xhal::DType dtype;
  std::vector<int64_t> shape;
  const std::byte* data;  // within the mapped file, valid while the SafeTensorsFile lives
  size_t bytes;
};

class SafeTensorsFile {
 public:
  // Maps `path` and checks its header; throws std::runtime_error naming the file and the problem.
  explicit SafeTensorsFile(const std::string& path);
  ~SafeTensorsFile();
  SafeTensorsFile(const SafeTensorsFile&) = delete;
  SafeTensorsFile& operator=(const SafeTensorsFile&) = delete;

  bool contains(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }
  // The tensor `name`; throws naming the file and the tensor when it has none.
  const SafeTensor& at(std::string_view name) const;
  const std::map<std::string, SafeTensor, std::less<>>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, SafeTensor, std::less<>> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: its bytes as they lie in memory (little-endian, row-major).
struct SafeTensorToWrite {
  std::string name;
  xhal::DType dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

// Writes `tensors` (in the given order) and `metadata` to `path`; throws on a size that does not
// match a shape or on an I/O error.
void write_safetensors(const std::string& path, const std::vector<SafeTensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The safetensors name of a dtype ("BF16", ...) and back; the latter throws for names xhal has
// no dtype for (F8_E4M3, U8, BOOL, ...), naming them.
std::string_view safetensors_dtype_name(xhal::DType dtype);
xhal::DType dtype_from_safetensors(std::string_view name);

}  // namespace examples
