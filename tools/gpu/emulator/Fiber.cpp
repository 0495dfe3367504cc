#include "tools/gpu/emulator/Fiber.h"

#include <sys/mman.h>

#include <cstdint>
#include <stdexcept>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define SF_ASAN 1
#else
#define SF_ASAN 0
#endif

namespace scanforge::gpu {

namespace {
// AddressSanitizer keeps shadow state per stack; it must hear of every switch.
void startSwitch(void **fakeStack, const void *bottom, size_t bytes) {
#if SF_ASAN
  __sanitizer_start_switch_fiber(fakeStack, bottom, bytes);
#else
  (void)fakeStack, (void)bottom, (void)bytes;
#endif
}
void finishSwitch(void *fakeStack, const void **bottom, size_t *bytes) {
#if SF_ASAN
  __sanitizer_finish_switch_fiber(fakeStack, bottom, bytes);
#else
  (void)fakeStack, (void)bottom, (void)bytes;
#endif
}
}  // namespace

Fiber::Fiber(size_t stackBytes) : bytes_(stackBytes) {
  void *memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) throw std::runtime_error("the emulator cannot map a thread stack");
  stack_ = static_cast<char *>(memory);
}

Fiber::~Fiber() {
#if SF_ASAN
  __asan_unpoison_memory_region(stack_, bytes_);
#endif
  munmap(stack_, bytes_);
}

void Fiber::start(Body body, void *argument) {
#if SF_ASAN
  __asan_unpoison_memory_region(stack_, bytes_);  // frames of an abandoned body
#endif
  body_ = body;
  argument_ = argument;
  finished_ = false;
  getcontext(&context_);
  context_.uc_stack.ss_sp = stack_;
  context_.uc_stack.ss_size = bytes_;
  context_.uc_link = nullptr;
  auto self = reinterpret_cast<uintptr_t>(this);
  makecontext(&context_, reinterpret_cast<void (*)()>(&Fiber::trampoline), 2, static_cast<unsigned>(self >> 32),
              static_cast<unsigned>(self & 0xffffffffu));
}

void Fiber::trampoline(unsigned high, unsigned low) {
  auto *self = reinterpret_cast<Fiber *>((static_cast<uintptr_t>(high) << 32) | low);
  finishSwitch(nullptr, &self->callerStack_, &self->callerStackBytes_);
  self->body_(self->argument_);
  self->finished_ = true;
  startSwitch(nullptr, self->callerStack_, self->callerStackBytes_);  // this stack is done
  setcontext(&self->caller_);
}

void Fiber::resume() {
  void *fake = nullptr;
  startSwitch(&fake, stack_, bytes_);
  swapcontext(&caller_, &context_);
  finishSwitch(fake, nullptr, nullptr);
}

void Fiber::yield() {
  void *fake = nullptr;
  startSwitch(&fake, callerStack_, callerStackBytes_);
  swapcontext(&context_, &caller_);
  finishSwitch(fake, &callerStack_, &callerStackBytes_);
}

}  // namespace scanforge::gpu
