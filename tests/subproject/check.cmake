# Configures tests/subproject (a parent that add_subdirectory()s auditpipe)
# in Debug, builds and runs its program, installs it, and checks that the
# install holds the parent's program alone. The parent asks for a unity
# build, as a parent may: 44 s (69 CPU s) against 91 s (168 CPU s) here.
#
#   cmake -DAUDITPIPE_SOURCE_DIR=<tree> -DWORK_DIR=<scratch> -P check.cmake
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${WORK_DIR}/build
                        -DCMAKE_BUILD_TYPE=Debug -DCMAKE_UNITY_BUILD=ON
                        -DAUDITPIPE_SOURCE_DIR=${AUDITPIPE_SOURCE_DIR}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the parent failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build --target parent_app -j2
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the parent failed: ${rc}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/parent_app ${WORK_DIR}/parent.db RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the parent's program failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --install ${WORK_DIR}/build --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "installing the parent failed: ${rc}")
endif()
file(GLOB_RECURSE installed RELATIVE ${WORK_DIR}/prefix ${WORK_DIR}/prefix/*)
if(NOT installed STREQUAL "bin/parent_app")
  message(FATAL_ERROR "the parent's install holds more than its program: ${installed}")
endif()
