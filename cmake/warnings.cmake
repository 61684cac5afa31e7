# Warnings are errors in every target of ours; third-party headers come in as SYSTEM.
function(memwatch_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wconversion -Wno-sign-conversion -Werror)
  memwatch_no_false_restrict(${target})
endfunction()

# The same, relaxed for code that must include LibTorch's headers (they trip -Wshadow and
# -Wconversion themselves).
function(memwatch_warnings_relaxed target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  memwatch_no_false_restrict(${target})
endfunction()

# GCC 12 at -O3 (a Release build) reports -Wrestrict inside libstdc++ for `"text" + string`
# (GCC bug 105329, fixed in 13): a false positive in the library, not in our code.
function(memwatch_no_false_restrict target)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
endfunction()
