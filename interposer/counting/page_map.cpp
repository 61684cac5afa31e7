#include "counting/page_map.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>

namespace memwatch::shim {

namespace {

constexpr int kPageShift = 12;
constexpr int kAddressBits = 48;
constexpr int kLeafPageBits = 20;  // 2^20 pages = 4 GiB per leaf
constexpr std::size_t kLeafWords = (std::size_t{1} << kLeafPageBits) / 64;
constexpr std::size_t kLeaves = std::size_t{1} << (kAddressBits - kPageShift - kLeafPageBits);

using Word = std::atomic<std::uint64_t>;
std::atomic<Word*> g_leaves[kLeaves];

// Leaves come straight from the kernel: never through the hooked mmap, never counted.
Word* map_leaf() noexcept {
  const int saved_errno = errno;  // the hooked call's errno is the program's
  const long r = syscall(SYS_mmap, nullptr, kLeafWords * sizeof(Word), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  errno = saved_errno;
  if (r == -1) return nullptr;
  return reinterpret_cast<Word*>(r);
}

Word* leaf(std::size_t index, bool create) noexcept {
  Word* w = g_leaves[index].load(std::memory_order_acquire);
  if (w != nullptr || !create) return w;
  Word* fresh = map_leaf();
  if (fresh == nullptr) return nullptr;
  if (!g_leaves[index].compare_exchange_strong(w, fresh, std::memory_order_acq_rel)) {
    syscall(SYS_munmap, fresh, kLeafWords * sizeof(Word));  // another thread won
    return w;
  }
  return fresh;
}

enum class Op { set, clear, count };

// Applies `op` to the pages of [addr, addr+len) and returns how many pages changed (set/clear)
// or are marked (count). Pages beyond the 48-bit space are never counted.
std::int64_t apply(std::uintptr_t addr, std::size_t len, Op op) noexcept {
  if (len == 0) return 0;
  std::uint64_t first = addr >> kPageShift;
  std::uint64_t end = (addr + len + kPageSize - 1) >> kPageShift;  // exclusive
  const std::uint64_t limit = std::uint64_t{1} << (kAddressBits - kPageShift);
  if (first >= limit) return 0;
  if (end > limit) end = limit;
  std::int64_t pages = 0;
  while (first < end) {
    const std::size_t leaf_index = first >> kLeafPageBits;
    const std::uint64_t leaf_end =
        std::min<std::uint64_t>(end, (std::uint64_t{leaf_index} + 1) << kLeafPageBits);
    Word* words = leaf(leaf_index, op == Op::set);
    if (words == nullptr) {
      first = leaf_end;
      continue;
    }
    for (std::uint64_t page = first; page < leaf_end;) {
      const std::uint64_t in_leaf = page & ((std::uint64_t{1} << kLeafPageBits) - 1);
      const std::size_t word = in_leaf / 64;
      const unsigned bit = in_leaf % 64;
      const std::uint64_t n = std::min<std::uint64_t>(64 - bit, leaf_end - page);
      const std::uint64_t mask = (n == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << n) - 1))
                                 << bit;
      switch (op) {
        case Op::set: {
          const std::uint64_t old = words[word].fetch_or(mask, std::memory_order_relaxed);
          pages += std::popcount(~old & mask);
          break;
        }
        case Op::clear: {
          const std::uint64_t old = words[word].fetch_and(~mask, std::memory_order_relaxed);
          pages += std::popcount(old & mask);
          break;
        }
        case Op::count:
          pages += std::popcount(words[word].load(std::memory_order_relaxed) & mask);
          break;
      }
      page += n;
    }
    first = leaf_end;
  }
  return pages;
}

}  // namespace

std::int64_t page_map_set(std::uintptr_t addr, std::size_t len) noexcept {
  return apply(addr, len, Op::set) * static_cast<std::int64_t>(kPageSize);
}

std::int64_t page_map_clear(std::uintptr_t addr, std::size_t len) noexcept {
  return apply(addr, len, Op::clear) * static_cast<std::int64_t>(kPageSize);
}

std::int64_t page_map_count(std::uintptr_t addr, std::size_t len) noexcept {
  return apply(addr, len, Op::count) * static_cast<std::int64_t>(kPageSize);
}

}  // namespace memwatch::shim
