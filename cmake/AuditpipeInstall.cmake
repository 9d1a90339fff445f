# Install rules, the exported CMake package and the pkg-config files
# (included only when AUDITPIPE_INSTALL is on). An outside project does
#   find_package(auditpipe CONFIG REQUIRED COMPONENTS sqlite)
#   target_link_libraries(app PRIVATE auditpipe::core auditpipe::sqlite)
# or `pkg-config --cflags --libs auditpipe-sqlite`.
#
# Each find_package component has its own targets file
# (auditpipe-<component>-targets.cmake), so that asking for one component
# looks up only that component's dependencies: core (auditpipe::core and
# auditpipe::sql), sqlite, postgresql, mysql, open, spdlog, metrics_http.
#
# Install components (cmake --install <build> --component <name>):
#   runtime      the shared libraries (nothing in a static build)
#   development  headers, static libraries or .so links, CMake package, .pc files,
#                the example programs' sources (share/auditpipe/examples)
#   tools        the example programs, in ${CMAKE_INSTALL_LIBEXECDIR}/auditpipe
include(CMakePackageConfigHelpers)

set(AUDITPIPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/auditpipe)
set(AUDITPIPE_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
get_property(_libraries GLOBAL PROPERTY AUDITPIPE_LIBRARIES)
get_property(_headers GLOBAL PROPERTY AUDITPIPE_LIBRARY_HEADERS)
get_property(_url_sinks GLOBAL PROPERTY AUDITPIPE_URL_SINKS)

# Libraries by find_package component, in the order their targets files
# must be read (a component's targets refer to those read before it).
set(AUDITPIPE_COMPONENTS core)
set(_component_core_targets auditpipe_core)
foreach(_name IN LISTS _libraries)
  get_property(_component GLOBAL PROPERTY AUDITPIPE_LIBRARY_${_name}_COMPONENT)
  if(NOT _component IN_LIST AUDITPIPE_COMPONENTS)
    list(APPEND AUDITPIPE_COMPONENTS ${_component})
  endif()
  list(APPEND _component_${_component}_targets auditpipe_${_name})
endforeach()

foreach(_component IN LISTS AUDITPIPE_COMPONENTS)
  install(TARGETS ${_component_${_component}_targets} EXPORT auditpipe-${_component}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT auditpipe-${_component}-targets NAMESPACE auditpipe::
          DESTINATION ${AUDITPIPE_CMAKE_DIR} COMPONENT development)
endforeach()
install(DIRECTORY include/ ${_headers} ${PROJECT_BINARY_DIR}/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)

# The example programs' sources, with the CMakeLists.txt that builds them
# against the installed package (examples/CMakeLists.txt, which the build
# tree uses too) and the allocation counter message_platform reports with.
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/auditpipe/examples
        COMPONENT development)
install(DIRECTORY tools/alloc_counter DESTINATION ${CMAKE_INSTALL_DATADIR}/auditpipe/examples
        COMPONENT development)

# What auditpipeConfig.cmake needs to know of this build.
set(AUDITPIPE_STATIC_LIBS ON)
if(BUILD_SHARED_LIBS)
  set(AUDITPIPE_STATIC_LIBS OFF)
