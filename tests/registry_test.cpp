// The op registry (include/xhal/registry.hpp): every CPU kernel is listed, dispatch takes the
// highest-priority kernel that supports a call, explain() says why, XHAL_STRICT turns a fallback
// into an error, XHAL_FORCE_REFERENCE picks the reference kernel and XHAL_DISABLE_KERNELS passes
// named kernels over.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

std::atomic<int> g_fast_runs{0};

// The CPU plugin's own f32 rms_norm kernels (the SIMD one when built with Highway, then the
// reference), highest priority first: what a refused test kernel falls back to.
std::vector<std::string> cpu_rms_norm_kernels() {
  std::vector<registry::KernelInfo> found;
  for (const auto& k : registry::list_kernels()) {
    if (k.op == Op::rms_norm && k.backend == DeviceType::cpu && k.dtype == DType::f32 &&
        k.name.rfind("test.", 0) != 0) {
      found.push_back(k);
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.priority > b.priority; });
  std::vector<std::string> names;
  for (const auto& k : found) names.push_back(k.name);
  return names;
}

// Refuses rows longer than 8 elements, so calls with N > 8 fall back to the CPU's own kernels.
const char* fast_supports(void*, const xhal_op_call* call) {
  return call->tensors[XHAL_RMS_NORM_X]->shape[call->tensors[XHAL_RMS_NORM_X]->ndim - 1] > 8 ? "rows longer than 8"
                                                                                             : nullptr;
}

xhal_status fast_run(void*, const xhal_op_call* call, char*, size_t) {
  ++g_fast_runs;
  const DLTensor* out = call->tensors[XHAL_RMS_NORM_OUT];
  int64_t n = 1;
  for (int d = 0; d < out->ndim; ++d) n *= out->shape[d];
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(out->data)[i] = 42.0f;
  return XHAL_OK;
}

// Registers a priority-100 f32 rms_norm kernel for the CPU backend (as a plugin would).
int64_t register_test_rms_norm(const char* name, xhal_kernel_supports_fn supports) {
  xhal_kernel_desc desc{};
  desc.struct_size = sizeof desc;
  desc.name = name;
  desc.op = XHAL_OP_RMS_NORM;
  desc.dtype = XHAL_DTYPE_F32;
  desc.priority = 100;
  desc.supports = supports;
  desc.run = fast_run;
  return registry::register_kernel(DeviceType::cpu, desc);
}

class Registry : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = register_test_rms_norm("test.fast_rms_norm", fast_supports);
    g_fast_runs = 0;
  }
  void TearDown() override {
    registry::unregister_kernel(handle_);
    registry::set_strict(false);
    registry::set_force_reference({});
    registry::set_disabled_kernels({});
  }
  void run_rms_norm(int64_t n) {
    x_.assign(size_t(n), 1.0f);
    w_.assign(size_t(n), 1.0f);
    out_.assign(size_t(n), 0.0f);
    ops::rms_norm(TensorView(x_.data(), DType::f32, {1, n}), TensorView(w_.data(), DType::f32, {n}), 0.0f,
                  TensorView(out_.data(), DType::f32, {1, n}));
  }
  std::vector<float> x_, w_, out_;
  int64_t handle_ = 0;
};

TEST_F(Registry, ListsEveryOpAndDtypeOfTheCpuBackend) {
  std::set<std::pair<Op, DType>> seen;
  for (const auto& k : registry::list_kernels()) {
    if (k.backend == DeviceType::cpu && k.is_reference) seen.insert({k.op, k.dtype});
  }
  for (int op = 0; op < kNumOps; ++op) {
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
      EXPECT_TRUE(seen.count({Op(op), d})) << op_name(Op(op)) << " " << dtype_name(d);
    }
  }
}

TEST_F(Registry, HighestPrioritySupportedKernelRuns) {
  run_rms_norm(4);
  EXPECT_EQ(g_fast_runs, 1);
  EXPECT_EQ(out_[0], 42.0f);
  run_rms_norm(16);  // refused by the fast kernel: the reference runs
  EXPECT_EQ(g_fast_runs, 1);
  EXPECT_FLOAT_EQ(out_[0], 1.0f);
}

