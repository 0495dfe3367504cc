// A CUDA thread of the emulator: a function run on its own stack, switched to and from the
// scheduler explicitly (annotated for AddressSanitizer), so that thousands of threads interleave
// deterministically on one host thread. On x86-64 the switch saves the callee-saved registers
// itself (ucontext's swapcontext makes a system call per switch, a third of the emulator's time);
// elsewhere it is ucontext.
#pragma once

#include <cstddef>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

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
  static void run(Fiber *self);
  void switchTo(bool toFiber);

  char *stack_;
  size_t bytes_;
#if defined(__x86_64__)
  void *sp_ = nullptr, *callerSp_ = nullptr;
#else
  static void trampoline(unsigned high, unsigned low);
  ucontext_t context_{}, caller_{};
#endif
  Body body_ = nullptr;
  void *argument_ = nullptr;
  bool finished_ = true;  // or never started
  const void *callerStack_ = nullptr;  // AddressSanitizer's view of the scheduler's stack
  size_t callerStackBytes_ = 0;
};

}  // namespace scanforge::gpu
