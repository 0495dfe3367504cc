// A CUDA thread of the emulator: a function run on its own stack, switched to and from the
// scheduler explicitly (ucontext, annotated for AddressSanitizer), so that thousands of threads
// interleave deterministically on one host thread.
#pragma once

#include <cstddef>
#include <ucontext.h>

namespace scanforge::gpu {

class Fiber {
 public:
  using Body = void (*)(void *argument);

  explicit Fiber(size_t stackBytes);
  ~Fiber();
  Fiber(const Fiber &) = delete;
  Fiber &operator=(const Fiber &) = delete;

  // Prepares the fiber to run body(argument) from the start of its stack (also after an earlier
  // body finished or was abandoned).
  void start(Body body, void *argument);
  // Runs the fiber until it yields or its body returns; called by the scheduler.
  void resume();
  // Called on the fiber: returns to the scheduler's resume().
  void yield();
  bool finished() const { return finished_; }
  bool onStack(const void *address) const {
    return static_cast<const char *>(address) >= stack_ && static_cast<const char *>(address) < stack_ + bytes_;
  }

 private:
  static void trampoline(unsigned high, unsigned low);

  char *stack_;
  size_t bytes_;
  ucontext_t context_{}, caller_{};
  Body body_ = nullptr;
  void *argument_ = nullptr;
  bool finished_ = true;
  const void *callerStack_ = nullptr;  // AddressSanitizer's view of the scheduler's stack
  size_t callerStackBytes_ = 0;
};

}  // namespace scanforge::gpu
