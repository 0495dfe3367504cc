#include "models/data/CharDataset.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "runtime/core/Error.h"

namespace scanforge::tasks {

namespace {

// Strict UTF-8 decoding: rejects stray continuation bytes, truncated sequences, overlong forms,
// surrogates and code points above U+10FFFF, naming the byte offset.
std::vector<char32_t> decodeUtf8(std::string_view text, const std::string &op) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    int extra = byte < 0x80 ? 0 : (byte >> 5) == 0x6 ? 1 : (byte >> 4) == 0xE ? 2 : (byte >> 3) == 0x1E ? 3 : -1;
    if (extra < 0) throw RuntimeError(op, "invalid UTF-8 at byte " + std::to_string(i));
    if (text.size() - i <= static_cast<size_t>(extra))
      throw RuntimeError(op, "truncated UTF-8 sequence at byte " + std::to_string(i));
    char32_t cp = extra == 0 ? byte : byte & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      auto cont = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
      if ((cont & 0xC0) != 0x80) throw RuntimeError(op, "invalid UTF-8 at byte " + std::to_string(i));
      cp = (cp << 6) | (cont & 0x3F);
    }
    static constexpr char32_t kMinimum[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMinimum[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      throw RuntimeError(op, "invalid UTF-8 at byte " + std::to_string(i));
    out.push_back(cp);
    i += static_cast<size_t>(extra) + 1;
  }
  return out;
}

void appendUtf8(std::string &out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string codePointName(char32_t cp) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "U+%04X", static_cast<unsigned>(cp));
  return buffer;
}

}  // namespace

CharDataset CharDataset::fromFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RuntimeError("CharDataset", "cannot open '" + path + "': " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw RuntimeError("CharDataset", "error while reading '" + path + "'");
  return fromText(text, path);
}

CharDataset CharDataset::fromText(std::string_view utf8, const std::string &sourceName) {
  std::string op = "CharDataset '" + sourceName + "'";
  std::vector<char32_t> chars = decodeUtf8(utf8, op);
  size_t trainSize = chars.size() * 9 / 10;  // floor(0.9 N), exactly
  if (trainSize == 0 || trainSize == chars.size())
    throw RuntimeError(op, "needs at least 2 characters so that both splits are non-empty, got " +
                               std::to_string(chars.size()));
  CharDataset data;
  data.source_ = sourceName;
  std::set<char32_t> distinct(chars.begin(), chars.end());
  data.vocabulary_.assign(distinct.begin(), distinct.end());
  for (size_t id = 0; id < data.vocabulary_.size(); ++id) data.ids_[data.vocabulary_[id]] = static_cast<int64_t>(id);
  std::vector<int64_t> all(chars.size());
  std::transform(chars.begin(), chars.end(), all.begin(), [&](char32_t c) { return data.ids_.at(c); });
  data.train_.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(trainSize));
  data.test_.assign(all.begin() + static_cast<std::ptrdiff_t>(trainSize), all.end());
  return data;
}

std::vector<int64_t> CharDataset::encode(std::string_view utf8) const {
  std::string op = "CharDataset::encode";
  std::vector<int64_t> ids;
  for (char32_t c : decodeUtf8(utf8, op)) {
    auto it = ids_.find(c);
    if (it == ids_.end())
      throw RuntimeError(op, "character " + codePointName(c) + " is not in the vocabulary of '" + source_ + "'");
    ids.push_back(it->second);
  }
  return ids;
}

std::string CharDataset::decode(std::span<const int64_t> ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocabSize())
      throw RuntimeError("CharDataset::decode", "id " + std::to_string(id) + " is outside the vocabulary of " +
                                                    std::to_string(vocabSize()) + " characters");
    appendUtf8(out, vocabulary_[static_cast<size_t>(id)]);
  }
  return out;
}

SequenceBatch CharDataset::sampleBatch(Split split, int64_t batch, int64_t steps, Generator &gen) const {
  const char *op = "CharDataset::sampleBatch";
  const std::vector<int64_t> &source = tokens(split);
  int64_t n = static_cast<int64_t>(source.size());
  if (batch < 1 || steps < 1)
    throw RuntimeError(op, "needs batch >= 1 and steps >= 1, got " + std::to_string(batch) + " and " + std::to_string(steps));
  if (steps + 1 > n)
    throw RuntimeError(op, std::string(split == Split::Train ? "the train" : "the test") + " split of '" + source_ + "' has " +
                               std::to_string(n) + " characters, fewer than a window of steps + 1 = " +
                               std::to_string(steps + 1));
  SequenceBatch out{Tensor::empty({batch, steps}, DType::I64), Tensor::empty({batch, steps}, DType::I64)};
  int64_t *inputs = out.inputs.data<int64_t>(), *targets = out.targets.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t *window = source.data() + gen.uniformInt(n - steps);
    std::copy_n(window, steps, inputs + b * steps);
    std::copy_n(window + 1, steps, targets + b * steps);
  }
  return out;
}

}  // namespace scanforge::tasks
