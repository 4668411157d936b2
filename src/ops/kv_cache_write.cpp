// Front end of kv_cache_write. The slots live in device memory: the kernels check them where that
// is cheap (the CPU backend checks every one), see docs/ops.md.
#include "ops/arg_checks.hpp"
#include "ops/attention_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void kv_cache_write(const TensorView& k, const TensorView& v, const TensorView& slot_mapping, const TensorView& k_cache,
                    const TensorView& v_cache, const KvCacheScales& scales, const Stream* stream) {
  const ArgChecks check(Op::kv_cache_write);
  check.tensor(XHAL_KV_CACHE_WRITE_K_CACHE, k_cache, 4);
  const bool fp8 = k_cache.dtype() == DType::f8_e4m3;
  check.dtype_in(XHAL_KV_CACHE_WRITE_K_CACHE, k_cache, {DType::f32, DType::f16, DType::bf16, DType::f8_e4m3});
  const int64_t num_blocks = k_cache.size(0), block_size = k_cache.size(1), Hkv = k_cache.size(2);
  check.tensor(XHAL_KV_CACHE_WRITE_V_CACHE, v_cache, 4);
  check.dtype(XHAL_KV_CACHE_WRITE_V_CACHE, v_cache, k_cache.dtype(), " (same as k_cache)");
  check.dim(XHAL_KV_CACHE_WRITE_V_CACHE, v_cache, 0, num_blocks, "blocks of k_cache");
  check.dim(XHAL_KV_CACHE_WRITE_V_CACHE, v_cache, 1, block_size, "block size of k_cache");
  check.dim(XHAL_KV_CACHE_WRITE_V_CACHE, v_cache, 2, Hkv, "kv heads of k_cache");
  check.tensor(XHAL_KV_CACHE_WRITE_K, k, 3);
  if (fp8) {
    check.float_dtype(XHAL_KV_CACHE_WRITE_K, k);
  } else {
    check.dtype(XHAL_KV_CACHE_WRITE_K, k, k_cache.dtype(), " (same as k_cache)");
  }
  const int64_t T = k.size(0);
  check.dim(XHAL_KV_CACHE_WRITE_K, k, 1, Hkv, "kv heads of k_cache");
  check.dim(XHAL_KV_CACHE_WRITE_K, k, 2, k_cache.size(3), "head dim of k_cache");
  check.tensor(XHAL_KV_CACHE_WRITE_V, v, 3);
  check.dtype(XHAL_KV_CACHE_WRITE_V, v, k.dtype(), " (same as k)");
  check.dim(XHAL_KV_CACHE_WRITE_V, v, 0, T, "tokens of k");
  check.dim(XHAL_KV_CACHE_WRITE_V, v, 1, Hkv, "kv heads of k_cache");
  check.dim(XHAL_KV_CACHE_WRITE_V, v, 2, v_cache.size(3), "head dim of v_cache");
  check.tensor(XHAL_KV_CACHE_WRITE_SLOT_MAPPING, slot_mapping, 1, false);
  check.dtype_in(XHAL_KV_CACHE_WRITE_SLOT_MAPPING, slot_mapping, {DType::i32, DType::i64});
  check.dim(XHAL_KV_CACHE_WRITE_SLOT_MAPPING, slot_mapping, 0, T, "tokens of k");
  if (T > 0 && block_size == 0) check.fail(XHAL_KV_CACHE_WRITE_K_CACHE, "block size >= 1", "0");
  const Device device = k_cache.device();
  for (auto [slot, t] : {std::pair{XHAL_KV_CACHE_WRITE_K, &k},
                         {XHAL_KV_CACHE_WRITE_V, &v},
                         {XHAL_KV_CACHE_WRITE_SLOT_MAPPING, &slot_mapping},
                         {XHAL_KV_CACHE_WRITE_V_CACHE, &v_cache}}) {
    check.same_device(slot, *t, device, XHAL_KV_CACHE_WRITE_K_CACHE);
  }
  check_cache_scales(check, k_cache, XHAL_KV_CACHE_WRITE_K_SCALE, XHAL_KV_CACHE_WRITE_V_SCALE, scales, device,
                     XHAL_KV_CACHE_WRITE_K_CACHE);
  for (auto [slot, cache] :
       {std::pair{XHAL_KV_CACHE_WRITE_K_CACHE, &k_cache}, {XHAL_KV_CACHE_WRITE_V_CACHE, &v_cache}}) {
    check.apart(
        slot, *cache,
        {{XHAL_KV_CACHE_WRITE_K, &k}, {XHAL_KV_CACHE_WRITE_V, &v}, {XHAL_KV_CACHE_WRITE_SLOT_MAPPING, &slot_mapping}});
    if (fp8)
      check.apart(slot, *cache, {{XHAL_KV_CACHE_WRITE_K_SCALE, scales.k}, {XHAL_KV_CACHE_WRITE_V_SCALE, scales.v}});
  }
  check.apart(XHAL_KV_CACHE_WRITE_V_CACHE, v_cache, {{XHAL_KV_CACHE_WRITE_K_CACHE, &k_cache}});
  // The cache's dtype keys the kernel: an fp8 cache reaches only kernels written for one.
  OpCall call(Op::kv_cache_write, k_cache.dtype(), device, stream);
  call.set(XHAL_KV_CACHE_WRITE_K, k);
  call.set(XHAL_KV_CACHE_WRITE_V, v);
  call.set(XHAL_KV_CACHE_WRITE_SLOT_MAPPING, slot_mapping);
  call.set(XHAL_KV_CACHE_WRITE_K_CACHE, k_cache);
  call.set(XHAL_KV_CACHE_WRITE_V_CACHE, v_cache);
  call.set(XHAL_KV_CACHE_WRITE_K_SCALE, scales.k);
  call.set(XHAL_KV_CACHE_WRITE_V_SCALE, scales.v);
  call.run();
}

void kv_cache_write(const TensorView& k, const TensorView& v, const TensorView& slot_mapping, const TensorView& k_cache,
                    const TensorView& v_cache, const Stream* stream) {
  kv_cache_write(k, v, slot_mapping, k_cache, v_cache, KvCacheScales{}, stream);
}

}  // namespace xhal::ops
