# Sanitizer builds apply to everything in the tree (the library and what
# tests it), so that instrumented and uninstrumented code never mix.
if(AUDITPIPE_ASAN)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  # vptr checks need RTTI for every polymorphic class; Debian's SOCI does not
  # export it for its internal ones, so they would not link.
  add_link_options(-fsanitize=address,undefined -fno-sanitize=vptr)
endif()
if(AUDITPIPE_TSAN)
  # GCC warns that TSan does not model standalone fences (moodycamel's queue
  # uses them); the queue's own stress tests and ours run clean regardless.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -Wno-tsan)
  add_link_options(-fsanitize=thread)
endif()
