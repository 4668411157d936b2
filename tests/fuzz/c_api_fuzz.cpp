// libFuzzer target: random shapes, strides, dtypes, devices, contents and parameters for every op
// of the C API (include/xhal/xhal.h), and random names for its device functions. A call may fail
// (that is the point) but must return a status with a message: never crash, abort, leak, read or
// write outside the memory a tensor describes (ASan checks that; each tensor gets exactly the bytes
// its shape and strides span). Tensors of more than kMaxBytes get no memory (data NULL). After the
// call's own choices comes a fault to plant in its arguments: NULL out-parameters, a tensor with
// NULL data and any byte_offset, or a byte_offset its data pointer makes up for. (Made last, so
// that the inputs kept in seeds/ from before decode to the same calls.)
// Built with -DXHAL_FUZZ=ON (clang); .ci/run runs it for a bounded time; see docs/debugging.md.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "xhal/xhal.h"

namespace {

constexpr size_t kMaxBytes = size_t(1) << 20;
constexpr int kTensors = 8;

// One fuzzed DLTensor and the memory behind it.
struct FuzzTensor {
  DLTensor t{};
  std::array<int64_t, 10> shape{}, strides{};
  std::vector<unsigned char> memory;
};

// Choices shared by the tensors of one call, so that shapes and dtypes agree often enough for a
// call to pass validation and reach the kernels.
struct Palette {
  std::array<int64_t, 4> extents{};
  DLDataType float_type{kDLFloat, 32, 1};
};

int64_t fuzz_extent(FuzzedDataProvider& in, const Palette* palette = nullptr) {
  // Mostly small sizes (often the call's shared ones); sometimes the values that break arithmetic.
  static constexpr int64_t kSpecial[] = {
      0, 1, -1, INT64_MAX, INT64_MIN, int64_t(1) << 31, (int64_t(1) << 32) + 1, int64_t(1) << 62};
  const int pick = in.ConsumeIntegralInRange<int>(0, 15);
  if (pick == 0) return in.PickValueInArray(kSpecial);
  if (palette != nullptr && pick >= 5) return palette->extents[size_t(pick) % 4];
  return in.ConsumeIntegralInRange<int64_t>(0, 9);
}

// Element offsets (min, max) the tensor spans, or false when they overflow or exceed kMaxBytes.
bool span_bytes(const DLTensor& t, size_t element, int64_t* lo, int64_t* hi) {
  *lo = *hi = 0;
  int64_t contiguous = 1;  // NULL strides: row-major
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] <= 0) {  // no elements: nothing may be read (one element's bytes are given)
      *lo = *hi = 0;
      return t.shape[i] == 0;
    }
    const int64_t stride = t.strides ? t.strides[i] : contiguous;
    if (__builtin_mul_overflow(contiguous, t.shape[i], &contiguous)) return false;
    int64_t reach = 0;
    if (__builtin_mul_overflow(t.shape[i] - 1, stride, &reach)) return false;
    if (__builtin_add_overflow(reach < 0 ? *lo : *hi, reach, reach < 0 ? lo : hi)) return false;
  }
  const __int128 bytes = (__int128(*hi) - *lo + 1) * __int128(element);
  return bytes <= __int128(kMaxBytes);
}

