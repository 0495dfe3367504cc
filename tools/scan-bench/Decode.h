// scan-bench --decode: per-token latency of the decoding path (Recurrence::step).
#pragma once

#include <string>
#include <vector>

namespace scanforge::bench {

// Times `tokens` steps of the recurrence at models/<model>.scan with every dimension `channels`
// wide, at each batch size, and prints a table: the median and best microseconds per token and
// the C++ heap allocations per step after the first (operator new calls, libHalide's included).
void decodeLatency(const std::string &scanFile, int64_t channels, const std::vector<int64_t> &batches, int64_t tokens);

}  // namespace scanforge::bench
