// Character-level language-modelling data from a UTF-8 text file (paper 000's Shakespeare task).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/data/SequenceBatch.h"
#include "runtime/core/Random.h"

namespace scanforge::tasks {

enum class Split { Train, Test };

class CharDataset {
 public:
  // The vocabulary is the text's distinct characters (Unicode code points) in increasing order. The
  // first floor(0.9 N) characters train and the remaining ones test: for tinyshakespeare.txt
  // (N = 1,115,394) exactly the papers' 1,003,854 and 111,540.
  static CharDataset fromFile(const std::string &path);
  static CharDataset fromText(std::string_view utf8, const std::string &sourceName = "<text>");

  int64_t vocabSize() const { return static_cast<int64_t>(vocabulary_.size()); }
  const std::vector<char32_t> &vocabulary() const { return vocabulary_; }
  const std::vector<int64_t> &tokens(Split split) const { return split == Split::Train ? train_ : test_; }

  std::vector<int64_t> encode(std::string_view utf8) const;  // every character must be in the vocabulary
  std::string decode(std::span<const int64_t> ids) const;

  // `batch` windows of steps + 1 consecutive tokens of the split, each starting at a uniformly
  // random position: inputs = window[0 : steps], targets = window[1 : steps + 1], both i64
  // [batch, steps].
  SequenceBatch sampleBatch(Split split, int64_t batch, int64_t steps, Generator &gen) const;

 private:
  std::string source_;
  std::vector<char32_t> vocabulary_;
  std::unordered_map<char32_t, int64_t> ids_;
  std::vector<int64_t> train_, test_;
};

}  // namespace scanforge::tasks
