// The copying task (paper 002; Arjovsky et al. 2016) and the selective copying task (paper 000,
// App. C.3; Gu & Dao 2024), generated the way the Mamba/S4 reference generator does.
//
// Tokens 0 .. vocab-1: 0 is the blank (noise) token, 1 .. vocab-2 are data tokens, vocab-1 is the
// marker that asks for the next remembered token. A sequence has blankLength + 2 * dataTokens steps:
//   copying:            [M data tokens] [T blanks] [M markers]
//   selective copying:  [M data tokens at random sorted positions among M + T steps, blanks elsewhere] [M markers]
// The targets are the M data tokens, in order, at the M marker steps, and kIgnoreIndex elsewhere,
// so crossEntropy(logits, targets) scores exactly the recalled tokens.
#pragma once

#include <cstdint>

#include "models/data/SequenceBatch.h"
#include "runtime/core/Random.h"

namespace scanforge::tasks {

struct CopyTaskConfig {
  int64_t vocab = 16;
  int64_t dataTokens = 16;    // M
  int64_t blankLength = 500;  // T
  bool selective = true;

  int64_t length() const { return blankLength + 2 * dataTokens; }

  // Paper 002: N = 10 tokens, M = 10, T = 500 (520 steps); it also runs T = 1000 and 2000.
  static CopyTaskConfig copying(int64_t blankLength = 500);
  // Paper 000 (after Mamba): vocabulary 16, 16 data tokens, 4096 steps in all. Paper 002 uses
  // blankLength 500, 1000 and 2000.
  static CopyTaskConfig selectiveCopying(int64_t blankLength = 4096 - 2 * 16);
};

// inputs and targets: i64 [batch, config.length()].
SequenceBatch sampleCopyTask(const CopyTaskConfig &config, int64_t batch, Generator &gen);

}  // namespace scanforge::tasks
