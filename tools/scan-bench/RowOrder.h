// scan-bench --row-order: the rate at which one thread reads a [T, D] tensor's rows in each of
// the four orders a scan's loops can take (docs/cpu.md, "Reverse scans").
#pragma once

#include <cstdint>

namespace scanforge::bench {

// Reads a 256 MiB tensor of rows of `channels` floats, rows ascending or descending and each row
// ascending or descending, and prints the best of `repeats` reads of each order in GB/s.
void rowOrderRates(int64_t channels, int repeats);

}  // namespace scanforge::bench
