// SHA-256 (FIPS 180-4), for kernel-cache keys and entry checksums.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace scanforge::cuda {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view data);
std::string hex(const Sha256Digest &digest);

}  // namespace scanforge::cuda