// `index_like`: the slot usually holds indices or lengths (i32), not values.
void fuzz_tensor(FuzzedDataProvider& in, const Palette& palette, bool index_like, FuzzTensor& f) {
  static constexpr uint8_t kCodes[] = {kDLFloat, kDLInt, kDLBfloat, kDLUInt, 7};
  static constexpr uint8_t kBits[] = {32, 16, 64, 8, 0, 33};
  DLTensor& t = f.t;
  t.ndim = in.ConsumeIntegralInRange<int32_t>(0, 15) == 0 ? in.ConsumeIntegral<int32_t>()
                                                          : in.ConsumeIntegralInRange<int32_t>(0, 4);
  const int dims = std::clamp(t.ndim, 0, int(f.shape.size()));
  for (int i = 0; i < dims; ++i) f.shape[size_t(i)] = fuzz_extent(in, &palette);
  t.shape = f.shape.data();
  const bool strided = in.ConsumeIntegralInRange<int>(0, 3) == 0;
  if (strided) {
    for (int i = 0; i < dims; ++i) f.strides[size_t(i)] = in.ConsumeIntegralInRange<int64_t>(-3, 40);
  }
  t.strides = strided ? f.strides.data() : nullptr;
  const int dtype_pick = in.ConsumeIntegralInRange<int>(0, 7);
  if (dtype_pick < 6) {
    t.dtype = index_like ? DLDataType{kDLInt, 32, 1} : palette.float_type;
  } else {
    t.dtype.code = in.PickValueInArray(kCodes);
    t.dtype.bits = in.PickValueInArray(kBits);
    t.dtype.lanes = dtype_pick == 7 ? 2 : 1;
  }
  static constexpr int32_t kDevices[] = {kDLCPU, kDLCUDA, kDLROCM, kDLCUDAHost, 14, 99};
  const int32_t device_type = in.ConsumeIntegralInRange<int>(0, 7)
                                  ? int32_t(kDLCPU)
                                  : in.PickValueInArray(kDevices);  // may lie outside the enum, as C allows
  std::memcpy(&t.device.device_type, &device_type, sizeof device_type);
  t.device.device_id = in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.ConsumeIntegral<int32_t>() : 0;
  t.byte_offset = 0;
  if (t.ndim < 0 || t.ndim > int(f.shape.size())) {
    t.data = nullptr;  // a rank beyond what the shape array holds: only the rank check may look
    t.shape = t.ndim > 0 ? nullptr : t.shape;
    return;
  }
  const size_t element = std::max<size_t>(1, (size_t(t.dtype.bits) * t.dtype.lanes + 7) / 8);
  int64_t lo = 0, hi = 0;
  if (!span_bytes(t, element, &lo, &hi)) {
    t.data = nullptr;
    return;
  }
  // Exactly the bytes spanned, filled from the input (indices, lengths and values included).
  f.memory.resize(size_t(hi - lo + 1) * element);
  for (auto& byte : f.memory) byte = in.ConsumeIntegral<unsigned char>();
  t.data = f.memory.data() - lo * int64_t(element);
}

// XHAL_FUZZ_VERBOSE=1 prints each decoded call (for reading a crash-* input back).
void describe(int op, const std::array<FuzzTensor, kTensors>& f, const std::array<const DLTensor*, kTensors>& t) {
  static const bool verbose = std::getenv("XHAL_FUZZ_VERBOSE") != nullptr;
  if (!verbose) return;
  std::fprintf(stderr, "op %d\n", op);
  for (int i = 0; i < kTensors; ++i) {
    const DLTensor& d = f[size_t(i)].t;
    int32_t device_type = 0;  // as an integer: the fuzzer stores values outside the enum
    std::memcpy(&device_type, &d.device.device_type, sizeof device_type);
    std::fprintf(stderr, "  t%d%s: device %d:%d dtype %u/%u/%u ndim %d data %s byte_offset %llu bytes %zu shape", i,
                 t[size_t(i)] ? "" : " (passed as NULL)", device_type, d.device.device_id, d.dtype.code, d.dtype.bits,
                 d.dtype.lanes, d.ndim, d.data ? "set" : "NULL", (unsigned long long)d.byte_offset,
                 f[size_t(i)].memory.size());
    for (int k = 0; d.shape && k < std::min(d.ndim, 10); ++k) std::fprintf(stderr, " %lld", (long long)d.shape[k]);
    if (d.strides) {
      std::fprintf(stderr, " strides");
      for (int k = 0; k < std::min(d.ndim, 10); ++k) std::fprintf(stderr, " %lld", (long long)d.strides[k]);
    }
    std::fprintf(stderr, "\n");
  }
}

xhal_attention_params fuzz_attention_params(FuzzedDataProvider& in) {
  xhal_attention_params p = xhal_attention_params_default();
  p.scale = in.ConsumeBool() ? in.ConsumeFloatingPoint<float>() : 0.0f;
  p.causal = in.ConsumeIntegral<int32_t>() & 3;
  p.window_left = in.ConsumeIntegralInRange<int64_t>(-3, 8);
  p.window_right = in.ConsumeIntegralInRange<int64_t>(-3, 8);
  p.softcap = in.ConsumeBool() ? in.ConsumeFloatingPoint<float>() : 0.0f;
  return p;
}

