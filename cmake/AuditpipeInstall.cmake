# Install rules and the exported CMake package: an outside project does
#   find_package(auditpipe CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE auditpipe::core auditpipe::soci)
include(CMakePackageConfigHelpers)

set(AUDITPIPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/auditpipe)
set(_targets auditpipe_core auditpipe_sql)
install(DIRECTORY sinks/sql/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(AUDITPIPE_HAVE_SOCI)
  list(APPEND _targets auditpipe_soci)
  install(DIRECTORY sinks/soci/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

if(AUDITPIPE_HAVE_MYSQL)
  list(APPEND _targets auditpipe_mysql)
  install(DIRECTORY sinks/mysql/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

list(APPEND _targets auditpipe_spdlog auditpipe_open)
install(DIRECTORY sinks/spdlog/include/ sinks/open/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(TARGETS ${_targets} EXPORT auditpipeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
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
