// The shadow check (include/xhal/check.hpp): a wrong kernel planted through the registry is named
// with the first element it gets wrong, in an output or an in/out argument; the throw action raises
// xhal::Error; the CPU's own fast kernels agree with its reference kernels on every op; nothing is
// checked when the mode is off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

// A contiguous f32 tensor's elements.
float* f32_data(const DLTensor* t) { return static_cast<float*>(t->data); }
int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

constexpr int64_t kPlantedIndex = 37;  // the one element the planted kernels get wrong

// rms_norm of contiguous f32 rows, right except out[kPlantedIndex] (0.5 too large).
xhal_status planted_rms_norm(void*, const xhal_op_call* c, char*, size_t) {
  const DLTensor* x = c->tensors[XHAL_RMS_NORM_X];
  const int64_t n = x->shape[x->ndim - 1], rows = numel(x) / n;
  const float *xv = f32_data(x), *w = f32_data(c->tensors[XHAL_RMS_NORM_WEIGHT]);
  float* out = f32_data(c->tensors[XHAL_RMS_NORM_OUT]);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += double(xv[r * n + i]) * xv[r * n + i];
    const float inv = float(1.0 / std::sqrt(sum / double(n) + static_cast<const xhal_norm_op_params*>(c->params)->eps));
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = xv[r * n + i] * inv * w[i];
  }
  out[kPlantedIndex] += 0.5f;
  return XHAL_OK;
}

// fused_add_rms_norm whose out is right but which leaves residual[kPlantedIndex] as it was.
xhal_status planted_fused_add(void*, const xhal_op_call* c, char*, size_t) {
  const DLTensor* x = c->tensors[XHAL_RMS_NORM_X];
  const int64_t n = x->shape[x->ndim - 1], rows = numel(x) / n;
  const float *xv = f32_data(x), *w = f32_data(c->tensors[XHAL_RMS_NORM_WEIGHT]);
  float *res = f32_data(c->tensors[XHAL_FUSED_ADD_RMS_NORM_RESIDUAL]), *out = f32_data(c->tensors[XHAL_RMS_NORM_OUT]);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      v[size_t(i)] = xv[r * n + i] + res[r * n + i];
      sum += double(v[size_t(i)]) * v[size_t(i)];
    }
    const float inv = float(1.0 / std::sqrt(sum / double(n) + static_cast<const xhal_norm_op_params*>(c->params)->eps));
    for (int64_t i = 0; i < n; ++i) {
      out[r * n + i] = v[size_t(i)] * inv * w[i];
      if (r * n + i != kPlantedIndex) res[r * n + i] = v[size_t(i)];
    }
  }
  return XHAL_OK;
}

int64_t plant(xhal_op op, const char* name, xhal_kernel_run_fn run) {
  xhal_kernel_desc desc{};
  desc.struct_size = sizeof desc;
  desc.name = name;
  desc.op = op;
  desc.dtype = XHAL_DTYPE_F32;
  desc.priority = 1000;
  desc.rtol = desc.atol = 2e-5;
  desc.run = run;
  return registry::register_kernel(DeviceType::cpu, desc);
}

Tensor random_tensor(const std::vector<int64_t>& shape, DType dtype, uint32_t seed) {
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> f(static_cast<size_t>(n));
  for (float& v : f) v = dist(rng);
  if (dtype == DType::f32) return Tensor::from_host(f.data(), shape, dtype, Device::cpu());
  std::vector<uint16_t> h(f.size());
  for (size_t i = 0; i < f.size(); ++i) h[i] = dtype == DType::bf16 ? float_to_bf16(f[i]) : float_to_f16(f[i]);
  return Tensor::from_host(h.data(), shape, dtype, Device::cpu());
}

class ShadowCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    set_check_mode(CheckMode::cpu);
    set_check_action(CheckAction::log);
    reset_check_summary();
    set_check_listener([this](const CheckReport& r) { reports.push_back(r); });
  }
  void TearDown() override {
    set_check_mode(CheckMode::off);
    set_check_action(CheckAction::log);
    set_check_listener(nullptr);
    reset_check_summary();
    for (int64_t h : planted) registry::unregister_kernel(h);
  }
  std::vector<CheckReport> reports;
  std::vector<int64_t> planted;
};

