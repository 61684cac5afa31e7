// Included before anything else in every C++ test (tests/CMakeLists.txt). Reading a key a
// JSON object lacks through a const reference is undefined behaviour in nlohmann::json,
// guarded only by an assert that the release build compiles out: a test asking the wrong
// question passed on one machine and failed on another. Here it stops the test, by name,
// everywhere (an abort, because nlohmann checks some preconditions in noexcept functions).
#pragma once
#include <cstdio>
#include <cstdlib>

#define JSON_ASSERT(condition)                                                            \
  ((condition) ? static_cast<void>(0)                                                     \
               : (std::fprintf(stderr, "%s:%d: nlohmann::json precondition failed: %s\n", \
                               __FILE__, __LINE__, #condition),                           \
                  std::abort()))
