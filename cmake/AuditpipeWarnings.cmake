# auditpipe_warnings(target): the project's warning set, on every target it builds.
function(auditpipe_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Woverloaded-virtual)
  if(AUDITPIPE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