endif()
set(AUDITPIPE_OPEN_SINKS ${_url_sinks})
configure_package_config_file(cmake/auditpipeConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/auditpipeConfig.cmake INSTALL_DESTINATION ${AUDITPIPE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/auditpipeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/auditpipeConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/auditpipeConfigVersion.cmake
              cmake/FindSOCI.cmake
              cmake/FindMariaDBClient.cmake
              cmake/FindCppHttplib.cmake
        DESTINATION ${AUDITPIPE_CMAKE_DIR} COMPONENT development)

# pkg-config: one file per library. Requires lists what its public headers
# and symbols need; Requires.private and Libs.private what a static link
# (pkg-config --static) needs besides. The prefix is found from the file's
# own place, so the files work under any install prefix.
function(auditpipe_pkgconfig file library description)
  cmake_parse_arguments(P "" "" "REQUIRES;REQUIRES_PRIVATE;LIBS;LIBS_PRIVATE" ${ARGN})
  list(JOIN P_REQUIRES " " requires)
  list(JOIN P_REQUIRES_PRIVATE " " requires_private)
  list(JOIN P_LIBS " " libs)
  list(JOIN P_LIBS_PRIVATE " " libs_private)
  # From <prefix>/<libdir>/pkgconfig back up to <prefix>.
  set(up "\${pcfiledir}")
  string(REPLACE "/" ";" parts "${AUDITPIPE_PKGCONFIG_DIR}")
  foreach(part IN LISTS parts)
    string(APPEND up "/..")
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/pkgconfig/${file}.pc
"prefix=${up}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: ${file}
Description: ${description}
Version: ${PROJECT_VERSION}
URL: ${PROJECT_HOMEPAGE_URL}
Requires: ${requires}
Requires.private: ${requires_private}
Cflags: -I\${includedir}
Libs: -L\${libdir} -l${library} ${libs}
Libs.private: ${libs_private}
")
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${file}.pc DESTINATION ${AUDITPIPE_PKGCONFIG_DIR}
          COMPONENT development)
endfunction()

auditpipe_pkgconfig(auditpipe auditpipe "auditpipe: asynchronous, batched audit logging (core)"
  LIBS -pthread REQUIRES_PRIVATE spdlog)
auditpipe_pkgconfig(auditpipe-sql auditpipe_sql "auditpipe: the SQL sink skeleton"
  REQUIRES auditpipe REQUIRES_PRIVATE spdlog libcrypto)
if(TARGET auditpipe_sqlite)
  auditpipe_pkgconfig(auditpipe-sqlite auditpipe_sqlite "auditpipe: the SQLite sink"
    REQUIRES auditpipe-sql REQUIRES_PRIVATE sqlite3 LIBS_PRIVATE -lsoci_sqlite3 -lsoci_core -ldl)
endif()
if(TARGET auditpipe_postgresql)
  # -lpq, not libpq in Requires.private: Debian's libpq.pc lists in its
  # Libs.private what a static libpq would need (-lpgcommon -lpgport
  # -lgssapi_krb5 -lldap), which libpq-dev does not ship, and this library
  # links the shared libpq; its headers do not include libpq's.
  auditpipe_pkgconfig(auditpipe-postgresql auditpipe_postgresql "auditpipe: the PostgreSQL sink"
    REQUIRES auditpipe-sql LIBS_PRIVATE -lpq)
endif()
if(TARGET auditpipe_mysql)
  auditpipe_pkgconfig(auditpipe-mysql auditpipe_mysql "auditpipe: the MySQL/MariaDB sink"
    REQUIRES auditpipe-sql REQUIRES_PRIVATE libmariadb spdlog)
endif()
list(TRANSFORM _url_sinks PREPEND auditpipe- OUTPUT_VARIABLE _open_requires)
auditpipe_pkgconfig(auditpipe-open auditpipe_open "auditpipe: auditpipe::open(url) over every sink"
  REQUIRES auditpipe-sql ${_open_requires})
if(TARGET auditpipe_spdlog)
  auditpipe_pkgconfig(auditpipe-spdlog auditpipe_spdlog "auditpipe: the bridge to spdlog"
    REQUIRES auditpipe spdlog)
endif()
if(TARGET auditpipe_metrics_http)
  # libcpp-httplib.so as Libs.private, not cpp-httplib in Requires.private:
  # the public header does not include httplib.h, and pkg-config reads
  # Requires.private even for a shared link, which would make a shared
  # build's users install libcpp-httplib-dev for nothing.
  auditpipe_pkgconfig(auditpipe-metrics-http auditpipe_metrics_http
    "auditpipe: the /metrics HTTP server for Prometheus"
    REQUIRES auditpipe LIBS_PRIVATE -lcpp-httplib)
endif()
