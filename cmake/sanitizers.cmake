# MEMWATCH_SANITIZE applies to the whole build tree. The preloaded shim cannot run under a
# sanitizer (the sanitizer's own malloc replaces the one we interpose), so sanitizer trees test
# the shim's core as a plain library instead: see interposer/CMakeLists.txt.
if(MEMWATCH_SANITIZE)
  set(_flags -fsanitize=${MEMWATCH_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_compile_options(${_flags})
  add_link_options(${_flags})
endif()

# A fuzz tree instruments every library for coverage and checks it with ASan+UBSan, so that the
# fuzz targets (tests/fuzz) are guided by what happens inside the parsers they call.
if(MEMWATCH_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
