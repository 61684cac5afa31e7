// Private to the modeler: the independent parts of a fit spread over fit_threads() threads
// (threads.hpp). Each call's results land in their own slots, so a fit is the same on one core
// or many.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "memwatch/model/threads.hpp"

namespace memwatch::model {

namespace parallel_detail {

// Set in a worker: a parallel_for inside one runs serially (the outer one has the cores).
inline thread_local bool in_worker = false;

}  // namespace parallel_detail

// Calls fn(i) for every i in [0, n), on up to fit_threads() threads. The first exception thrown
// by any call is rethrown here once all have stopped.
template <class Fn>
void parallel_for(std::size_t n, Fn&& fn) {
  const std::size_t threads = std::min(fit_threads(), n);
  if (threads <= 1 || parallel_detail::in_worker) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_lock;
  const auto work = [&] {
    const bool was_worker = parallel_detail::in_worker;
    parallel_detail::in_worker = true;
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard lock(failure_lock);
        if (!failure) failure = std::current_exception();
        next.store(n, std::memory_order_relaxed);
      }
    }
    parallel_detail::in_worker = was_worker;
  };
  {
    std::vector<std::jthread> helpers;
    for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
    work();
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace memwatch::model
