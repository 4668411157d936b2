// train_llama: trains a small Llama-style model through xhal ops alone, on synthetic sequences from
// a fixed random bigram model (ngram_data.hpp), on the default device (BACKEND_TYPE). Prints the
// loss, the gradient norm and tokens/s per step, then the median step time and the model FLOP
// utilisation (MFU: 6 flops per parameter per token for the matrices, the lm head included and the
// embedding table not, plus 12 · layers · hidden · seq for attention, PaLM's count; against
// --peak-tflops, default 989, the H100/H200 SXM's dense bf16 rate).
//   --steps N --lr X --batch B --seq S --layers L --hidden H --vocab V --dtype f32|f16|bf16
//   --seed N --peak-tflops X --head-dim D (64)
//   --loss-below X   exit 1 unless the last step's loss is below X (the ctest's check)
//   --compare cpu    run every step on the CPU backend too, from the same parameters and batches:
//                    print both losses per step and, after the first, the largest relative
//                    difference of each parameter's gradient; exit 1 when a loss differs by more
//                    than kLossTolerance or a gradient by more than kGradientTolerance (README)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "model.hpp"
#include "ngram_data.hpp"

namespace {

using train_llama::ModelConfig;

// --compare cpu's bounds for 16-bit training: the backends round the same values in different
// orders, so a gradient element may differ by a few 16-bit ulps of its parameter's largest element
// (bf16: 2^-8 = 3.9e-3 relative), and the losses drift apart slowly as the parameters do.
constexpr double kLossTolerance = 1e-2, kGradientTolerance = 3e-2;

struct Options {
  ModelConfig model;
  int64_t steps = 60;
  float lr = 3e-3f, max_grad_norm = 1.0f;
  uint64_t seed = 1;
  double loss_below = 0;  // 0: no check
  double peak_tflops = 989;
  bool compare_cpu = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--steps") {
      o.steps = std::stoll(value);
    } else if (flag == "--lr") {
      o.lr = std::stof(value);
    } else if (flag == "--batch") {
      o.model.batch = std::stoll(value);
    } else if (flag == "--seq") {
      o.model.seq = std::stoll(value);
    } else if (flag == "--layers") {
      o.model.layers = std::stoll(value);
    } else if (flag == "--hidden") {
      o.model.hidden = std::stoll(value);
    } else if (flag == "--vocab") {
      o.model.vocab = std::stoll(value);
    } else if (flag == "--seed") {
      o.seed = std::stoull(value);
    } else if (flag == "--peak-tflops") {
      o.peak_tflops = std::stod(value);
    } else if (flag == "--head-dim") {
      o.model.head_dim = std::stoll(value);
    } else if (flag == "--loss-below") {
      o.loss_below = std::stod(value);
    } else if (flag == "--compare") {
      if (value != "cpu") throw std::invalid_argument("--compare takes cpu");
      o.compare_cpu = true;
    } else if (flag == "--dtype") {
      o.model.dtype = value == "f32"    ? xhal::DType::f32
                      : value == "f16"  ? xhal::DType::f16
                      : value == "bf16" ? xhal::DType::bf16
                                        : throw std::invalid_argument("--dtype must be f32, f16 or bf16");
    } else {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
  ModelConfig& m = o.model;
  if (m.head_dim <= 0 || m.hidden <= 0 || m.hidden % m.head_dim != 0) {
    throw std::invalid_argument("--hidden: a positive multiple of --head-dim");
  }
  if (o.steps < 1 || m.batch < 1 || m.seq < 1 || m.layers < 1 || m.vocab < 2) {
    throw std::invalid_argument("--steps, --batch, --seq, --layers >= 1 and --vocab >= 2");
  }
  // Llama's proportions: GQA ratio 4 from 8 heads on (2 below), an MLP ~2.75x wider.
  m.heads = m.hidden / m.head_dim;
  m.kv_heads = m.heads >= 8 && m.heads % 4 == 0 ? m.heads / 4 : m.heads % 2 == 0 ? m.heads / 2 : m.heads;
  m.inter = (m.hidden * 11 / 4 + 63) / 64 * 64;
  return o;
}

// The largest |a - b| over a parameter's elements, relative to the largest |b|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b, int64_t offset, int64_t count) {
  double diff = 0, scale = 0;
  for (int64_t i = offset; i < offset + count; ++i) {
    diff = std::max(diff, std::abs(double(a[size_t(i)]) - double(b[size_t(i)])));
    scale = std::max(scale, std::abs(double(b[size_t(i)])));
  }
  return scale == 0 ? diff : diff / scale;
}

