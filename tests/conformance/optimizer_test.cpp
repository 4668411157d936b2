// Conformance of adamw_step (with and without f32 master weights, the learning rate and the
// gradient scale as device scalars or not, first and later steps, aligned and odd lengths) and of
// global_grad_norm (its clip scale, non-finite gradients, the same bits twice), each also over lists
// of tensors.
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

// A rank-1 view of `t` from element `offset` on: an entry of a list one element off the 16-byte
// alignment the GPU kernels vectorize with.
TensorView tail_view(const TestTensor& t, int64_t offset) {
  const TensorView& v = t.view();
  return TensorView(static_cast<char*>(v.data()) + offset * int64_t(dtype_size(v.dtype())), v.dtype(),
                    {v.size(0) - offset}, v.device());
}

std::vector<double> tail(std::vector<double> values, int64_t offset) {
  values.erase(values.begin(), values.begin() + offset);
  return values;
}

// Lengths of a list: across the GPU kernels' chunks (32768 and 65536 elements) and launches (more
// entries than one launch takes), empty ones, odd ones.
std::vector<int64_t> list_lengths(int small_entries) {
  std::vector<int64_t> lengths = {5, 0, 4096, 33, 70001, 1, 32768, 32769, 0};
  for (int i = 0; i < small_entries; ++i) lengths.push_back(1 + (i * 37) % 300);
  return lengths;
}

// adamw_step over a list: each entry updated as the golden step; entries at odd offsets leave the
// element before them alone.
TEST_P(Conformance, AdamwStepList) {
  for (const bool with_master : {false, true}) {
    SCOPED_TRACE(fmt::format("master {}", with_master));
    struct Entry {
      TestTensor param, grad, m, v, master;
      std::vector<double> master_values;
      int64_t offset;
      TensorView param_view, grad_view, m_view, v_view, master_view;
    };
    std::vector<Entry> entries;
    const std::vector<int64_t> lengths = list_lengths(40);
    entries.reserve(lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) {
      const int64_t offset = int64_t(i % 2), n = lengths[i] + offset;
      auto param = TestTensor::random({n}, dtype(), device(), rng(), -1, 1);
      std::vector<double> master_values = param.values();
      for (double& w : master_values) w += 1e-3 * double(rng()() % 1000) / 1000.0;
      auto master = TestTensor::of({n}, DType::f32, device(), master_values);
      entries.push_back({std::move(param),
                         random({n}),
                         TestTensor::random({n}, DType::f32, device(), rng(), -0.1, 0.1),
                         TestTensor::random({n}, DType::f32, device(), rng(), 0, 0.01),
                         std::move(master),
                         std::move(master_values),
                         offset,
                         {},
                         {},
                         {},
                         {},
                         {}});
      Entry& e = entries.back();
      e.param_view = tail_view(e.param, offset), e.grad_view = tail_view(e.grad, offset);
      e.m_view = tail_view(e.m, offset), e.v_view = tail_view(e.v, offset);
      e.master_view = tail_view(e.master, offset);
    }
    std::vector<AdamWTensors> list;
    for (const Entry& e : entries) {
      list.push_back({e.param_view, e.grad_view, e.m_view, e.v_view, with_master ? &e.master_view : nullptr});
    }
    const AdamWParams p{.lr = 2e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = 4};
    const double scale = 0.5;
    auto scale_t = TestTensor::of({1}, DType::f32, device(), {scale});
    const TensorView scale_view = scale_t;
    ops::adamw_step(list, nullptr, &scale_view, p);
    for (size_t i = 0; i < entries.size(); ++i) {
      SCOPED_TRACE(fmt::format("entry {} of length {}", i, lengths[i]));
      const Entry& e = entries[i];
      const auto expected = golden::adamw_step({tail(with_master ? e.master_values : e.param.values(), e.offset),
                                                tail(e.m.values(), e.offset), tail(e.v.values(), e.offset)},
                                               tail(e.grad.values(), e.offset), scale, p.lr, p.beta1, p.beta2, p.eps,
                                               p.weight_decay, p.step);
      const std::vector<double> param = e.param.download("param"), m = e.m.download("exp_avg");
      expect_close(tail(param, e.offset), expected.param, dtype(), "param");
      expect_close(tail(m, e.offset), expected.exp_avg, DType::f32, "exp_avg");
      expect_close(tail(e.v.download("exp_avg_sq"), e.offset), expected.exp_avg_sq, DType::f32, "exp_avg_sq");
      if (with_master) expect_close(tail(e.master.download("master"), e.offset), expected.param, DType::f32, "master");
      if (e.offset > 0) {
        EXPECT_EQ(param[0], e.param.values()[0]) << "param written before its view";
        EXPECT_EQ(m[0], e.m.values()[0]) << "exp_avg written before its view";
      }
    }
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

// The norm of a list is the norm of its entries end to end, whatever their lengths and alignment;
// the same bits twice.
TEST_P(Conformance, GlobalGradNormList) {
  std::vector<int64_t> lengths = list_lengths(120);
  lengths.push_back(int64_t(3) << 20);
  std::vector<TestTensor> grads;
  std::vector<TensorView> views;
  std::vector<double> all;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t offset = int64_t(i % 2);
    grads.push_back(random({lengths[i] + offset}));
    views.push_back(tail_view(grads.back(), offset));
    const std::vector<double> values = tail(grads.back().values(), offset);
    all.insert(all.end(), values.begin(), values.end());
  }
  const double expected = golden::l2_norm(all);
  std::vector<double> first;
  for (int run = 0; run < 2; ++run) {
    auto norm = TestTensor::poisoned({1}, DType::f32, device());
    auto clip = TestTensor::poisoned({1}, DType::f32, device());
    const TensorView clip_view = clip;
    ops::global_grad_norm(views, norm, &clip_view, 10.0f);
    const std::vector<double> got = norm.download("norm");
    expect_close(got, {expected}, DType::f32, "norm");
    expect_close(clip.download("clip_scale"), {std::min(1.0, 10.0 / (expected + 1e-6))}, DType::f32, "clip_scale");
    if (run == 0)
      first = got;
    else
      EXPECT_EQ(got, first) << "the norm differs between two runs";
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
