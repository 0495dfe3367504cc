// Backend exceptions as Python exceptions: torch turns a c10::ValueError into ValueError, a
// c10::TypeError into TypeError and any other c10::Error into RuntimeError.
#pragma once

#include <c10/util/Exception.h>

#include <string>

namespace scanforge::torchext {

// Runs `body`; an exception `From` it throws becomes `To` (a c10 error type), with `prefix` before
// its message.
template <class From, class To, class F>
auto translated(const std::string &prefix, F body) {
  try {
    return body();
  } catch (const From &e) {
    throw To({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, prefix + e.what());
  }
}

}  // namespace scanforge::torchext