TEST_F(ShadowCheck, NamesAPlantedWrongKernelAndItsFirstBadElement) {
  planted.push_back(plant(XHAL_OP_RMS_NORM, "test.planted_rms_norm", planted_rms_norm));
  const Tensor x = random_tensor({4, 33}, DType::f32, 1), w = random_tensor({33}, DType::f32, 2);
  const Tensor out = Tensor::empty({4, 33}, DType::f32, Device::cpu());
  ops::rms_norm(x, w, 1e-6f, out);  // the log action: the op returns, the report says what diverged
  ASSERT_EQ(reports.size(), 1u);
  const CheckReport& r = reports[0];
  EXPECT_EQ(r.op, Op::rms_norm);
  EXPECT_EQ(r.kernel, "test.planted_rms_norm");
  EXPECT_NE(r.reference_kernel, r.kernel);
  EXPECT_FALSE(r.reference_kernel.empty());
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.bad_elements, 1);
  EXPECT_EQ(r.first_bad_output, "out");
  EXPECT_EQ(r.first_bad_index, kPlantedIndex);
  EXPECT_EQ(r.first_bad_coords, (std::vector<int64_t>{1, 4}));  // 37 = 1 * 33 + 4
  EXPECT_NEAR(r.first_bad_got - r.first_bad_expected, 0.5, 1e-4);
  EXPECT_NEAR(r.max_abs_error, 0.5, 1e-4);
  EXPECT_GT(r.max_allowance_used, 1000.0);  // 0.5 against about 4e-5
  EXPECT_EQ(r.shapes, "x[4,33] weight[33] out[4,33]");
  const std::string text = r.str();
  for (const char* part : {"rms_norm", "test.planted_rms_norm", "DIVERGES", "out[1,4]", "flat index 37"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in: " << text;
  }

  const auto summary = check_summary();
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].op, Op::rms_norm);
  EXPECT_EQ(summary[0].calls, 1);
  EXPECT_EQ(summary[0].failed, 1);
  EXPECT_EQ(summary[0].worst_kernel, "test.planted_rms_norm");
  const std::string table = check_summary_table();
  EXPECT_NE(table.find("rms_norm"), std::string::npos) << table;
  EXPECT_NE(table.find("test.planted_rms_norm"), std::string::npos) << table;
}

TEST_F(ShadowCheck, ComparesInOutArgumentsFromTheirValuesBeforeTheOp) {
  planted.push_back(plant(XHAL_OP_FUSED_ADD_RMS_NORM, "test.planted_fused_add", planted_fused_add));
  const Tensor x = random_tensor({3, 40}, DType::f32, 3), w = random_tensor({40}, DType::f32, 4);
  const Tensor residual = random_tensor({3, 40}, DType::f32, 5);
  const Tensor out = Tensor::empty({3, 40}, DType::f32, Device::cpu());
  ops::fused_add_rms_norm(x, residual, w, 1e-6f, out);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].kernel, "test.planted_fused_add");
  EXPECT_EQ(reports[0].bad_elements, 1);  // out is right: the reference started from the same residual
  EXPECT_EQ(reports[0].first_bad_output, "residual");
  EXPECT_EQ(reports[0].first_bad_index, kPlantedIndex);
}

TEST_F(ShadowCheck, ThrowActionRaisesAnInternalErrorNamingTheKernel) {
  planted.push_back(plant(XHAL_OP_RMS_NORM, "test.planted_rms_norm", planted_rms_norm));
  set_check_action(CheckAction::raise);
  const Tensor x = random_tensor({2, 64}, DType::f32, 6), w = random_tensor({64}, DType::f32, 7);
  const Tensor out = Tensor::empty({2, 64}, DType::f32, Device::cpu());
  try {
    ops::rms_norm(x, w, 1e-6f, out);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::internal);
    const std::string what = e.what();
    EXPECT_NE(what.find("test.planted_rms_norm"), std::string::npos) << what;
    EXPECT_NE(what.find("out[0,37]"), std::string::npos) << what;
  }
}