TEST_F(Registry, ExplainSaysWhichKernelAndWhy) {
  auto ex = registry::explain([&] { run_rms_norm(16); });
  const std::vector<std::string> cpu = cpu_rms_norm_kernels();
  ASSERT_EQ(ex.candidates.size(), 1 + cpu.size()) << ex.str();
  EXPECT_EQ(ex.candidates[0].kernel, "test.fast_rms_norm");
  EXPECT_FALSE(ex.candidates[0].taken);
  EXPECT_EQ(ex.candidates[0].reason, "rows longer than 8");
  EXPECT_EQ(ex.candidates[1].kernel, cpu.front());
  EXPECT_TRUE(ex.candidates[1].taken);
  for (size_t i = 2; i < ex.candidates.size(); ++i) EXPECT_FALSE(ex.candidates[i].taken) << ex.str();
  EXPECT_EQ(g_fast_runs, 0);
  EXPECT_FLOAT_EQ(out_[0], 0.0f) << "explain must not run the kernel";
  EXPECT_NE(ex.str().find("[taken]"), std::string::npos);
}

TEST_F(Registry, ExplainReportsValidationErrors) {
  auto ex = registry::explain([&] {
    std::vector<float> x(8);
    ops::rms_norm(TensorView(x.data(), DType::f32, {2, 4}), TensorView(x.data(), DType::f32, {3}), 0.0f,
                  TensorView(x.data(), DType::f32, {2, 4}));
  });
  EXPECT_NE(ex.error.find("argument 'weight'"), std::string::npos) << ex.error;
}

