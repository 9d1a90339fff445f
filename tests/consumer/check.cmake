# Installs the build tree into a scratch prefix, then configures, builds and
# runs a consumer project against it, as an outside project would.
#
#   cmake -DAUDITPIPE_BINARY_DIR=<build> -DCONSUMER_SOURCE_DIR=<project> -DWORK_DIR=<scratch>
#         [-DCONSUMER_ARGS=<arg>|<arg>...]  extra configure arguments, '|'-separated
#         [-DRUN=<program>|<arg>...]        what to run, in the consumer's build tree
#                                           (default: ./consumer)
#         [-DEXPECT_CONFIGURE_ERROR=<regex>] the configure must fail with this message
#         [-DCONSUMER_IN_PREFIX=ON]          CONSUMER_SOURCE_DIR is relative to the
#                                           installed prefix (a project the package ships)
#         [-DEXPECT_PROGRAMS=<program>|...]  the build must make these programs
#         -P check.cmake
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${AUDITPIPE_BINARY_DIR} --prefix ${WORK_DIR}/prefix
                OUTPUT_QUIET RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
if(CONSUMER_IN_PREFIX)
  set(CONSUMER_SOURCE_DIR ${WORK_DIR}/prefix/${CONSUMER_SOURCE_DIR})
  if(NOT EXISTS ${CONSUMER_SOURCE_DIR}/CMakeLists.txt)
    message(FATAL_ERROR "the installation has no ${CONSUMER_SOURCE_DIR}/CMakeLists.txt")
  endif()
endif()
string(REPLACE "|" ";" args "${CONSUMER_ARGS}")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(DEFINED EXPECT_CONFIGURE_ERROR)
  if(NOT rc)
    message(FATAL_ERROR "configuring the consumer succeeded; expected an error matching "
                        "'${EXPECT_CONFIGURE_ERROR}'\n${out}${err}")
  endif()
  if(NOT err MATCHES "${EXPECT_CONFIGURE_ERROR}")
    message(FATAL_ERROR "configuring the consumer failed, but not with '${EXPECT_CONFIGURE_ERROR}':\n${err}")
  endif()
  message(STATUS "configure refused, as expected:\n${err}")
  return()
endif()
if(rc)
  message(FATAL_ERROR "configuring the consumer failed: ${rc}\n${out}${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed: ${rc}")
endif()
string(REPLACE "|" ";" expected "${EXPECT_PROGRAMS}")
foreach(program IN LISTS expected)
  if(NOT EXISTS ${WORK_DIR}/build/${program})
    message(FATAL_ERROR "the consumer's build made no ${program}")
  endif()
  message(STATUS "built ${program}")
endforeach()
if(NOT DEFINED RUN)
  set(RUN consumer)
endif()
string(REPLACE "|" ";" run "${RUN}")
list(POP_FRONT run program)
# A shared build's libraries find each other through the loader's path, as
# under a prefix that is not in ld.so.conf (the consumer's own RUNPATH does
# not reach the libraries' dependencies on each other).
file(GLOB_RECURSE libs ${WORK_DIR}/prefix/*/libauditpipe.*)
set(library_path "")
if(libs)
  list(GET libs 0 lib)
  get_filename_component(library_path ${lib} DIRECTORY)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${library_path}
                        ${WORK_DIR}/build/${program} ${run}
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer failed: ${rc}")
endif()
# AUDITPIPE_CHECK_NO_EXPORTS=<library> (environment): the consumer's shared
# library must export none of auditpipe's symbols.
if(DEFINED ENV{AUDITPIPE_CHECK_NO_EXPORTS})
  execute_process(COMMAND nm -DC --defined-only ${WORK_DIR}/build/$ENV{AUDITPIPE_CHECK_NO_EXPORTS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE symbols)
  if(rc)
    message(FATAL_ERROR "nm failed: ${rc}")
  endif()
  string(REGEX MATCHALL "[^\n]*auditpipe::[^\n]*" exported "${symbols}")
  if(exported)
    list(LENGTH exported n)
    list(GET exported 0 first)
    message(FATAL_ERROR "$ENV{AUDITPIPE_CHECK_NO_EXPORTS} re-exports ${n} auditpipe symbols, e.g. ${first}")
  endif()
endif()
