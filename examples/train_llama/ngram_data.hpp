// Synthetic training data with structure a model can learn: sequences from a fixed random bigram
// model in which each token has kSuccessors equally likely successors. Its entropy per token is
// log(kSuccessors), against log(vocab) for a model that has learnt nothing, so the loss a
// trained model reaches is known in advance. Seeded: every run (and every device) sees the same
// batches.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace train_llama {

class NgramData {
 public:
  static constexpr int kSuccessors = 4;

  NgramData(int64_t vocab, uint64_t seed) : vocab_(vocab), rng_(seed) {
    std::mt19937_64 table_rng(seed ^ 0x9e3779b97f4a7c15ull);
    successors_.resize(size_t(vocab * kSuccessors));
    for (auto& s : successors_) s = int32_t(table_rng() % uint64_t(vocab));
  }

  // The lowest loss a model can reach on this data: the bigram model's entropy per token.
  static double entropy() { return std::log(double(kSuccessors)); }

  // A batch of `batch` sequences of seq + 1 tokens: inputs are tokens [0, seq) of each, labels
  // tokens [1, seq + 1), both flattened to batch * seq.
  void next_batch(int64_t batch, int64_t seq, std::vector<int32_t>* inputs, std::vector<int32_t>* labels) {
    inputs->clear();
    labels->clear();
    for (int64_t b = 0; b < batch; ++b) {
      int32_t token = int32_t(rng_() % uint64_t(vocab_));
      for (int64_t t = 0; t < seq; ++t) {
        const int32_t next = successors_[size_t(token * kSuccessors + int64_t(rng_() % kSuccessors))];
        inputs->push_back(token);
        labels->push_back(next);
        token = next;
      }
    }
  }

 private:
  int64_t vocab_;
  std::mt19937_64 rng_;
  std::vector<int32_t> successors_;
};

}  // namespace train_llama