TEST_F(Registry, StrictTurnsFallbackIntoError) {
  registry::set_strict(true);
  try {
    run_rms_norm(16);
    ADD_FAILURE() << "a fallback under XHAL_STRICT must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::unsupported);
    EXPECT_NE(std::string(e.what()).find("XHAL_STRICT"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rows longer than 8"), std::string::npos) << e.what();
  }
  run_rms_norm(4);  // the top kernel itself is fine under strict
  EXPECT_EQ(g_fast_runs, 1);
}

TEST_F(Registry, ForceReferenceSkipsOtherKernels) {
  registry::set_force_reference({Op::rms_norm});
  run_rms_norm(4);
  EXPECT_EQ(g_fast_runs, 0);
  EXPECT_FLOAT_EQ(out_[0], 1.0f);
}

TEST_F(Registry, DisabledKernelIsPassedOverWithoutCountingAsFallback) {
  registry::set_disabled_kernels({"test.fast_rms_norm"});
  registry::set_strict(true);  // a disabled kernel is the user's choice, not a refusal
  run_rms_norm(4);
  EXPECT_EQ(g_fast_runs, 0);
  EXPECT_FLOAT_EQ(out_[0], 1.0f);
  auto ex = registry::explain([&] { run_rms_norm(4); });
  ASSERT_EQ(ex.candidates.size(), 1 + cpu_rms_norm_kernels().size()) << ex.str();
  EXPECT_EQ(ex.candidates[0].reason, "disabled by XHAL_DISABLE_KERNELS");
  EXPECT_TRUE(ex.candidates[1].taken);

  // The names also apply to kernels registered afterwards.
  const int64_t later = register_test_rms_norm("test.later_rms_norm", nullptr);
  registry::set_disabled_kernels({"test.fast_rms_norm", "test.later_rms_norm"});
  run_rms_norm(4);
  EXPECT_EQ(g_fast_runs, 0);
  registry::unregister_kernel(later);
  const int64_t again = register_test_rms_norm("test.later_rms_norm", nullptr);
  run_rms_norm(4);
  EXPECT_EQ(g_fast_runs, 0);
  registry::unregister_kernel(again);

  registry::set_disabled_kernels({});
  run_rms_norm(4);
  EXPECT_EQ(g_fast_runs, 1);
}

TEST_F(Registry, UnregisteredKernelIsGone) {
  registry::unregister_kernel(handle_);
  run_rms_norm(4);
  EXPECT_EQ(g_fast_runs, 0);
}

// Kernels key by the compute dtypes and by the storage types whose calls they decide (F8_E4M3,
// F8_E5M2, I8: an fp8 KV cache's calls carry its dtype); U8 and codes between the two ranges key
// none, and registering for them is refused.
TEST(RegistryKeys, StorageTypesKeyKernelsOthersAreRefused) {
  xhal_kernel_desc desc{};
  desc.struct_size = sizeof desc;
  desc.name = "test.e5m2_cache_write";
  desc.op = XHAL_OP_KV_CACHE_WRITE;
  desc.dtype = XHAL_DTYPE_F8_E5M2;
  desc.run = fast_run;
  const int64_t handle = registry::register_kernel(DeviceType::cpu, desc);
  const auto kernels = registry::list_kernels();
  const auto listed =
      std::find_if(kernels.begin(), kernels.end(), [](const auto& k) { return k.name == "test.e5m2_cache_write"; });
  ASSERT_NE(listed, kernels.end());
  EXPECT_EQ(listed->dtype, DType::f8_e5m2);
  EXPECT_EQ(listed->op, Op::kv_cache_write);
  registry::unregister_kernel(handle);
  for (const xhal_dtype refused : {XHAL_DTYPE_U8, xhal_dtype(XHAL_DTYPE_COUNT), xhal_dtype(15)}) {
    desc.dtype = refused;
    EXPECT_THROW(registry::register_kernel(DeviceType::cpu, desc), Error) << "dtype code " << int(refused);
  }
}

TEST(RegistryNames, OpNamesRoundTrip) {
  for (int op = 0; op < kNumOps; ++op) EXPECT_EQ(op_from_name(op_name(Op(op))), Op(op));
  try {
    op_from_name("conv2d");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("paged_attention"), std::string::npos);
  }
}

TEST(RegistryEnv, ForceReferenceFromEnvironment) {
  // Run by ctest with XHAL_FORCE_REFERENCE=rms_norm,linear (see tests/CMakeLists.txt).
  if (std::getenv("XHAL_FORCE_REFERENCE") == nullptr) GTEST_SKIP() << "needs XHAL_FORCE_REFERENCE";
  const int64_t handle = register_test_rms_norm("test.env_rms_norm", nullptr);
  std::vector<float> x(4, 1.0f), out(4, 0.0f);
  auto ex = registry::explain([&] {
    ops::rms_norm(TensorView(x.data(), DType::f32, {1, 4}), TensorView(x.data(), DType::f32, {4}), 0.0f,
                  TensorView(out.data(), DType::f32, {1, 4}));
  });
  registry::unregister_kernel(handle);
  // Every kernel but the reference (the last) is passed over, the reference taken.
  ASSERT_EQ(ex.candidates.size(), 1 + cpu_rms_norm_kernels().size()) << ex.str();
  for (size_t i = 0; i + 1 < ex.candidates.size(); ++i) {
    EXPECT_EQ(ex.candidates[i].reason, "not the reference kernel (XHAL_FORCE_REFERENCE)") << ex.str();
  }
  EXPECT_EQ(ex.candidates.back().kernel, "cpu.rms_norm");
  EXPECT_TRUE(ex.candidates.back().taken);
}

// Run by ctest with XHAL_STRICT=bogus: the bad value is warned about (the test's regex) and strict
// mode stays off, so a fallback still runs.
TEST(RegistryEnvStrict, BadValueLeavesStrictOff) {
  if (std::getenv("XHAL_STRICT") == nullptr) GTEST_SKIP() << "needs XHAL_STRICT";
  const int64_t handle = register_test_rms_norm("test.env_strict_rms_norm", fast_supports);
  std::vector<float> x(16, 1.0f), out(16, 0.0f);
  EXPECT_NO_THROW(ops::rms_norm(TensorView(x.data(), DType::f32, {1, 16}), TensorView(x.data(), DType::f32, {16}), 0.0f,
                                TensorView(out.data(), DType::f32, {1, 16})));
  registry::unregister_kernel(handle);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FALSE(registry::list_kernels().empty());
}

}  // namespace
}  // namespace xhal
