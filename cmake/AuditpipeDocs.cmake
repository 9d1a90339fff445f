# The API reference (target `docs`): Doxygen (Debian's doxygen package,
# scripts/deps.sh) over the public headers, the generated version.h and
# export.h included, into <build>/docs/api/html. docs/api/Doxyfile.in makes
# every warning an error, an undocumented public symbol among them; the
# test api_docs builds the target.
find_package(Doxygen QUIET)
if(PROJECT_IS_TOP_LEVEL AND DOXYGEN_EXECUTABLE)
  set(_docs_default ON)
else()
  set(_docs_default OFF)
endif()
option(AUDITPIPE_BUILD_DOCS "Build the API reference with Doxygen (target docs)" ${_docs_default})
if(NOT AUDITPIPE_BUILD_DOCS)
  return()
endif()
if(NOT DOXYGEN_EXECUTABLE)
  message(FATAL_ERROR "auditpipe: AUDITPIPE_BUILD_DOCS=ON but doxygen was not found; "
                      "install the Debian package doxygen (apt-get install doxygen)")
endif()

# The public headers: the core's, each library's include/ folder, the generated ones.
get_property(_doc_dirs GLOBAL PROPERTY AUDITPIPE_LIBRARY_HEADERS)
set(_doc_input ${PROJECT_SOURCE_DIR}/include ${_doc_dirs} ${PROJECT_BINARY_DIR}/include)
list(REMOVE_DUPLICATES _doc_input)
list(JOIN _doc_input " " AUDITPIPE_DOCS_INPUT)
set(AUDITPIPE_DOCS_OUTPUT ${PROJECT_BINARY_DIR}/docs/api)
set(AUDITPIPE_DOCS_STRIP "${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include")
foreach(_dir IN LISTS _doc_dirs)
  string(APPEND AUDITPIPE_DOCS_STRIP " ${_dir}")
endforeach()
configure_file(docs/api/Doxyfile.in ${AUDITPIPE_DOCS_OUTPUT}/Doxyfile @ONLY)

# Doxygen runs whenever the target is built (a few seconds), so a run that
# failed is never taken for an up-to-date one.
add_custom_target(docs
  COMMAND ${DOXYGEN_EXECUTABLE} ${AUDITPIPE_DOCS_OUTPUT}/Doxyfile
  WORKING_DIRECTORY ${AUDITPIPE_DOCS_OUTPUT}
  COMMENT "API reference (Doxygen) into ${AUDITPIPE_DOCS_OUTPUT}/html"
  VERBATIM)
