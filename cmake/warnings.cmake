# Warnings are errors in every target of ours; third-party headers come in as SYSTEM.
function(memwatch_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wconversion -Wno-sign-conversion -Werror)
endfunction()

# The same, relaxed for code that must include LibTorch's headers (they trip -Wshadow and
# -Wconversion themselves).
function(memwatch_warnings_relaxed target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
endfunction()
