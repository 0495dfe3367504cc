// The one exception type of the runtime. Its message reads "<op>: <cause>": the operation the user
// called (e.g. "linear", "safetensors read 'run/ckpt.safetensors'") and a cause that names the
// shapes, dtypes or values at fault, so that an error is fixable without a debugger.
#pragma once

#include <stdexcept>
#include <string>

namespace scanforge {

class RuntimeError : public std::runtime_error {
 public:
  RuntimeError(std::string op, const std::string &cause)
      : std::runtime_error(op + ": " + cause), op_(std::move(op)) {}

  // The operation that failed, without the cause.
  const std::string &op() const { return op_; }

 private:
  std::string op_;
};

}  // namespace scanforge
