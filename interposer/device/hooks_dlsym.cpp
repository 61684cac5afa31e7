// dlsym, for programs that reach CUDA through dlopen + dlsym (a statically linked runtime
// fetches cuGetProcAddress that way; PyTorch fetched libcuda's VMM functions so): the memory
// functions come back wrapped.
//
// glibc's dlsym answers RTLD_NEXT relative to its caller's return address, so the hook must not
// stand between a caller and the real dlsym for that handle: the entry point, in assembly,
// jumps straight to the real dlsym for RTLD_NEXT and for every name that is not CUDA's (the
// return address is still the caller's), and to the C++ part for the rest. The shim's own
// lookups pass through the same entry.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "device/device_hooks.hpp"

using namespace memwatch::shim;

namespace {

using DlsymFn = void* (*)(void*, const char*);

}  // namespace

// Read by the assembly entry point (a plain aligned load of a pointer).
extern "C" {
__attribute__((visibility("hidden"))) DlsymFn memwatch_real_dlsym_ptr = nullptr;
}

extern "C" __attribute__((visibility("hidden"))) DlsymFn memwatch_resolve_real_dlsym() noexcept {
  DlsymFn fn = __atomic_load_n(&memwatch_real_dlsym_ptr, __ATOMIC_ACQUIRE);
  if (fn != nullptr) return fn;
  // The default version of dlsym is GLIBC_2.34 since libdl moved into libc, GLIBC_2.2.5 before
  // (x86-64). dlvsym is not hooked, and RTLD_NEXT from here means "after libmemwatch.so".
  void* p = nullptr;
  {
    InternalScope internal;
    p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  }
  fn = reinterpret_cast<DlsymFn>(p);
#if !defined(__x86_64__)
  // Elsewhere the shim defines no dlsym of its own (only the dlopen routes go uncounted).
  if (fn == nullptr) fn = &dlsym;
#endif
  __atomic_store_n(&memwatch_real_dlsym_ptr, fn, __ATOMIC_RELEASE);
  return fn;
}

// Names starting with "cu", every handle but RTLD_NEXT.
extern "C" __attribute__((visibility("hidden"))) void* memwatch_dlsym_handle(void* handle,
                                                                             const char* name) {
  const DlsymFn real = memwatch_resolve_real_dlsym();
  if (real == nullptr) return nullptr;
  void* p = real(handle, name);
  return p == nullptr ? p : device_wrap_exported(handle, name, p);
}

#if defined(__x86_64__)
// Only names starting with "cu" reach the C++ part; every other lookup, and every RTLD_NEXT
// one (RTLD_NEXT is ((void*)-1)), jumps to the real dlsym with the caller's return address
// intact, which glibc also uses to tie a found library to its user. The resolve call keeps the
// stack 16-byte aligned: entry leaves it at 8 mod 16, two pushes and 8 more bytes bring it to 0.
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  .cfi_startproc
0:
  movq memwatch_real_dlsym_ptr(%rip), %rax
  testq %rax, %rax
  jz 1f
  cmpq $-1, %rdi
  je 3f
  testq %rsi, %rsi
  jz 3f
  cmpb $0x63, (%rsi)
  jne 3f
  cmpb $0x75, 1(%rsi)
  jne 3f
  jmp memwatch_dlsym_handle
3:
  jmp *%rax
1:
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call memwatch_resolve_real_dlsym
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  jnz 0b
  ret
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#endif

namespace memwatch::shim {

void* device_real_dlsym(void* handle, const char* name) noexcept {
  const DlsymFn real = memwatch_resolve_real_dlsym();
  return real == nullptr ? nullptr : real(handle, name);
}

void* device_next_symbol(const char* name, std::initializer_list<const char*> libraries) noexcept {
  void* fn = nullptr;
  {
    InternalScope internal;
    fn = device_real_dlsym(RTLD_NEXT, name);
    for (const char* library : libraries) {
      if (fn != nullptr) break;
      if (void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD))
        fn = device_real_dlsym(handle, name);
    }
  }
  if (fn == nullptr) log_line("%s is called but no library defines it", name);
  device_note_cuda_seen();
  return fn;
}

}  // namespace memwatch::shim
