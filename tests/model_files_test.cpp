// The examples' model files: safetensors written and read back (dtypes, shapes, bytes, metadata),
// files the reader must refuse with a message naming the problem, and Hugging Face config.json
// files of the Llama 3.1 and Qwen2 families.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/model_config.hpp"
#include "common/safetensors.hpp"

namespace {

using examples::SafeTensorsFile;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("xhal_model_files_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::vector<std::byte> bytes_of(const void* p, size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  return {b, b + n};
}

// A file of an 8-byte length, `header` and `data` as given (for files a writer would not make).
std::string raw_file(const std::string& name, const std::string& header, size_t data_bytes, uint64_t length = 0) {
  const std::string path = temp_path(name);
  std::ofstream out(path, std::ios::binary);
  if (length == 0) length = header.size();
  for (int i = 0; i < 8; ++i) out.put(char(length >> (8 * i) & 0xFF));
  out << header << std::string(data_bytes, '\0');
  return path;
}

// The message SafeTensorsFile(path) throws ("" when it opens).
std::string refusal(const std::string& path) {
  try {
    SafeTensorsFile file(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(SafeTensors, RoundTrip) {
  const uint16_t bf16[6] = {0x3F80, 0x4000, 0xBF80, 0x0000, 0x7F80, 0x4040};
  const float f32[4] = {1.5f, -2.0f, 0.25f, 1e30f};
  const std::string path = temp_path("round_trip.safetensors");
  examples::write_safetensors(path,
                              {{"layers.0.weight", xhal::DType::bf16, {2, 3}, bytes_of(bf16, sizeof bf16)},
                               {"norm", xhal::DType::f32, {4}, bytes_of(f32, sizeof f32)},
                               {"empty", xhal::DType::i64, {0, 7}, {}}},
                              {{"format", "pt"}});
  const SafeTensorsFile file(path);
  ASSERT_EQ(file.tensors().size(), 3u);
  const auto& w = file.at("layers.0.weight");
  EXPECT_EQ(w.dtype, xhal::DType::bf16);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(w.bytes, sizeof bf16);
  EXPECT_EQ(std::memcmp(w.data, bf16, sizeof bf16), 0);
  const auto& n = file.at("norm");
  EXPECT_EQ(n.dtype, xhal::DType::f32);
  ASSERT_EQ(n.bytes, sizeof f32);
  EXPECT_EQ(std::memcmp(n.data, f32, sizeof f32), 0);
  EXPECT_EQ(file.at("empty").bytes, 0u);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  // The header is padded to a multiple of 8 bytes, so the data section starts 8-byte aligned.
  std::ifstream raw(path, std::ios::binary);
  unsigned char length[8] = {};
  raw.read(reinterpret_cast<char*>(length), 8);
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | length[i];
  EXPECT_EQ(header_bytes % 8, 0u);
  EXPECT_EQ(n.data - w.data, 12) << "the tensors in the order written: norm right after the weight's 12 bytes";
  EXPECT_FALSE(file.contains("missing"));
  try {
    (void)file.at("missing");
    FAIL() << "at() of a missing tensor";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor 'missing'"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(SafeTensors, RefusesBadFiles) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(refusal(raw_file("ok", ok, 8)), "");
  struct Bad {
    std::string name, header;
    size_t data_bytes;
    uint64_t length;
    std::string expected;  // part of the message
  };
  const std::vector<Bad> cases = {
      {"header_past_end", ok, 8, 1u << 20, "a header of 1048576 bytes"},
      {"not_json", "{not json", 0, 0, "not JSON"},
      {"size_mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, 0, "8 bytes for a shape of 12"},
      {"past_data", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8, 0, "within the 8 data bytes"},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       8, 0, "overlap"},
      {"trailing", ok, 12, 0, "4 data bytes after the last tensor"},
      {"fp8", R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", 8, 0, "'F8_E4M3'"},
      {"no_shape", R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8, 0, "tensor 'a'"},
      {"negative", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, 0, "tensor 'a'"},
  };
  for (const Bad& b : cases) {
    const std::string path = raw_file(b.name, b.header, b.data_bytes, b.length);
    const std::string message = refusal(path);
    EXPECT_NE(message.find(b.expected), std::string::npos) << b.name << ": " << message;
    EXPECT_NE(message.find(path), std::string::npos) << b.name << ": the message names the file: " << message;
    std::remove(path.c_str());
  }
  const std::string short_path = temp_path("short");
  std::ofstream(short_path, std::ios::binary) << "abc";
  EXPECT_NE(refusal(short_path).find("shorter than the 8-byte header length"), std::string::npos);
  std::remove(short_path.c_str());
  EXPECT_NE(refusal(temp_path("does_not_exist")).find("No such file"), std::string::npos);
}

TEST(ModelConfig, Llama31AndQwen2) {
  const examples::ModelConfig llama = examples::parse_model_config(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": false,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}})");
  EXPECT_EQ(llama.hidden, 4096);
  EXPECT_EQ(llama.kv_heads, 8);
  EXPECT_EQ(llama.head_dim, 128);
  EXPECT_EQ(llama.vocab, 128256);
  EXPECT_EQ(llama.rope_scaling.type, xhal::ops::RopeScaling::Type::llama3);
  EXPECT_EQ(llama.rope_scaling.factor, 8.0);
  EXPECT_EQ(llama.rope_scaling.original_max_position, 8192);
  EXPECT_FALSE(llama.attention_bias);
  EXPECT_FALSE(llama.tie_word_embeddings);

  const examples::ModelConfig qwen = examples::parse_model_config(R"({
    "model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
    "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
    "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "tie_word_embeddings": true, "rope_scaling": null})");
  EXPECT_EQ(qwen.head_dim, 64);
  EXPECT_TRUE(qwen.attention_bias);
  EXPECT_TRUE(qwen.tie_word_embeddings);
  EXPECT_EQ(qwen.rope_scaling.type, xhal::ops::RopeScaling::Type::none);
}

// model_config_json writes what parse_model_config reads back, rope scaling included.
TEST(ModelConfig, WritesWhatItReads) {
  examples::ModelConfig c;
  c.model_type = "llama", c.hidden = 2048, c.intermediate = 8192, c.layers = 16, c.heads = 32, c.kv_heads = 8;
  c.head_dim = 64, c.vocab = 128256, c.max_position = 131072, c.rms_norm_eps = 1e-5, c.rope_theta = 500000.0;
  c.rope_scaling = {xhal::ops::RopeScaling::Type::llama3, 32.0, 8192, 1.0, 4.0};
  c.tie_word_embeddings = true;
  const examples::ModelConfig back = examples::parse_model_config(examples::model_config_json(c));
  EXPECT_EQ(back.hidden, c.hidden);
  EXPECT_EQ(back.intermediate, c.intermediate);
  EXPECT_EQ(back.layers, c.layers);
  EXPECT_EQ(back.heads, c.heads);
  EXPECT_EQ(back.kv_heads, c.kv_heads);
  EXPECT_EQ(back.head_dim, c.head_dim);
  EXPECT_EQ(back.vocab, c.vocab);
  EXPECT_EQ(back.rope_theta, c.rope_theta);
  EXPECT_TRUE(back.tie_word_embeddings);
  EXPECT_FALSE(back.attention_bias);
  EXPECT_EQ(back.rope_scaling.type, xhal::ops::RopeScaling::Type::llama3);
  EXPECT_EQ(back.rope_scaling.factor, 32.0);
  EXPECT_EQ(back.rope_scaling.original_max_position, 8192);
  EXPECT_EQ(back.rope_scaling.high_freq_factor, 4.0);
}

TEST(ModelConfig, RefusesWhatItCannotRun) {
  const std::string base = R"("hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "vocab_size": 100)";
  const std::pair<std::string, std::string> cases[] = {
      {"{" + base + R"(, "num_attention_heads": 8, "num_key_value_heads": 3})", "multiple of num_key_value_heads (3)"},
      {"{" + base + R"(, "num_attention_heads": 4, "rope_scaling": {"type": "dynamic", "factor": 2.0}})",
       "\"dynamic\""},
      {R"({"intermediate_size": 512, "num_hidden_layers": 2, "vocab_size": 100, "num_attention_heads": 4})",
       "no \"hidden_size\""},
      {"{" + base + R"(, "num_attention_heads": "four"})", "\"num_attention_heads\" is \"four\""},
      {"[1, 2]", "not a JSON object"},
  };
  for (const auto& [text, expected] : cases) {
    try {
      (void)examples::parse_model_config(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
