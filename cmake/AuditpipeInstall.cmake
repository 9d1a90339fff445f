# Install rules and the exported CMake package: an outside project does
#   find_package(auditpipe CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE auditpipe::core auditpipe::sqlite)
# The core and its front door, then every library auditpipe_library() made
# in this build (the SQL skeleton, the sinks, auditpipe::open, the bridges),
# each with its include/ folder.
include(CMakePackageConfigHelpers)

set(AUDITPIPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/auditpipe)
get_property(_libraries GLOBAL PROPERTY AUDITPIPE_LIBRARIES)
get_property(_headers GLOBAL PROPERTY AUDITPIPE_LIBRARY_HEADERS)
list(TRANSFORM _libraries PREPEND auditpipe_ OUTPUT_VARIABLE _targets)

install(TARGETS auditpipe_core ${_targets} EXPORT auditpipeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/ ${_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT auditpipeTargets NAMESPACE auditpipe:: DESTINATION ${AUDITPIPE_CMAKE_DIR})

configure_package_config_file(cmake/auditpipeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/auditpipeConfig.cmake INSTALL_DESTINATION ${AUDITPIPE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/auditpipeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/auditpipeConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/auditpipeConfigVersion.cmake
              cmake/FindSOCI.cmake
              cmake/FindMariaDBClient.cmake
        DESTINATION ${AUDITPIPE_CMAKE_DIR})