int run(const Options& o) {
  const ModelConfig& m = o.model;
  auto& dm = xhal::DeviceManager::instance();
  const xhal::Device device = dm.default_device();
  const std::vector<float> init = train_llama::initial_parameters(m, o.seed);
  std::printf(
      "train_llama on %s (%s): %lld layers, hidden %lld, heads %lld/%lld, vocab %lld, %lld x %lld tokens, "
      "%s, %zu parameters\n",
      device.str().c_str(), dm.default_device_reason().c_str(), (long long)m.layers, (long long)m.hidden,
      (long long)m.heads, (long long)m.kv_heads, (long long)m.vocab, (long long)m.batch, (long long)m.seq,
      std::string(xhal::dtype_name(m.dtype)).c_str(), init.size());
  std::printf("the data's entropy (the lowest loss): %.3f; a model that learnt nothing: %.3f\n",
              train_llama::NgramData::entropy(), std::log(double(m.vocab)));
  train_llama::Trainer trainer(m, device, init);
  std::unique_ptr<train_llama::Trainer> reference;
  if (o.compare_cpu) reference = std::make_unique<train_llama::Trainer>(m, xhal::Device::cpu(), init);
  train_llama::NgramData data(m.vocab, o.seed);
  std::vector<int32_t> inputs, labels;
  double last_loss = 0;
  bool agree = true;
  std::vector<double> step_seconds;
  for (int64_t step = 1; step <= o.steps; ++step) {
    data.next_batch(m.batch, m.seq, &inputs, &labels);
    const float lr = o.lr * float(std::min<int64_t>(step, 10)) / 10.0f;  // linear warmup over 10 steps
    const auto t0 = std::chrono::steady_clock::now();
    const train_llama::StepResult r = trainer.step(inputs, labels, lr, o.max_grad_norm, step);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (step > 3) step_seconds.push_back(dt.count());  // the first steps load kernels and warm caches
    std::printf("step %4lld  loss %.4f  grad norm %.4f  %.0f tokens/s", (long long)step, r.loss, r.grad_norm,
                double(m.tokens()) / dt.count());
    if (reference) {
      const std::vector<float> grads = trainer.gradients();
      const train_llama::StepResult ref = reference->step(inputs, labels, lr, o.max_grad_norm, step);
      std::printf("  cpu loss %.4f  difference %+.2e", ref.loss, r.loss - ref.loss);
      agree = agree && std::abs(r.loss - ref.loss) <= kLossTolerance;
      if (step == 1) {
        const std::vector<float> ref_grads = reference->gradients();
        const train_llama::ParamLayout layout(m);
        const auto entries = layout.entries(m);
        const auto names = train_llama::ParamLayout::names(m);
        std::printf("\nmax relative gradient difference from the cpu after step 1:\n");
        for (size_t p = 0; p < entries.size(); ++p) {
          const double d = relative_difference(grads, ref_grads, entries[p].offset, entries[p].count);
          std::printf("  %-18s %.2e\n", names[p].c_str(), d);
          agree = agree && d <= kGradientTolerance;
        }
      }
    }
    std::printf("\n");
    last_loss = r.loss;
  }
  if (!step_seconds.empty()) {
    std::sort(step_seconds.begin(), step_seconds.end());
    const double median = step_seconds[step_seconds.size() / 2];
    const double matrices = double(init.size() - size_t(m.vocab * m.hidden));
    const double flops = double(m.tokens()) * (6.0 * matrices + 12.0 * double(m.layers * m.hidden * m.seq));
    std::printf("median step (steps 4-%lld): %.2f ms, %.0f tokens/s, %.1f model TFLOP/s, MFU %.1f%% of %.0f TFLOP/s\n",
                (long long)o.steps, median * 1e3, double(m.tokens()) / median, flops / median / 1e12,
                100.0 * flops / median / 1e12 / o.peak_tflops, o.peak_tflops);
  }
  if (o.compare_cpu) {
    std::printf("%s: losses within %.0e of the cpu's at every step, gradients within %.0e after step 1\n",
                agree ? "agree" : "FAILED", kLossTolerance, kGradientTolerance);
    if (!agree) return 1;
  }
  if (o.loss_below > 0 && !(last_loss < o.loss_below)) {
    std::printf("FAILED: the last loss %.4f is not below %.4f\n", last_loss, o.loss_below);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_llama: %s\n", e.what());
    return 2;
  }
}
