// xhal-bench's cases of the training ops: the backward ops of the norms and swiglu, cross_entropy
// and its backward, embedding and its backward, the optimizer.
#include <fmt/format.h>

#include "bench/bench_case.hpp"

namespace xhal::bench {

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
  }
}

}  // namespace xhal::bench