TEST_F(ShadowCheck, OffChecksNothing) {
  planted.push_back(plant(XHAL_OP_RMS_NORM, "test.planted_rms_norm", planted_rms_norm));
  set_check_mode(CheckMode::off);
  const Tensor x = random_tensor({2, 64}, DType::f32, 8), w = random_tensor({64}, DType::f32, 9);
  const Tensor out = Tensor::empty({2, 64}, DType::f32, Device::cpu());
  ops::rms_norm(x, w, 1e-6f, out);
  EXPECT_TRUE(reports.empty());
  EXPECT_TRUE(check_summary().empty());
}

// Every op once per float dtype on shapes that take the fast paths and their remainders: each
// CPU fast kernel agrees with the CPU reference kernel.
TEST_F(ShadowCheck, CpuFastKernelsAgreeWithTheReference) {
  const Device cpu = Device::cpu();
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    reports.clear();
    const Tensor x = random_tensor({5, 200}, dt, 10), w = random_tensor({200}, dt, 11);
    const Tensor res = random_tensor({5, 200}, dt, 12), out = Tensor::empty({5, 200}, dt, cpu);
    ops::rms_norm(x, w, 1e-5f, out);
    ops::fused_add_rms_norm(x, res, w, 1e-5f, out);
    ops::swiglu(x, res, out);
    const Tensor packed = random_tensor({5, 400}, dt, 13);
    ops::swiglu_packed(packed, out);
    ops::gelu_and_mul(x, res, out);
    ops::gelu_and_mul_packed(packed, out, ops::GeluApproximation::tanh);
    const Tensor picks = Tensor::empty({5}, DType::i64, cpu), picked = Tensor::empty({5}, dt, cpu);
    const TensorView picked_view = picked;
    ops::argmax(packed, picks, &picked_view);
    ops::sample(packed, picks, {0.8f, 10, 0.9f, 0.01f, 5, 6});
    const Tensor top_values = Tensor::empty({5, 7}, dt, cpu), top_indices = Tensor::empty({5, 7}, DType::i32, cpu);
    ops::top_k(packed, top_values, top_indices);
    ops::softmax(x, out);
    ops::layer_norm(x, w, &w.view(), 1e-5f, out);  // w as the bias too
    ops::add(x, res, out);
    ops::mul(x, w, out);  // w: one row for every row of x
    const Tensor dw = Tensor::empty({200}, dt, cpu), grad = Tensor::empty({5, 200}, dt, cpu);
    const Tensor grad2 = Tensor::empty({5, 200}, dt, cpu), packed_grad = Tensor::empty({5, 400}, dt, cpu);
    ops::rms_norm_backward(res, x, w, 1e-5f, grad, dw);
    ops::fused_add_rms_norm_backward(res, x, w, 1e-5f, out, grad, dw);
    ops::swiglu_backward(res, x, out, grad, grad2);
    ops::swiglu_packed_backward(res, packed, packed_grad);
    const std::vector<int32_t> labels{3, 199, 0, -100, 57};
    const Tensor labels_t = Tensor::from_host(labels.data(), {5}, DType::i32, cpu);
    const Tensor loss = Tensor::empty({5}, DType::f32, cpu), lse_rows = Tensor::empty({5}, DType::f32, cpu);
    ops::cross_entropy(x, labels_t, loss, lse_rows, {.label_smoothing = 0.1f});
    ops::cross_entropy_backward(x, labels_t, lse_rows, loss, grad);
    const Tensor q = random_tensor({1, 70, 4, 64}, dt, 14), k = random_tensor({1, 70, 2, 64}, dt, 15);
    const Tensor v = random_tensor({1, 70, 2, 64}, dt, 16), o = Tensor::empty({1, 70, 4, 64}, dt, cpu);
    const Tensor lse = Tensor::empty({1, 4, 70}, DType::f32, cpu);
    const TensorView lse_view = lse;
    ops::attention(q, k, v, o, AttentionParams{.causal = true}, &lse_view);
    const std::vector<int32_t> cu{0, 12, 70};
    const Tensor cu_t = Tensor::from_host(cu.data(), {3}, DType::i32, Device::cpu());
    const Tensor vq = random_tensor({70, 4, 64}, dt, 23), vk = random_tensor({70, 2, 64}, dt, 24);
    const Tensor vv = random_tensor({70, 2, 64}, dt, 25), vo = Tensor::empty({70, 4, 64}, dt, cpu);
    const Tensor vlse = Tensor::empty({4, 70}, DType::f32, cpu);
    const TensorView vlse_view = vlse;
    ops::attention_varlen(vq, vk, vv, cu_t, cu_t, 58, 58, vo, AttentionParams{.causal = true}, &vlse_view);
    const Tensor dq = Tensor::empty({1, 70, 4, 64}, dt, cpu), dk = Tensor::empty({1, 70, 2, 64}, dt, cpu);
    const Tensor dv = Tensor::empty({1, 70, 2, 64}, dt, cpu);
    ops::attention_backward(random_tensor({1, 70, 4, 64}, dt, 27), q, k, v, o, lse, dq, dk, dv,
                            AttentionParams{.causal = true});
    const Tensor vdq = Tensor::empty({70, 4, 64}, dt, cpu), vdk = Tensor::empty({70, 2, 64}, dt, cpu);
    const Tensor vdv = Tensor::empty({70, 2, 64}, dt, cpu);
    ops::attention_varlen_backward(random_tensor({70, 4, 64}, dt, 28), vq, vk, vv, cu_t, cu_t, 58, 58, vo, vlse, vdq,
                                   vdk, vdv, AttentionParams{.causal = true});
    const std::vector<int32_t> table{3, 0, 2, 1}, lens{30, 9};
    const Tensor kc = random_tensor({4, 16, 2, 64}, dt, 17), vc = random_tensor({4, 16, 2, 64}, dt, 18);
    const Tensor pq = random_tensor({2, 4, 64}, dt, 19), po = Tensor::empty({2, 4, 64}, dt, cpu);
    ops::paged_attention(pq, kc, vc, Tensor::from_host(table.data(), {2, 2}, DType::i32, Device::cpu()),
                         Tensor::from_host(lens.data(), {2}, DType::i32, Device::cpu()), po);
    const std::vector<int32_t> prefill_cu{0, 5, 7};
    const Tensor ppq = random_tensor({7, 4, 64}, dt, 29), ppo = Tensor::empty({7, 4, 64}, dt, cpu);
    ops::paged_prefill(ppq, kc, vc, Tensor::from_host(prefill_cu.data(), {3}, DType::i32, Device::cpu()),
                       Tensor::from_host(table.data(), {2, 2}, DType::i32, Device::cpu()),
                       Tensor::from_host(lens.data(), {2}, DType::i32, Device::cpu()), 5, ppo,
                       AttentionParams{.causal = true});
    const Tensor codes = Tensor::empty({5, 200}, DType::f8_e4m3, cpu),
                 row_scales = Tensor::empty({5, 1}, DType::f32, cpu);
    const ops::QuantizeParams per_row{ops::QuantizeParams::Granularity::per_row};
    ops::quantize(x, codes, row_scales, per_row);
    ops::dequantize(codes, row_scales, out, per_row);
    const std::vector<int32_t> positions{0, 5, 17, 3, 9, 30, 2};
    const Tensor rq = random_tensor({7, 4, 64}, dt, 20), rk = random_tensor({7, 2, 64}, dt, 21);
    const Tensor positions_t = Tensor::from_host(positions.data(), {7}, DType::i32, Device::cpu());
    const Tensor cache = ops::rope_cache(32, 64, 10000.0);
    ops::rope(rq, rk, positions_t, cache, RopeStyle::neox);
    ops::rope_backward(rq, rk, positions_t, cache, RopeStyle::gptj);
    const Tensor lw = random_tensor({24, 200}, dt, 22), lo = Tensor::empty({5, 24}, dt, cpu);
    ops::linear(x, lw, nullptr, lo);
    const Tensor wcodes = Tensor::empty({24, 200}, DType::f8_e4m3, cpu),
                 w_scales = Tensor::empty({24, 1}, DType::f32, cpu);
    ops::quantize(lw, wcodes, w_scales, per_row);
    ops::linear_fp8(codes, row_scales, wcodes, w_scales, nullptr, lo);
    const Tensor xi = Tensor::empty({5, 200}, DType::i8, cpu), wi = Tensor::empty({24, 200}, DType::i8, cpu);
    ops::quantize(x, xi, row_scales, per_row);
    ops::quantize(lw, wi, w_scales, per_row);
    ops::linear_int8(xi, row_scales, wi, w_scales, nullptr, lo);
    const Tensor ldx = Tensor::empty({5, 200}, dt, cpu), ldw = Tensor::empty({24, 200}, dt, cpu);
    const Tensor ldb = Tensor::empty({24}, dt, cpu);
    const TensorView ldx_view = ldx, ldw_view = ldw, ldb_view = ldb;
    ops::linear_backward(random_tensor({5, 24}, dt, 26), x, lw, &ldx_view, &ldw_view, &ldb_view);
    const Tensor param = random_tensor({1000}, dt, 29), pgrad = random_tensor({1000}, dt, 30);
    const std::vector<float> avg_sq(1000, 0.01f);
    const Tensor avg = random_tensor({1000}, DType::f32, 31);
    const Tensor avg_sq_t = Tensor::from_host(avg_sq.data(), {1000}, DType::f32, cpu);
    ops::adamw_step(param, pgrad, avg, avg_sq_t, nullptr, nullptr, nullptr, AdamWParams{.lr = 1e-3f, .step = 3});
    const Tensor norm = Tensor::empty({1}, DType::f32, cpu);
    ops::global_grad_norm(pgrad, norm, nullptr, 1.0f);
    // The list forms: each entry's outputs compared on their own.
    const Tensor param2 = random_tensor({37}, dt, 32), pgrad2 = random_tensor({37}, dt, 33);
    const Tensor avg2 = random_tensor({37}, DType::f32, 34);
    const Tensor avg_sq2 = Tensor::from_host(avg_sq.data(), {37}, DType::f32, cpu);
    ops::adamw_step({{param, pgrad, avg, avg_sq_t}, {param2, pgrad2, avg2, avg_sq2}}, nullptr, nullptr,
                    AdamWParams{.lr = 1e-3f, .step = 4});
    ops::global_grad_norm({pgrad, pgrad2}, norm, nullptr, 1.0f);
    // Two tiles of the SIMD kernel's tokens and a remainder, odd heads and head dim.
    const Tensor ma = random_tensor({37, 3, 72}, dt, 35), mb = random_tensor({37, 3, 72}, dt, 36);
    const Tensor mla = random_tensor({3, 37}, DType::f32, 37), mlb = random_tensor({3, 37}, DType::f32, 38);
    const Tensor mo = Tensor::empty({37, 3, 72}, dt, cpu), mlo = Tensor::empty({3, 37}, DType::f32, cpu);
    const TensorView mlo_view = mlo;
    ops::merge_attention_states(ma, mla, mb, mlb, mo, &mlo_view);
    for (const CheckReport& r : reports) {
      EXPECT_TRUE(r.passed()) << r.str();
      EXPECT_LE(r.max_allowance_used, 1.0) << r.str();
    }
    // Every op that has a fast kernel for this dtype was compared (the reference itself is not).
    std::vector<std::string> checked;
    for (const CheckReport& r : reports) checked.push_back(std::string(op_name(r.op)));
    for (const auto& k : registry::list_kernels()) {
      if (k.backend != DeviceType::cpu || k.dtype != dt || k.is_reference || k.name.rfind("test.", 0) == 0) continue;
      EXPECT_NE(std::find(checked.begin(), checked.end(), op_name(k.op)), checked.end())
          << k.name << " (" << dtype_name(dt) << ") was not compared";
    }
  }
}

}  // namespace
}  // namespace xhal
