# Makes the shim's private copy of jemalloc: Debian's PIC archive with every public name
# (malloc, mallocx, operator new, malloc_conf, ...) renamed je_NAME, the prefix jemalloc's own
# header declares under JEMALLOC_NO_RENAME. Nothing of it can then stand in the program's global
# scope, and the version script keeps the renamed names out of the shim's dynamic table too.
#   cmake -DINPUT=libjemalloc_pic.a -DOUTPUT=out.a -DNM=nm -DOBJCOPY=objcopy -P private_jemalloc.cmake

function(public_names archive out)
  execute_process(COMMAND ${NM} -g --defined-only ${archive} OUTPUT_VARIABLE listing
                  RESULT_VARIABLE status ERROR_QUIET)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "private_jemalloc: ${NM} cannot list ${archive}")
  endif()
  string(REPLACE "\n" ";" lines "${listing}")
  set(names)
  foreach(line IN LISTS lines)
    # "ADDRESS TYPE NAME"; jemalloc's internals are je_* already, DW.ref.* are unwinder links.
    if(line MATCHES "^[0-9a-f]+ [A-Za-z] (.+)$")
      set(name ${CMAKE_MATCH_1})
      if(NOT name MATCHES "^(je_|DW\\.ref\\.)")
        list(APPEND names ${name})
      endif()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES names)
  set(${out} ${names} PARENT_SCOPE)
endfunction()

public_names(${INPUT} names)
list(LENGTH names count)
if(count EQUAL 0)
  message(FATAL_ERROR "private_jemalloc: ${INPUT} exports nothing to rename; is it jemalloc?")
endif()
set(map "")
foreach(name IN LISTS names)
  string(APPEND map "${name} je_${name}\n")
endforeach()
file(WRITE ${OUTPUT}.renames "${map}")
execute_process(COMMAND ${OBJCOPY} --redefine-syms=${OUTPUT}.renames ${INPUT} ${OUTPUT}.tmp
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "private_jemalloc: ${OBJCOPY} could not rename ${INPUT}")
endif()

public_names(${OUTPUT}.tmp left)
if(left)
  message(FATAL_ERROR "private_jemalloc: still public after renaming: ${left}")
endif()
file(RENAME ${OUTPUT}.tmp ${OUTPUT})
