#include "common/model_config.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace examples {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("model config: " + what); }

template <class T>
T required(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) fail(fmt::format("no \"{}\"", key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    fail(fmt::format("\"{}\" is {}, not a {}", key, j.at(key).dump(),
                     std::is_same_v<T, std::string> ? "string" : "number"));
  }
}

template <class T>
T optional(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  return required<T>(j, key);
}

int64_t positive(const nlohmann::json& j, const char* key) {
  const int64_t v = required<int64_t>(j, key);
  if (v <= 0) fail(fmt::format("\"{}\" must be positive, got {}", key, v));
  return v;
}

xhal::ops::RopeScaling rope_scaling_of(const nlohmann::json& j, int64_t max_position) {
  using Type = xhal::ops::RopeScaling::Type;
  xhal::ops::RopeScaling s;
  if (!j.contains("rope_scaling") || j.at("rope_scaling").is_null()) return s;
  const nlohmann::json& r = j.at("rope_scaling");
  if (!r.is_object()) fail("\"rope_scaling\" is not an object");
  // Transformers names the kind "rope_type"; older configs "type".
  const std::string type =
      r.contains("rope_type") ? required<std::string>(r, "rope_type") : required<std::string>(r, "type");
  if (type == "default") return s;
  if (type == "linear") {
    s.type = Type::linear;
  } else if (type == "llama3") {
    s.type = Type::llama3;
  } else if (type == "yarn") {
    s.type = Type::yarn;
  } else {
    fail(fmt::format("rope_scaling type \"{}\" is not one of default, linear, llama3, yarn", type));
  }
  s.factor = required<double>(r, "factor");
  if (!(s.factor > 0)) fail(fmt::format("rope_scaling factor must be positive, got {}", s.factor));
  s.original_max_position = optional<int64_t>(r, "original_max_position_embeddings", max_position);
  s.low_freq_factor = optional<double>(r, "low_freq_factor", s.low_freq_factor);
  s.high_freq_factor = optional<double>(r, "high_freq_factor", s.high_freq_factor);
  s.beta_fast = optional<double>(r, "beta_fast", s.beta_fast);
  s.beta_slow = optional<double>(r, "beta_slow", s.beta_slow);
  s.attention_factor = optional<double>(r, "attention_factor", s.attention_factor);
  return s;
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("not JSON: {}", e.what()));
  }
  if (!j.is_object()) fail("not a JSON object");
  ModelConfig c;
  c.model_type = optional<std::string>(j, "model_type", "llama");
  c.hidden = positive(j, "hidden_size");
  c.intermediate = positive(j, "intermediate_size");
  c.layers = positive(j, "num_hidden_layers");
  c.heads = positive(j, "num_attention_heads");
  c.kv_heads = optional<int64_t>(j, "num_key_value_heads", c.heads);
  c.vocab = positive(j, "vocab_size");
  c.max_position = optional<int64_t>(j, "max_position_embeddings", 4096);
  c.head_dim = optional<int64_t>(j, "head_dim", c.hidden / c.heads);
  c.rms_norm_eps = optional<double>(j, "rms_norm_eps", c.rms_norm_eps);
  c.rope_theta = optional<double>(j, "rope_theta", c.rope_theta);
  c.tie_word_embeddings = optional<bool>(j, "tie_word_embeddings", false);
  c.attention_bias = optional<bool>(j, "attention_bias", c.model_type == "qwen2");
  if (c.kv_heads <= 0 || c.heads % c.kv_heads != 0) {
    fail(fmt::format("num_attention_heads ({}) must be a positive multiple of num_key_value_heads ({})", c.heads,
                     c.kv_heads));
  }
  if (c.head_dim <= 0 || c.head_dim % 2 != 0)
    fail(fmt::format("head_dim must be positive and even, got {}", c.head_dim));
  if (c.max_position <= 0) fail(fmt::format("max_position_embeddings must be positive, got {}", c.max_position));
  if (!(c.rms_norm_eps > 0) || !(c.rope_theta > 1)) fail("rms_norm_eps must be positive and rope_theta above 1");
  c.rope_scaling = rope_scaling_of(j, c.max_position);
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("model config '{}': cannot open it", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return parse_model_config(text.str());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{} (in '{}')", e.what(), path));
  }
}

std::string model_config_json(const ModelConfig& c) {
  nlohmann::json j = {{"model_type", c.model_type},
                      {"hidden_size", c.hidden},
                      {"intermediate_size", c.intermediate},
                      {"num_hidden_layers", c.layers},
                      {"num_attention_heads", c.heads},
                      {"num_key_value_heads", c.kv_heads},
                      {"head_dim", c.head_dim},
                      {"vocab_size", c.vocab},
                      {"max_position_embeddings", c.max_position},
                      {"rms_norm_eps", c.rms_norm_eps},
                      {"rope_theta", c.rope_theta},
                      {"tie_word_embeddings", c.tie_word_embeddings},
                      {"attention_bias", c.attention_bias}};
  using Type = xhal::ops::RopeScaling::Type;
  const xhal::ops::RopeScaling& r = c.rope_scaling;
  if (r.type != Type::none) {
    nlohmann::json s = {{"rope_type", r.type == Type::linear   ? "linear"
                                      : r.type == Type::llama3 ? "llama3"
                                                               : "yarn"},
                        {"factor", r.factor}};
    if (r.type != Type::linear) s["original_max_position_embeddings"] = r.original_max_position;
    if (r.type == Type::llama3) s["low_freq_factor"] = r.low_freq_factor, s["high_freq_factor"] = r.high_freq_factor;
    if (r.type == Type::yarn) {
      s["beta_fast"] = r.beta_fast, s["beta_slow"] = r.beta_slow;
      if (r.attention_factor != 0) s["attention_factor"] = r.attention_factor;
    }
    j["rope_scaling"] = s;
  }
  return j.dump(2);
}

}  // namespace examples
