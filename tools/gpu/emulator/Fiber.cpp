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

#if defined(__x86_64__)
// sf_fiber_switch(save, next): pushes the callee-saved registers and the SSE/x87 control words,
// stores the stack pointer in *save, and pops the same from `next`. sf_fiber_entry is where a new
// fiber's first switch returns to: it calls r13(r12).
extern "C" void sf_fiber_switch(void **save, void *next);
asm(R"(
  .text
  .globl sf_fiber_switch
  .type sf_fiber_switch, @function
sf_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size sf_fiber_switch, .-sf_fiber_switch
  .globl sf_fiber_entry
  .type sf_fiber_entry, @function
sf_fiber_entry:
  movq %r12, %rdi
  callq *%r13
  ud2
  .size sf_fiber_entry, .-sf_fiber_entry
)");
extern "C" void sf_fiber_entry();

void Fiber::start(Body body, void *argument) {
#if SF_ASAN
  // A body that returned has unpoisoned its frames; one abandoned midway has not.
  if (!finished_) __asan_unpoison_memory_region(stack_, bytes_);
#endif
  body_ = body;
  argument_ = argument;
  finished_ = false;
  // The frame sf_fiber_switch pops: control words, r15, r14, r13, r12, rbx, rbp, return address;
  // 16-byte aligned so that sf_fiber_entry's call sees an aligned stack.
  auto top = reinterpret_cast<uintptr_t>(stack_ + bytes_) & ~uintptr_t{15};
  auto *frame = reinterpret_cast<uint64_t *>(top - 80);
  frame[0] = 0x1f80 | (uint64_t{0x037f} << 32);  // MXCSR and x87 control word defaults
  frame[1] = frame[2] = 0;                         // r15, r14
  frame[3] = reinterpret_cast<uint64_t>(&Fiber::run);
  frame[4] = reinterpret_cast<uint64_t>(this);
  frame[5] = frame[6] = 0;  // rbx, rbp
  frame[7] = reinterpret_cast<uint64_t>(&sf_fiber_entry);
  sp_ = frame;
}

void Fiber::switchTo(bool toFiber) {
  if (toFiber) {
    sf_fiber_switch(&callerSp_, sp_);
  } else {
    sf_fiber_switch(&sp_, callerSp_);
  }
}
#else
void Fiber::start(Body body, void *argument) {
#if SF_ASAN
  // A body that returned has unpoisoned its frames; one abandoned midway has not.
  if (!finished_) __asan_unpoison_memory_region(stack_, bytes_);
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
  run(reinterpret_cast<Fiber *>((static_cast<uintptr_t>(high) << 32) | low));
}

void Fiber::switchTo(bool toFiber) {
  if (toFiber) {
    swapcontext(&caller_, &context_);
  } else {
    swapcontext(&context_, &caller_);
  }
}
#endif

void Fiber::run(Fiber *self) {
  finishSwitch(nullptr, &self->callerStack_, &self->callerStackBytes_);
  self->body_(self->argument_);
  self->finished_ = true;
  startSwitch(nullptr, self->callerStack_, self->callerStackBytes_);  // this stack is done
  self->switchTo(false);
  __builtin_unreachable();
}

void Fiber::resume() {
  void *fake = nullptr;
  startSwitch(&fake, stack_, bytes_);
  switchTo(true);
  finishSwitch(fake, nullptr, nullptr);
}

void Fiber::yield() {
  void *fake = nullptr;
  startSwitch(&fake, callerStack_, callerStackBytes_);
  switchTo(false);
  finishSwitch(fake, &callerStack_, &callerStackBytes_);
}

}  // namespace scanforge::gpu
