// The message of the RuntimeError that `f` throws (a test failure if it throws none).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "runtime/core/Error.h"

namespace scanforge::test {

template <class F>
std::string errorOf(F f) {
  try {
    f();
  } catch (const RuntimeError &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a RuntimeError";
  return "";
}

}  // namespace scanforge::test