void expect_message(xhal_status status) {
  if (status != XHAL_OK && xhal_last_error()[0] == '\0') {
    std::fprintf(stderr, "a failed call (status %d) left no message\n", int(status));
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int op = in.ConsumeIntegralInRange<int>(0, 31);
  Palette palette;
  for (auto& extent : palette.extents) extent = in.ConsumeIntegralInRange<int64_t>(1, 9);
  static constexpr DLDataType kFloatTypes[] = {{kDLFloat, 32, 1}, {kDLFloat, 16, 1}, {kDLBfloat, 16, 1}};
  palette.float_type = in.PickValueInArray(kFloatTypes);
  std::array<FuzzTensor, kTensors> f;
  std::array<const DLTensor*, kTensors> t{};
  const uint32_t absent = in.ConsumeIntegral<uint8_t>();  // bit i: pass NULL for tensor i
  for (int i = 0; i < kTensors; ++i) {
    fuzz_tensor(in, palette, i >= 5, f[size_t(i)]);
    t[size_t(i)] = (absent >> i) & 1 && (absent & 0xF0) == 0xF0 ? nullptr : &f[size_t(i)].t;
  }
  const xhal_attention_params params = fuzz_attention_params(in);
  const xhal_attention_params* maybe_params = in.ConsumeBool() ? &params : nullptr;
  const float eps = in.ConsumeFloatingPoint<float>();
  // The call, its choices consumed now (left to right, as they once were inside the call) and made
  // after the fault below is planted.
  std::function<xhal_status()> call;
  std::string name;
  xhal_memory_status memory{};
  int32_t count = 0;
  char buffer[16];
  bool null_out = false;
  switch (op) {
    case 0: {
      const DLTensor* lse = in.ConsumeBool() ? t[4] : nullptr;
      call = [&, lse] { return xhal_attention(t[0], t[1], t[2], t[3], maybe_params, lse, nullptr); };
      break;
    }
    case 1: {
      const int64_t max_q = in.ConsumeIntegralInRange<int64_t>(-2, 12),
                    max_k = in.ConsumeIntegralInRange<int64_t>(-2, 12);
      const DLTensor* lse = in.ConsumeBool() ? t[4] : nullptr;
      call = [&, max_q, max_k, lse] {
        return xhal_attention_varlen(t[0], t[1], t[2], t[5], t[6], max_q, max_k, t[3], maybe_params, lse, nullptr);
      };
      break;
    }
    case 2:
      call = [&] { return xhal_paged_attention(t[0], t[1], t[2], t[5], t[6], t[3], maybe_params, nullptr); };
      break;
    case 3: call = [&] { return xhal_rms_norm(t[0], t[1], eps, t[2], nullptr); }; break;
    case 4: call = [&] { return xhal_fused_add_rms_norm(t[0], t[3], t[1], eps, t[2], nullptr); }; break;
    case 5: call = [&] { return xhal_swiglu(t[0], t[1], t[2], nullptr); }; break;
    case 6: call = [&] { return xhal_swiglu_packed(t[0], t[2], nullptr); }; break;
    case 7: {
      const int32_t neox = in.ConsumeIntegral<int32_t>();
      call = [&, neox] { return xhal_rope(t[0], t[1], t[5], t[3], neox, nullptr); };
      break;
    }
    case 8: {
      const int64_t max_pos = fuzz_extent(in), rotary_dim = fuzz_extent(in);
      const double theta = in.ConsumeFloatingPoint<double>();
      call = [&, max_pos, rotary_dim, theta] { return xhal_rope_cache(max_pos, rotary_dim, theta, t[3]); };
      break;
    }
    case 9: {
      const DLTensor* bias = in.ConsumeBool() ? t[2] : nullptr;
      call = [&, bias] { return xhal_linear(t[0], t[1], bias, t[3], nullptr); };
      break;
    }
    case 13: {
      const DLTensor* lse = in.ConsumeBool() ? t[4] : nullptr;
      call = [&, lse] { return xhal_merge_attention_states(t[0], t[1], t[2], t[4], t[3], lse, nullptr); };
      break;
    }
    case 14: call = [&] { return xhal_kv_cache_write(t[0], t[1], t[5], t[2], t[3], nullptr); }; break;
    case 15:
    case 16: {
      const int32_t approximation = in.ConsumeIntegralInRange<int32_t>(-1, 2);
      call = [&, approximation, op] {
        return op == 15 ? xhal_gelu_and_mul(t[0], t[1], t[2], approximation, nullptr)
                        : xhal_gelu_and_mul_packed(t[0], t[2], approximation, nullptr);
      };
      break;
    }
    case 18: {
      const DLTensor* bias = in.ConsumeBool() ? t[4] : nullptr;
      call = [&, bias] { return xhal_layer_norm(t[0], t[1], bias, eps, t[2], nullptr); };
      break;
    }
    case 19: {
      const DLTensor* out = in.ConsumeBool() ? t[0] : t[2];  // in place or not
      call = [&, out] { return xhal_softmax(t[0], out, nullptr); };
      break;
    }
    case 20:
    case 21: {
      const DLTensor* y = in.ConsumeBool() ? t[1] : t[4];  // full or a row, as the palette makes them
      call = [&, y, op] { return op == 20 ? xhal_add(t[0], y, t[2], nullptr) : xhal_mul(t[0], y, t[2], nullptr); };
      break;
    }
    case 22: {  // per-row settings: whatever values the fuzzed buffers hold have a meaning
      const xhal_sample_params sp{in.ConsumeFloatingPoint<float>(), in.ConsumeIntegralInRange<int64_t>(-2, 12),
                                  in.ConsumeFloatingPoint<float>(), in.ConsumeFloatingPoint<float>(),
                                  in.ConsumeIntegral<uint64_t>(),   in.ConsumeIntegral<uint64_t>()};
      const bool with_params = in.ConsumeBool(), with_rows = in.ConsumeBool();
      call = [&, sp, with_params, with_rows] {
        const xhal_sample_rows rows{t[1], t[6], t[2], nullptr, t[7], t[5]};
        return xhal_sample(t[0], t[5], with_params ? &sp : nullptr, with_rows ? &rows : nullptr, nullptr);
      };
      break;
    }
    case 23: call = [&] { return xhal_top_k(t[0], t[2], t[5], nullptr); }; break;
    case 25:
    case 26: {
      const int32_t granularity = in.ConsumeIntegralInRange<int32_t>(-1, 3), dynamic = in.ConsumeIntegral<int32_t>();
      const int64_t block = in.ConsumeIntegralInRange<int64_t>(-1, 300);
      // Mostly an fp8 code tensor (in the bytes its fuzzed dtype was given, at least one a element).
      DLTensor& codes = f[3].t;
      if (in.ConsumeBool() && codes.dtype.bits >= 8 && codes.dtype.lanes == 1) {
        codes.dtype = DLDataType{uint8_t(in.ConsumeBool() ? 12 : 10), 8, 1};
      }
      call = [&, granularity, dynamic, block, op] {
        return op == 25 ? xhal_quantize(t[0], t[3], t[1], granularity, block, dynamic, nullptr)
                        : xhal_dequantize(t[3], t[1], t[2], granularity, block, nullptr);
      };
      break;
    }
    case 27:
    case 28: {  // x and w mostly codes (fp8, or int8), scales and out as the palette makes them
      for (int i : {0, 3}) {
        DLTensor& codes = f[size_t(i)].t;
        if (in.ConsumeBool() && codes.dtype.bits >= 8 && codes.dtype.lanes == 1) {
          codes.dtype = op == 28 ? DLDataType{kDLInt, 8, 1} : DLDataType{uint8_t(in.ConsumeBool() ? 12 : 10), 8, 1};
        }
      }
      const DLTensor* bias = in.ConsumeBool() ? t[4] : nullptr;
      call = [&, bias, op] {
        return op == 27 ? xhal_linear_fp8(t[0], t[1], t[3], t[6], bias, t[2], nullptr)
                        : xhal_linear_int8(t[0], t[1], t[3], t[6], bias, t[2], nullptr);
      };
      break;
    }
    case 29:
    case 30:
    case 31: {  // the fp8 KV cache: caches mostly e4m3 codes, scales as the palette makes them
      for (const size_t i : {size_t(op == 29 ? 2 : 1), size_t(op == 29 ? 3 : 2)}) {
        DLTensor& cache = f[i].t;
        if (in.ConsumeBool() && cache.dtype.bits >= 8 && cache.dtype.lanes == 1) cache.dtype = DLDataType{10, 8, 1};
      }
      const DLTensor* k_scale = in.ConsumeBool() ? t[4] : nullptr;
      const DLTensor* v_scale = in.ConsumeBool() ? t[op == 30 ? 7 : 4] : nullptr;
      const int64_t max_q = in.ConsumeIntegralInRange<int64_t>(-1, 64);
      const DLTensor* lse = in.ConsumeBool() ? t[4] : nullptr;
      call = [&, k_scale, v_scale, max_q, lse, op] {
        if (op == 29) return xhal_kv_cache_write_scaled(t[0], t[1], t[5], t[2], t[3], k_scale, v_scale, nullptr);
        if (op == 30) {
          return xhal_paged_attention_scaled(t[0], t[1], t[2], t[5], t[6], t[3], maybe_params, k_scale, v_scale,
                                             nullptr);
        }
        return xhal_paged_prefill_scaled(t[0], t[1], t[2], t[5], t[6], t[7], max_q, t[3], maybe_params, lse, k_scale,
                                         v_scale, nullptr);
      };
      break;
    }
    case 24: {
      const int64_t max_q = in.ConsumeIntegralInRange<int64_t>(-1, 64);
      const DLTensor* lse = in.ConsumeBool() ? t[4] : nullptr;
      call = [&, max_q, lse] {
        return xhal_paged_prefill(t[0], t[1], t[2], t[5], t[6], t[7], max_q, t[3], maybe_params, lse, nullptr);
      };
      break;
    }
    case 17: {
      const DLTensor* values = in.ConsumeBool() ? t[2] : nullptr;
      call = [&, values] { return xhal_argmax(t[0], t[5], values, nullptr); };
      break;
    }
    default: {  // the device functions, with random names and buffer sizes
      name = in.ConsumeRandomLengthString(24);
      const size_t len = in.ConsumeIntegralInRange<size_t>(0, sizeof buffer);
      switch (op) {
        case 10: {
          const char* device = in.ConsumeBool() ? name.c_str() : nullptr;
          call = [&, device] { return xhal_memory_status_get(device, null_out ? nullptr : &memory); };
          break;
        }
        case 11: {
          const int32_t index = in.ConsumeIntegral<int32_t>();
          const bool with_buffer = in.ConsumeBool();
          call = [&, index, with_buffer, len] {
            return xhal_device_name(index, with_buffer && !null_out ? buffer : nullptr, len);
          };
          break;
        }
        default: {
          const bool synchronize = in.ConsumeBool();
          call = [&, synchronize] {
            return synchronize ? xhal_synchronize(name.c_str()) : xhal_empty_cache(name.c_str());
          };
        }
      }
    }
  }
  // The fault: 0 none; 1 NULL out-parameters; 2 xhal_device_count instead of a device function
  // (with fault 1's NULL when the next choice says so); 3 tensor k's data NULL with any byte_offset
  // (a NULL output, too); 4 tensor k's byte_offset made up for by its data pointer (the same view).
  switch (in.ConsumeIntegralInRange<int>(0, 4)) {
    case 1: null_out = true; break;
    case 2:
      null_out = in.ConsumeBool();
      if (op >= 10) call = [&] { return xhal_device_count(null_out ? nullptr : &count); };
      break;
    case 3: {
      DLTensor& d = f[size_t(in.ConsumeIntegralInRange<int>(0, kTensors - 1))].t;
      d.data = nullptr;
      d.byte_offset = in.ConsumeIntegral<uint64_t>();
      break;
    }
    case 4: {
      DLTensor& d = f[size_t(in.ConsumeIntegralInRange<int>(0, kTensors - 1))].t;
      const uint64_t offset = in.ConsumeIntegralInRange<uint64_t>(1, 256);
      if (d.data != nullptr) {
        d.data = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(d.data) - uintptr_t(offset));
        d.byte_offset = offset;
      }
      break;
    }
    default: break;
  }
  describe(op, f, t);
  const xhal_status status = call();
  expect_message(status);
  if (std::getenv("XHAL_FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "op %d -> status %d: %s\n", op, int(status), xhal_last_error());
  }
  return 0;
}
