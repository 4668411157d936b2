// xhal-bench's cases of the training ops: the backward ops of the norms and swiglu, cross_entropy
// and its backward, embedding and its backward, the optimizer.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "bench/bench_case.hpp"

namespace xhal::bench {
namespace {

// The parameter tensors of a Llama-style model of about P parameters, as an optimizer sees them:
// 16 layers of q, k, v, o (GQA 4:1), gate, up and down (2.75 h wide) and two norms, an embedding
// of 16 h rows, the final norm, the rest as the lm head; h a multiple of 64.
std::vector<int64_t> list_of_model_tensors(int64_t P) {
  constexpr int kLayers = 16;
  const auto h = std::max<int64_t>(64, int64_t(std::sqrt(double(P) / 188.0)) / 64 * 64);
  const int64_t ffn = h * 11 / 4;
  std::vector<int64_t> lengths = {16 * h * h};
  for (int l = 0; l < kLayers; ++l) {
    for (const int64_t n : {h * h, h * h / 4, h * h / 4, h * h, ffn * h, ffn * h, ffn * h, h, h}) lengths.push_back(n);
  }
  lengths.push_back(h);
  int64_t total = 0;
  for (const int64_t n : lengths) total += n;
  if (total < P) lengths.push_back(P - total);
  return lengths;
}

}  // namespace

void add_training_cases(const Shapes& s, DType dt, Device dev, std::vector<Case>& cases) {
  const double e = double(xhal::dtype_size(dt));
  const std::string tn(xhal::dtype_name(dt));
  auto add = [&](std::string name, double bytes, double flops, Bound bound, auto build) {
    cases.push_back({std::move(name), bytes, flops, bound, build});
  };

  // The backward ops, each input read once and each output written once: rms_norm_backward reads
  // dout and x and writes dx; the fused one also reads dresidual and writes it (dx in place); the
  // swiglu ones read dout, gate and up and write their two gradients.
  for (const auto& [gm, gn] : s.gradient_rows) {
    const std::string shape = fmt::format("{}x{}", gm, gn);
    add("rms_norm_backward/" + shape + "/" + tn, (3.0 * gm * gn + 2.0 * gn) * e, 0, Bound::memory, [=] {
      Tensor dout = random_tensor({gm, gn}, dt, dev), x = random_tensor({gm, gn}, dt, dev);
      Tensor w = random_tensor({gn}, dt, dev), dx = Tensor::empty({gm, gn}, dt, dev);
      Tensor dw = Tensor::empty({gn}, dt, dev);
      return std::function<void()>([=] { xhal::ops::rms_norm_backward(dout, x, w, 1e-5f, dx, dw); });
    });
    // dx is dresidual (in place, as a training step calls it: both are one gradient).
    add("fused_add_rms_norm_backward/" + shape + "/" + tn, (4.0 * gm * gn + 2.0 * gn) * e, 0, Bound::memory, [=] {
      Tensor dout = random_tensor({gm, gn}, dt, dev), r = random_tensor({gm, gn}, dt, dev);
      Tensor dr = random_tensor({gm, gn}, dt, dev), w = random_tensor({gn}, dt, dev);
      Tensor dw = Tensor::empty({gn}, dt, dev);
      return std::function<void()>([=] { xhal::ops::fused_add_rms_norm_backward(dout, r, w, 1e-5f, dr, dr, dw); });
    });
    add("swiglu_backward/" + shape + "/" + tn, 5.0 * gm * gn * e, 0, Bound::memory, [=] {
      Tensor dout = random_tensor({gm, gn}, dt, dev), g = random_tensor({gm, gn}, dt, dev);
      Tensor u = random_tensor({gm, gn}, dt, dev);
      Tensor dg = Tensor::empty({gm, gn}, dt, dev), du = Tensor::empty({gm, gn}, dt, dev);
      return std::function<void()>([=] { xhal::ops::swiglu_backward(dout, g, u, dg, du); });
    });
    add("swiglu_packed_backward/" + shape + "/" + tn, 5.0 * gm * gn * e, 0, Bound::memory, [=] {
      Tensor dout = random_tensor({gm, gn}, dt, dev), x = random_tensor({gm, 2 * gn}, dt, dev);
      Tensor dx = Tensor::empty({gm, 2 * gn}, dt, dev);
      return std::function<void()>([=] { xhal::ops::swiglu_packed_backward(dout, x, dx); });
    });
  }

  // cross_entropy over a Llama-3 vocabulary: the forward reads the logits once; the backward reads
  // them and writes the gradient over them (in place); a training step runs both.
  {
    const int64_t CT = s.ce_tokens, CV = s.ce_vocab;
    const std::string shape = fmt::format("T{}_V{}", CT, CV);
    const double logits_bytes = double(CT) * double(CV) * e;
    for (const int passes : {1, 2, 3}) {
      const std::string name = passes == 1   ? "cross_entropy/" + shape
                               : passes == 2 ? "cross_entropy_backward/" + shape + "_in_place"
                                             : "cross_entropy/" + shape + "_forward_and_backward";
      add(name + "/" + tn, passes * logits_bytes + 16.0 * CT, 0, Bound::memory, [=] {
        Tensor logits = random_tensor({CT, CV}, dt, dev);
        std::vector<int32_t> label_values(static_cast<size_t>(CT));
        for (size_t t = 0; t < label_values.size(); ++t) label_values[t] = int32_t((t * 7919) % size_t(CV));
        Tensor labels = i32_tensor(label_values, {CT}, dev);
        Tensor loss = Tensor::empty({CT}, DType::f32, dev), lse = Tensor::empty({CT}, DType::f32, dev);
        std::vector<float> ones(static_cast<size_t>(CT), 1.0f / float(CT));
        Tensor dloss = Tensor::from_host(ones.data(), {CT}, DType::f32, dev);
        xhal::ops::cross_entropy(logits, labels, loss, lse);
        return std::function<void()>([=] {
          if (passes != 2) xhal::ops::cross_entropy(logits, labels, loss, lse);
          if (passes != 1) xhal::ops::cross_entropy_backward(logits, labels, lse, dloss, logits);
        });
      });
    }
  }

  // embedding over a Llama-3 vocabulary and hidden size (a batch of 2·ce_tokens tokens): the forward
  // reads the picked rows and writes them; the backward reads dout and writes the whole table's
  // gradient (zero where no token picked a row), the bytes its ceiling counts.
  {
    const int64_t ET = 2 * s.ce_tokens, EV = s.ce_vocab, ED = 4096;
    const std::string shape = fmt::format("T{}_V{}_D{}", ET, EV, ED);
    std::vector<int32_t> id_values(static_cast<size_t>(ET));
    for (size_t t = 0; t < id_values.size(); ++t) id_values[t] = int32_t((t * 7919) % size_t(EV));
    add("embedding/" + shape + "/" + tn, 2.0 * double(ET * ED) * e + 4.0 * ET, 0, Bound::memory, [=] {
      Tensor ids = i32_tensor(id_values, {ET}, dev), table = random_tensor({EV, ED}, dt, dev);
      Tensor out = Tensor::empty({ET, ED}, dt, dev);
      return std::function<void()>([=] { xhal::ops::embedding(ids, table, out); });
    });
    add("embedding_backward/" + shape + "/" + tn, double((ET + EV) * ED) * e + 4.0 * ET, 0, Bound::memory, [=] {
      Tensor ids = i32_tensor(id_values, {ET}, dev), dout = random_tensor({ET, ED}, dt, dev);
      Tensor dtable = Tensor::empty({EV, ED}, dt, dev);
      return std::function<void()>([=] { xhal::ops::embedding_backward(ids, dout, dtable); });
    });
  }

  // The optimizer over one flat buffer of parameters with f32 master weights and moments: adamw_step
  // reads the gradient and the three f32 buffers and writes the parameter and the three buffers;
  // global_grad_norm reads the gradient.
  {
    const int64_t P = s.optimizer_params;
    const std::string shape = fmt::format("{}M_params", P >> 20);
    add("adamw_step/" + shape + "_master/" + tn, double(P) * (2 * e + 6 * 4.0), 0, Bound::memory, [=] {
      Tensor param = hashed_tensor(P, dt, dev, -1, 1), grad = hashed_tensor(P, dt, dev, -1, 1);
      Tensor master = hashed_tensor(P, DType::f32, dev, -1, 1), m = hashed_tensor(P, DType::f32, dev, -0.1f, 0.1f);
      Tensor v = hashed_tensor(P, DType::f32, dev, 0, 0.01f);
      return std::function<void()>([=] {
        const xhal::TensorView master_view = master;
        xhal::ops::adamw_step(param, grad, m, v, &master_view, nullptr, nullptr, {.weight_decay = 0.0f});
      });
    });
    add("global_grad_norm/" + shape + "/" + tn, double(P) * e, 0, Bound::memory, [=] {
      Tensor grad = hashed_tensor(P, dt, dev, -1, 1), norm = Tensor::empty({1}, DType::f32, dev);
      return std::function<void()>([=] { xhal::ops::global_grad_norm(grad, norm, nullptr, 1.0f); });
    });
    // The same parameters as a model's list of tensors (list_of_model_tensors), each a view of its
    // own range of the buffers: the ceiling is the flat buffers', the difference the list's cost.
    const std::vector<int64_t> lengths = list_of_model_tensors(P);
    const std::string list_shape = fmt::format("{}M_params_{}_tensors", P >> 20, lengths.size());
    auto views_of = [lengths](const Tensor& t) {
      std::vector<xhal::TensorView> views;
      int64_t offset = 0;
      for (const int64_t n : lengths) {
        views.emplace_back(static_cast<char*>(t.data()) + offset * int64_t(dtype_size(t.dtype())), t.dtype(),
                           std::vector<int64_t>{n}, t.device());
        offset += n;
      }
      return views;
    };
    add("adamw_step/" + list_shape + "_master/" + tn, double(P) * (2 * e + 6 * 4.0), 0, Bound::memory, [=] {
      Tensor param = hashed_tensor(P, dt, dev, -1, 1), grad = hashed_tensor(P, dt, dev, -1, 1);
      Tensor master = hashed_tensor(P, DType::f32, dev, -1, 1), m = hashed_tensor(P, DType::f32, dev, -0.1f, 0.1f);
      Tensor v = hashed_tensor(P, DType::f32, dev, 0, 0.01f);
      const auto params = views_of(param), grads = views_of(grad), masters = views_of(master);
      const auto ms = views_of(m), vs = views_of(v);
      std::vector<xhal::AdamWTensors> list;
      for (size_t i = 0; i < params.size(); ++i) list.push_back({params[i], grads[i], ms[i], vs[i], nullptr});
      // The views are owned by the closure; the entries point at its copies.
      return std::function<void()>([=, list = std::move(list)]() mutable {
        for (size_t i = 0; i < list.size(); ++i) list[i].master = &masters[i];
        xhal::ops::adamw_step(list, nullptr, nullptr, {.weight_decay = 0.0f});
        (void)param, (void)grad, (void)master, (void)m, (void)v;
      });
    });
    add("global_grad_norm/" + list_shape + "/" + tn, double(P) * e, 0, Bound::memory, [=] {
      Tensor grad = hashed_tensor(P, dt, dev, -1, 1), norm = Tensor::empty({1}, DType::f32, dev);
      const auto grads = views_of(grad);
      return std::function<void()>([=] {
        xhal::ops::global_grad_norm(grads, norm, nullptr, 1.0f);
        (void)grad;
      });
    });
  }
}

}  // namespace xhal::bench
