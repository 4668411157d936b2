#include "xhal/dtype.hpp"

#include <array>

#include "core/text_format.hpp"
#include "xhal/error.hpp"
#include "xhal/fp8.hpp"

namespace xhal {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
  DLDataType dlpack;
  bool floating;
};

constexpr std::array<DTypeInfo, 9> kDTypes{{
    {DType::f32, "f32", 4, {kDLFloat, 32, 1}, true},
    {DType::f16, "f16", 2, {kDLFloat, 16, 1}, true},
    {DType::bf16, "bf16", 2, {kDLBfloat, 16, 1}, true},
    {DType::f64, "f64", 8, {kDLFloat, 64, 1}, true},
    {DType::i32, "i32", 4, {kDLInt, 32, 1}, false},
    {DType::i64, "i64", 8, {kDLInt, 64, 1}, false},
    {DType::f8_e4m3, "f8_e4m3", 1, {kDLPackFloat8E4M3FN, 8, 1}, true},
    {DType::f8_e5m2, "f8_e5m2", 1, {kDLPackFloat8E5M2, 8, 1}, true},
    {DType::i8, "i8", 1, {kDLInt, 8, 1}, false},
}};

const DTypeInfo& info(DType d) {
  for (const DTypeInfo& i : kDTypes) {
    if (i.dtype == d) return i;
  }
  throw Error(Errc::invalid_argument, format_text("no dtype with code {}", int(d)));
}

}  // namespace

size_t dtype_size(DType d) { return info(d).size; }
std::string_view dtype_name(DType d) { return info(d).name; }
bool is_floating(DType d) { return info(d).floating; }
DLDataType to_dlpack(DType d) { return info(d).dlpack; }

DType dtype_from_dlpack(DLDataType type) {
  for (const DTypeInfo& i : kDTypes) {
    const DLDataType& t = i.dlpack;
    if (t.code == type.code && t.bits == type.bits && t.lanes == type.lanes) return i.dtype;
  }
  throw Error(Errc::invalid_argument,
              format_text("DLPack dtype (code {}, bits {}, lanes {}) is not supported; xhal handles "
                          "f32, f16, bf16, f64, i32, i64, i8, float8_e4m3fn and float8_e5m2 with lanes 1",
                          type.code, type.bits, type.lanes));
}

}  // namespace xhal
