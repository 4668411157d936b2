// A serving engine over xhal ops: requests of different prompt lengths share each step's batch
// (continuous batching: they join when the KV cache has room for them and leave when done),
// prompts are fed in chunks mixed with other requests' decode tokens (chunked prefill, one
// paged_prefill call for all of them), the KV cache is paged (blocks reserved for a request's whole
// length when it joins, freed when it finishes; no preemption), and each request samples with its
// own settings and seed (greedy, temperature, top-p).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/model_config.hpp"
#include "weights.hpp"
#include "xhal/xhal.hpp"

namespace serve {

struct Sampling {
  float temperature = 0.0f;  // 0: greedy
  float top_p = 1.0f;
  uint64_t seed = 0;
};

struct Request {
  int64_t id = 0;
  std::vector<int32_t> prompt;  // at least one token
  int64_t max_new_tokens = 16;
  Sampling sampling;
};

struct EngineOptions {
  int64_t block_size = 16;
  int64_t num_blocks = 1024;  // KV cache blocks of every layer
  int64_t max_running = 64;  // requests in a step at most
  int64_t max_step_tokens = 512;  // decode tokens plus prefill chunks in a step at most
  int64_t max_context = 4096;  // prompt plus new tokens of a request at most (the RoPE table's length)
  // The layers' matrices through linear_fp8 (weights' codes from quantize_to_fp8, activations
  // quantized to e4m3 a scale a token before each one).
  bool fp8_linear = false;
  // The KV cache as f8_e4m3 codes with one scale for keys and values of every layer (vLLM's
  // default without calibration is 1): half the cache's bytes, which decode reads every step.
  bool fp8_kv_cache = false;
  float kv_scale = 1.0f;
};

struct StepStats {
  double seconds = 0;  // wall time of the step, its tokens back on the host
  int64_t prefill_tokens = 0, decode_tokens = 0, requests = 0;
};

class Engine {
 public:
  Engine(const examples::ModelConfig& config, Weights weights, xhal::DType dtype, const EngineOptions& options,
         xhal::Device device);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request; throws std::invalid_argument for one that can never run (empty prompt, longer
  // than max_context, more blocks than the cache has).
  void add(const Request& request);
  bool idle() const;
  // One step: admit, batch, forward, sample; returns what it did (nothing when idle).
  StepStats step();
  // Each finished request's generated tokens, by id.
  const std::map<int64_t, std::vector<int32_t>>& finished() const;
  // The logits the last step sampled from ([requests sampled, vocab], f32 on the host), for
  // comparisons with another implementation.
  std::vector<float> last_logits() const;
  // The requests the last step sampled for, in the order of last_logits' rows, and how many tokens
  // each had generated before it (0: the row is its prompt's last, its first token's logits).
  std::vector<std::pair<int64_t, int64_t>> last_sampled() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The FLOPs (2 per multiply-add) of a forward pass over `tokens` new tokens whose attention reaches
// `attended_keys` keys in total (the sum over tokens of the keys each sees), `sampled` of them
// through the lm head.
double forward_flops(const examples::ModelConfig& c, int64_t tokens, double attended_keys, int64_t sampled);

}  // namespace serve
