// Conformance of adamw_step (with and without f32 master weights, the learning rate and the
// gradient scale as device scalars or not, first and later steps, aligned and odd lengths) and of
// global_grad_norm (its clip scale, non-finite gradients, the same bits twice).
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/optimizer.hpp"

namespace xhal::test {
namespace {

TEST_P(Conformance, AdamwStep) {
  struct Case {
    int64_t n;
    bool master, device_lr, grad_scale;
    int64_t step;
    float weight_decay;
  };
  for (const Case& c : {Case{1, false, false, false, 1, 0.01f}, Case{7, true, true, true, 1, 0.0f},
                        Case{1000, false, true, false, 10, 0.1f}, Case{100003, true, false, true, 3, 0.01f},
                        Case{65536, true, true, false, 1000, 0.01f}, Case{0, true, true, true, 1, 0.01f}}) {
    SCOPED_TRACE(fmt::format("n {} master {} device lr {} grad scale {} step {}", c.n, c.master, c.device_lr,
                             c.grad_scale, c.step));
    auto param = TestTensor::random({c.n}, dtype(), device(), rng(), -1, 1);
    auto grad = random({c.n});
    auto m = TestTensor::random({c.n}, DType::f32, device(), rng(), -0.1, 0.1);
    auto v = TestTensor::random({c.n}, DType::f32, device(), rng(), 0, 0.01);
    // The master weights hold the parameter's value before rounding: a little off the param.
    std::vector<double> master_values = param.values();
    for (double& w : master_values) w += 1e-3 * double(rng()() % 1000) / 1000.0;
    auto master = TestTensor::of({c.n}, DType::f32, device(), master_values);
    const AdamWParams p{
        .lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = c.weight_decay, .step = c.step};
    const double scale = 0.75;
    auto lr_t = TestTensor::of({1}, DType::f32, device(), {double(p.lr)});
    auto scale_t = TestTensor::of({1}, DType::f32, device(), {scale});
    const TensorView master_view = master, lr_view = lr_t, scale_view = scale_t;
    // With a device lr the host one is ignored: give it a wrong value.
    AdamWParams call_params = p;
    if (c.device_lr) call_params.lr = 1.0f;
    ops::adamw_step(param, grad, m, v, c.master ? &master_view : nullptr, c.device_lr ? &lr_view : nullptr,
                    c.grad_scale ? &scale_view : nullptr, call_params);
    const auto expected =
        golden::adamw_step({c.master ? master_values : param.values(), m.values(), v.values()}, grad.values(),
                           c.grad_scale ? scale : 1.0, p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.step);
    expect_close(param.download("param"), expected.param, dtype(), "param");
    if (c.master) expect_close(master.download("master"), expected.param, DType::f32, "master");
    expect_close(m.download("exp_avg"), expected.exp_avg, DType::f32, "exp_avg");
    expect_close(v.download("exp_avg_sq"), expected.exp_avg_sq, DType::f32, "exp_avg_sq");
  }
}

TEST_P(Conformance, GlobalGradNorm) {
  for (const int64_t n : {int64_t(1), int64_t(1000), int64_t(100003), int64_t(3) << 20}) {
    for (const float max_norm : {0.0f, 1.0f, 1e9f}) {
      SCOPED_TRACE(fmt::format("n {} max_norm {}", n, max_norm));
      auto grad = random({n});
      auto norm = TestTensor::poisoned({1}, DType::f32, device());
      auto clip = TestTensor::poisoned({1}, DType::f32, device());
      const TensorView clip_view = clip;
      ops::global_grad_norm(grad, norm, &clip_view, max_norm);
      const double expected = golden::l2_norm(grad.values());
      expect_close(norm.download("norm"), {expected}, DType::f32, "norm");
      const double scale = max_norm > 0 ? std::min(1.0, max_norm / (expected + 1e-6)) : 1.0;
      expect_close(clip.download("clip_scale"), {scale}, DType::f32, "clip_scale");
    }
  }
}

// A NaN gradient gives a NaN norm and clip scale (an update with them shows); the norm has the
// same bits twice.
TEST_P(Conformance, GlobalGradNormNonFiniteAndRepeatable) {
  auto grad = random({50000}).with({{777, std::nan("")}});
  auto norm = TestTensor::poisoned({1}, DType::f32, device());
  auto clip = TestTensor::poisoned({1}, DType::f32, device());
  const TensorView clip_view = clip;
  ops::global_grad_norm(grad, norm, &clip_view, 1.0f);
  EXPECT_TRUE(std::isnan(norm.download("norm")[0]));
  EXPECT_TRUE(std::isnan(clip.download("clip_scale")[0]));
  auto finite = random({1 << 20});
  std::vector<double> first;
  for (int run = 0; run < 2; ++run) {
    auto out = TestTensor::poisoned({1}, DType::f32, device());
    ops::global_grad_norm(finite, out, nullptr, 0.0f);
    if (run == 0)
      first = out.download("norm");
    else
      EXPECT_EQ(out.download("norm"), first) << "the norm differs between two runs";
  }
}

}  // namespace
}  // namespace xhal::test
