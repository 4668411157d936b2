// serve: a multi-request run of a decoder model through xhal on the default device (BACKEND_TYPE).
// N requests with prompts of random lengths join a continuously batched engine (engine.hpp); it
// prints prefill and decode tokens/s, per-step latency percentiles and the prefill's FLOP rate as a
// fraction of the device's measured GEMM rate (MFU). --check runs the same requests again one at a
// time, a token a step (the step-by-step reference), and requires the same greedy tokens. --save
// writes the model (config.json, model.safetensors) and the run (requests.json, first_logits.f32)
// for bench/peers/serve_torch.py.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine.hpp"
#include "weights.hpp"

namespace {

using xhal::Device;
using xhal::DType;

struct Options {
  std::string preset = "tiny", config_path, weights_path, save_dir;
  DType dtype = DType::bf16;
  int64_t requests = 8, prompt_min = 16, prompt_max = 64, max_new = 16;
  bool top_p = false, check = false;
  uint64_t seed = 1;
  serve::EngineOptions engine;
};

// The models' shapes by name: "tiny" for tests, "1b" Llama 3.2 1B's.
examples::ModelConfig preset(const std::string& name) {
  examples::ModelConfig c;
  c.model_type = "llama";
  if (name == "tiny") {
    c.hidden = 128, c.intermediate = 256, c.layers = 2, c.heads = 4, c.kv_heads = 2, c.head_dim = 32, c.vocab = 512;
    c.max_position = 4096, c.rms_norm_eps = 1e-5;
  } else if (name == "1b") {
    c.hidden = 2048, c.intermediate = 8192, c.layers = 16, c.heads = 32, c.kv_heads = 8, c.head_dim = 64;
    c.vocab = 128256, c.max_position = 131072, c.rms_norm_eps = 1e-5, c.rope_theta = 500000.0;
    c.rope_scaling = {xhal::ops::RopeScaling::Type::llama3, 32.0, 8192, 1.0, 4.0};
    c.tie_word_embeddings = true;
  } else {
    throw std::invalid_argument("--preset must be tiny or 1b");
  }
  return c;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--check") {
      o.check = true;
      continue;
    }
    if (flag == "--top-p") {
      o.top_p = true;
      continue;
    }
    if (flag == "--fp8-linear") {
      o.engine.fp8_linear = true;
      continue;
    }
    if (flag == "--fp8-kv") {
      o.engine.fp8_kv_cache = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--preset")
      o.preset = value;
    else if (flag == "--config")
      o.config_path = value;
    else if (flag == "--weights")
      o.weights_path = value;
    else if (flag == "--save")
      o.save_dir = value;
    else if (flag == "--requests")
      o.requests = std::stoll(value);
    else if (flag == "--prompt-min")
      o.prompt_min = std::stoll(value);
    else if (flag == "--prompt-max")
      o.prompt_max = std::stoll(value);
    else if (flag == "--max-new")
      o.max_new = std::stoll(value);
    else if (flag == "--chunk")
      o.engine.max_step_tokens = std::stoll(value);
    else if (flag == "--max-running")
      o.engine.max_running = std::stoll(value);
    else if (flag == "--block-size")
      o.engine.block_size = std::stoll(value);
    else if (flag == "--kv-scale")
      o.engine.kv_scale = std::stof(value);
    else if (flag == "--seed")
      o.seed = std::stoull(value);
    else if (flag == "--dtype") {
      if (value == "f32")
        o.dtype = DType::f32;
      else if (value == "f16")
        o.dtype = DType::f16;
      else if (value == "bf16")
        o.dtype = DType::bf16;
      else
        throw std::invalid_argument("--dtype must be f32, f16 or bf16");
    } else {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
  if (o.requests < 1 || o.prompt_min < 1 || o.prompt_max < o.prompt_min || o.max_new < 1) {
    throw std::invalid_argument("--requests >= 1, 1 <= --prompt-min <= --prompt-max, --max-new >= 1");
  }
  if (o.engine.max_step_tokens < 1 || o.engine.max_running < 1 || o.engine.block_size < 1) {
    throw std::invalid_argument("--chunk, --max-running and --block-size must be >= 1");
  }
  return o;
}

std::vector<serve::Request> make_requests(const Options& o, int64_t vocab) {
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int64_t> length(o.prompt_min, o.prompt_max);
  std::uniform_int_distribution<int32_t> token(0, int32_t(vocab - 1));
  std::vector<serve::Request> requests;
  for (int64_t id = 0; id < o.requests; ++id) {
    serve::Request r;
    r.id = id, r.max_new_tokens = o.max_new;
    r.prompt.resize(size_t(length(rng)));
    for (int32_t& t : r.prompt) t = token(rng);
    if (o.top_p && !o.check) r.sampling = {0.8f, 0.9f, uint64_t(id) + 1};
    requests.push_back(std::move(r));
  }
  return requests;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[size_t(std::min<double>(double(v.size() - 1), p * double(v.size() - 1) + 0.5))];
}

// The device's GEMM rate in the run's dtype, FLOP/s: the median of five 4096³ linears (1024³ on the CPU).
double gemm_rate(Device device, DType dtype) {
  const int64_t n = device.type == xhal::DeviceType::cpu ? 1024 : 4096;
  const xhal::Tensor a = xhal::Tensor::empty({n, n}, dtype, device), b = xhal::Tensor::empty({n, n}, dtype, device);
  const xhal::Tensor out = xhal::Tensor::empty({n, n}, dtype, device);
  std::vector<double> seconds;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    xhal::ops::linear(a, b, nullptr, out);
    xhal::DeviceManager::instance().synchronize(device);
    if (i > 0) seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * double(n) * double(n) * double(n) / percentile(seconds, 0.5);
}

struct RunSummary {
  std::map<int64_t, std::vector<int32_t>> tokens;
  std::map<int64_t, std::vector<float>> first_logits;  // each request's first token's logits, when kept
  std::vector<serve::StepStats> steps;
  double seconds = 0;
};

// Serves every request; keep_logits: each request's first token's logits too (downloaded as they
// come, which the step times then include).
RunSummary serve_all(const examples::ModelConfig& c, serve::Weights weights, const Options& o,
                     const serve::EngineOptions& eo, Device device, const std::vector<serve::Request>& requests,
                     bool keep_logits) {
  serve::Engine engine(c, std::move(weights), o.dtype, eo, device);
  for (const serve::Request& r : requests) engine.add(r);
  RunSummary run;
  const auto t0 = std::chrono::steady_clock::now();
  while (!engine.idle()) {
    run.steps.push_back(engine.step());
    if (!keep_logits) continue;
    const auto sampled = engine.last_sampled();
    const bool any_first = std::any_of(sampled.begin(), sampled.end(), [](const auto& s) { return s.second == 0; });
    if (!any_first) continue;
    const std::vector<float> logits = engine.last_logits();
    for (size_t i = 0; i < sampled.size(); ++i) {
      if (sampled[i].second != 0) continue;
      const auto row = logits.begin() + std::ptrdiff_t(i * size_t(c.vocab));
      run.first_logits[sampled[i].first].assign(row, row + std::ptrdiff_t(c.vocab));
    }
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.tokens = engine.finished();
  return run;
}

void report(const examples::ModelConfig& c, const RunSummary& run, const std::vector<serve::Request>& requests,
            Device device, DType dtype) {
  double prefill_s = 0, decode_s = 0, prefill_flops = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0, decode_only_tokens = 0;
  std::vector<double> all, decode_only;
  for (const serve::StepStats& s : run.steps) {
    all.push_back(s.seconds);
    prefill_tokens += s.prefill_tokens, decode_tokens += s.decode_tokens;
    if (s.prefill_tokens > 0) {
      prefill_s += s.seconds;
    } else {
      decode_s += s.seconds, decode_only_tokens += s.decode_tokens;
      decode_only.push_back(s.seconds);
    }
  }
  for (const serve::Request& r : requests) {  // each prompt token attends to itself and those before
    const double n = double(r.prompt.size());
    prefill_flops += serve::forward_flops(c, int64_t(r.prompt.size()), n * (n + 1) / 2, 1);
  }
  const double rate = gemm_rate(device, dtype);
  std::printf("requests %zu, steps %zu, %.3f s: prefill %lld tokens, decode %lld tokens\n", requests.size(),
              run.steps.size(), run.seconds, (long long)prefill_tokens, (long long)decode_tokens);
  std::printf(
      "prefill: %.0f tokens/s over the steps that held prompt chunks (%.3f s), %.3g TFLOP/s = MFU %.2f of "
      "the measured %s GEMM rate (%.3g TFLOP/s)\n",
      double(prefill_tokens) / std::max(prefill_s, 1e-12), prefill_s, prefill_flops / prefill_s / 1e12,
      prefill_flops / prefill_s / rate, std::string(xhal::dtype_name(dtype)).c_str(), rate / 1e12);
  std::printf("decode: %.0f tokens/s over the decode-only steps (%.3f s)\n",
              double(decode_only_tokens) / std::max(decode_s, 1e-12), decode_s);
  // The decode-only steps with the most requests (every request of the run, where all fit at once):
  // the rate a static batch of them would be compared at.
  int64_t widest = 0, full_tokens = 0;
  double full_s = 0;
  for (const serve::StepStats& s : run.steps) {
    if (s.prefill_tokens == 0) widest = std::max(widest, s.decode_tokens);
  }
  for (const serve::StepStats& s : run.steps) {
    if (s.prefill_tokens == 0 && s.decode_tokens == widest) full_tokens += s.decode_tokens, full_s += s.seconds;
  }
  std::printf("decode, full steps (%lld requests a step): %.0f tokens/s, %.3f ms a step\n", (long long)widest,
              double(full_tokens) / std::max(full_s, 1e-12),
              full_s / std::max<double>(double(full_tokens / std::max<int64_t>(widest, 1)), 1) * 1e3);
  std::printf("step latency ms: all p50 %.3f p90 %.3f p99 %.3f; decode-only p50 %.3f p90 %.3f p99 %.3f\n",
              percentile(all, 0.5) * 1e3, percentile(all, 0.9) * 1e3, percentile(all, 0.99) * 1e3,
              percentile(decode_only, 0.5) * 1e3, percentile(decode_only, 0.9) * 1e3,
              percentile(decode_only, 0.99) * 1e3);
}

// The run for another implementation to repeat and compare with (bench/peers/serve_torch.py):
// requests.json (each request's prompt, max_new_tokens and generated tokens, by id) and
// first_logits.f32 (each request's first token's logits, [requests, vocab] float32 in id order).
void save_run(const std::string& dir, const std::vector<serve::Request>& requests, const RunSummary& run,
              int64_t vocab) {
  std::ofstream json(dir + "/requests.json");
  auto list = [](const std::vector<int32_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  };
  json << "[\n";
  for (size_t i = 0; i < requests.size(); ++i) {
    const serve::Request& r = requests[i];
    json << "  {\"id\": " << r.id << ", \"max_new_tokens\": " << r.max_new_tokens << ", \"prompt\": " << list(r.prompt)
         << ", \"generated\": " << list(run.tokens.at(r.id)) << "}" << (i + 1 < requests.size() ? ",\n" : "\n");
  }
  json << "]\n";
  std::ofstream logits(dir + "/first_logits.f32", std::ios::binary);
  for (const serve::Request& r : requests) {
    const std::vector<float>& row = run.first_logits.at(r.id);
    logits.write(reinterpret_cast<const char*>(row.data()), std::streamsize(vocab * int64_t(sizeof(float))));
  }
  if (!json || !logits) throw std::runtime_error("serve: cannot write the run to " + dir);
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto& dm = xhal::DeviceManager::instance();
  const Device device = dm.default_device();
  const examples::ModelConfig c = o.config_path.empty() ? preset(o.preset) : examples::load_model_config(o.config_path);
  std::printf("serve on %s (%s): hidden %lld, layers %lld, heads %lld/%lld x %lld, vocab %lld, %s\n",
              device.str().c_str(), dm.properties(device).name.c_str(), (long long)c.hidden, (long long)c.layers,
              (long long)c.heads, (long long)c.kv_heads, (long long)c.head_dim, (long long)c.vocab,
              std::string(xhal::dtype_name(o.dtype)).c_str());
  const auto load = [&](Device d) {
    return o.weights_path.empty() ? serve::random_weights(c, o.dtype, d, o.seed)
                                  : serve::load_weights(o.weights_path, c, o.dtype, d);
  };
  serve::Weights weights = load(device);
  if (!o.save_dir.empty()) {
    serve::save_weights(o.save_dir + "/model.safetensors", c, weights);
    std::ofstream(o.save_dir + "/config.json") << examples::model_config_json(c) << "\n";
  }
  const std::vector<serve::Request> requests = make_requests(o, c.vocab);
  serve::EngineOptions eo = o.engine;
  eo.max_context = o.prompt_max + o.max_new;
  eo.num_blocks =
      std::min<int64_t>(o.requests, eo.max_running) * ((eo.max_context + eo.block_size - 1) / eo.block_size);
  const RunSummary batched = serve_all(c, weights, o, eo, device, requests, !o.save_dir.empty());
  report(c, batched, requests, device, o.dtype);
  if (!o.save_dir.empty()) save_run(o.save_dir, requests, batched, c.vocab);
  uint64_t digest = 1469598103934665603ull;  // FNV-1a over every request's tokens, in id order
  for (const auto& [id, tokens] : batched.tokens) {
    for (int32_t t : tokens) digest = (digest ^ uint64_t(uint32_t(t))) * 1099511628211ull;
  }
  std::printf("tokens digest: %016llx\n", (unsigned long long)digest);
  if (!o.check) return 0;
  // The step-by-step reference: one request at a time, one token a step.
  serve::EngineOptions one = eo;
  one.max_running = 1, one.max_step_tokens = 1;
  const RunSummary reference = serve_all(c, weights, o, one, device, requests, false);
  int64_t differ = 0;
  for (const auto& [id, tokens] : reference.tokens) {
    if (batched.tokens.at(id) != tokens) {
      ++differ;
      std::printf("request %lld: batched and step-by-step tokens differ\n", (long long)id);
    }
  }
  std::printf("check: %zu requests, %lld differ from the step-by-step reference\n", reference.tokens.size(),
              (long long)differ);
  return differ == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "serve: %s\n", e.what());
    return 2;
  } catch (const std::logic_error& e) {  // bad flags and requests
    std::fprintf(stderr,
                 "serve: %s\nusage: serve [--preset tiny|1b | --config config.json] [--weights file.safetensors] "
                 "[--save dir] [--dtype f32|f16|bf16] [--requests N] [--prompt-min N] [--prompt-max N] "
                 "[--max-new N] [--chunk N] [--max-running N] [--block-size N] [--top-p] [--fp8-linear] "
                 "[--fp8-kv] [--kv-scale X] [--seed N] [--check]\n",
                 e.what());
    return 1;
  } catch (const std::runtime_error& e) {  // files
    std::fprintf(stderr, "serve: %s\n", e.what());
    return 2;
  }
}
