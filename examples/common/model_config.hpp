// A decoder model's shape from a Hugging Face config.json (Llama 2/3/3.1 and Qwen2 families): the
// fields a serving or training example needs, checked, with rope scaling as xhal's RopeScaling.
#pragma once

#include <cstdint>
#include <string>

#include "xhal/ops.hpp"

namespace examples {

struct ModelConfig {
  std::string model_type;  // "llama", "qwen2", ...
  int64_t hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  int64_t max_position = 0;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  xhal::ops::RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q, k and v projections with a bias (Qwen2's, or "attention_bias")
};

// Parses the text of a config.json; throws std::runtime_error naming the field that is missing,
// of the wrong type or out of range (heads not a multiple of kv_heads, an unknown rope type, ...).
ModelConfig parse_model_config(const std::string& json_text);
// Reads and parses a config.json file; errors name the file.
ModelConfig load_model_config(const std::string& path);
// The config as config.json text with the Hugging Face names parse_model_config reads.
std::string model_config_json(const ModelConfig& c);

}  // namespace examples
