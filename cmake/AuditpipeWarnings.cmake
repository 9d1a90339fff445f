# auditpipe_warnings(target): the project's warning set, on every target it builds.
function(auditpipe_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Woverloaded-virtual)
  # GCC 12 reports `"literal" + std::string` at -O2 and above as an
  # overlapping memcpy (-Wrestrict; GCC bug 105651): false, and everywhere.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(AUDITPIPE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
