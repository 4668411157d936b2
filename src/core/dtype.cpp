#include "xhal/dtype.hpp"

#include <array>

#include <fmt/format.h>

#include "xhal/error.hpp"

namespace xhal {
namespace {

struct DTypeInfo {
  std::string_view name;
  size_t size;
  DLDataType dlpack;
  bool floating;
};

// Indexed by DType.
constexpr std::array<DTypeInfo, kNumDTypes> kDTypes{{
    {"f32", 4, {kDLFloat, 32, 1}, true},
    {"f16", 2, {kDLFloat, 16, 1}, true},
    {"bf16", 2, {kDLBfloat, 16, 1}, true},
    {"f64", 8, {kDLFloat, 64, 1}, true},
    {"i32", 4, {kDLInt, 32, 1}, false},
    {"i64", 8, {kDLInt, 64, 1}, false},
}};

const DTypeInfo& info(DType d) { return kDTypes[static_cast<size_t>(d)]; }

}  // namespace

size_t dtype_size(DType d) { return info(d).size; }
std::string_view dtype_name(DType d) { return info(d).name; }
bool is_floating(DType d) { return info(d).floating; }
DLDataType to_dlpack(DType d) { return info(d).dlpack; }

DType dtype_from_dlpack(DLDataType type) {
  for (size_t i = 0; i < kDTypes.size(); ++i) {
    const DLDataType& t = kDTypes[i].dlpack;
    if (t.code == type.code && t.bits == type.bits && t.lanes == type.lanes) return DType(i);
  }
  throw Error(Errc::invalid_argument,
              fmt::format("DLPack dtype (code {}, bits {}, lanes {}) is not supported; xhal handles "
                          "f32, f16, bf16, f64, i32, i64 with lanes 1",
                          type.code, type.bits, type.lanes));
}

}  // namespace xhal
