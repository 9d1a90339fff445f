# CPack: Debian packages of the install components (cmake/AuditpipeInstall.cmake).
#
#   libauditpipe<SOVERSION>  the shared libraries (runtime), e.g. libauditpipe0.1
#   libauditpipe-dev         headers, .so links, CMake package, pkg-config files
#   auditpipe-tools          the example programs (when AUDITPIPE_BUILD_EXAMPLES)
#
# Made from a shared, Release build (a static build makes libauditpipe-dev
# alone, with the .a files): tests/package/check.cmake does
#   cmake -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr ... && cpack -G DEB
# and checks the packages with lintian (packaging/debian/*.lintian-overrides
# says why each override is there).
set(_deb_revision 1)
set(_deb_version ${PROJECT_VERSION}-${_deb_revision})
set(_runtime_package libauditpipe${AUDITPIPE_SOVERSION})
set(_maintainer "auditpipe developers <dev@auditpipe.invalid>")

set(CPACK_PACKAGE_NAME auditpipe)
set(CPACK_PACKAGE_VENDOR "The auditpipe developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${_maintainer}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${_deb_revision})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${_maintainer}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${PROJECT_HOMEPAGE_URL})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(_components development)
if(BUILD_SHARED_LIBS)
  list(PREPEND _components runtime)
endif()
if(AUDITPIPE_BUILD_EXAMPLES)
  list(APPEND _components tools)
endif()
set(CPACK_COMPONENTS_ALL ${_components})

# The synopsis is the project's DESCRIPTION (CPACK_PACKAGE_DESCRIPTION_SUMMARY);
# CPack indents the bodies below and turns their empty lines into " .".
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(_about "auditpipe lands one record per event (a processed message, a request, a
login) in SQLite, PostgreSQL or MySQL/MariaDB in batches, from writer
threads, at a cost of nanoseconds and no allocation for the application's
thread. Memory is capped by a preallocated pool and every record is
written exactly once or counted.")

# Runtime: the shared libraries; dpkg-shlibdeps finds what they need, and
# the package's shlibs file lets others depend on it the same way.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${_runtime_package})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
# The loader's cache is refreshed by dpkg's ldconfig trigger.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/debian/triggers)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "${_about}\n\nThis package holds the shared libraries.")

# Development: what the installed CMake package and .pc files look up.
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libauditpipe-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(_dev_depends libspdlog-dev libssl-dev)
if(BUILD_SHARED_LIBS)
  list(PREPEND _dev_depends "${_runtime_package} (= ${_deb_version})")
endif()
# The .pc files name these in Requires.private, which pkg-config reads
# even for a shared link; a static build's CMake package needs them too.
if(AUDITPIPE_HAVE_SQLITE)
  list(APPEND _dev_depends libsqlite3-dev libsoci-dev)
endif()
if(AUDITPIPE_HAVE_POSTGRESQL)
  list(APPEND _dev_depends libpq-dev)
endif()
if(AUDITPIPE_HAVE_MYSQL)
  list(APPEND _dev_depends libmariadb-dev)
endif()
# auditpipe::metrics_http's header does not include httplib.h and its .pc
# file names libcpp-httplib.so in Libs.private only: a shared build's users
# need nothing of cpp-httplib (the runtime package's dpkg-shlibdeps names
# libcpp-httplib0.11), a static build's link needs libcpp-httplib.so.
if(AUDITPIPE_HAVE_METRICS_HTTP AND NOT BUILD_SHARED_LIBS)
  list(APPEND _dev_depends libcpp-httplib-dev)
endif()
list(JOIN _dev_depends ", " CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS)
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION "${_about}\n\nThis package holds the headers, the CMake package, the pkg-config\nfiles and the example programs' sources, in /usr/share/auditpipe/examples.")

# Tools: the example programs, against the runtime package.
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME auditpipe-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps must find the programs' auditpipe libraries in the build
# tree; the tools package depends on the runtime package by name instead.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "")
get_property(_libraries GLOBAL PROPERTY AUDITPIPE_LIBRARIES)
foreach(_target auditpipe_core ${_libraries})
  if(NOT _target STREQUAL "auditpipe_core")
    set(_target auditpipe_${_target})
  endif()
  get_target_property(_dir ${_target} BINARY_DIR)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${_dir})
endforeach()
if(BUILD_SHARED_LIBS)
  set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${_runtime_package} (= ${_deb_version})")
endif()
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "${_about}\n\nThis package holds the example programs, in /usr/libexec/auditpipe:\nmessage_platform (the demo), metrics_endpoint and spdlog_to_db.")

# Every package's /usr/share/doc/<package>: the copyright (the LICENSE in
# Debian's machine-readable format), the changelog (gzip -n: no timestamp,
# the same bytes each build) and the lintian overrides.
set(_deb_dir ${PROJECT_BINARY_DIR}/debian)
file(READ ${PROJECT_SOURCE_DIR}/LICENSE _license)
string(REGEX REPLACE "^MIT License\n\nCopyright \\(c\\) ([^\n]*)\n\n" "" _license_text "${_license}")
string(REGEX MATCH "Copyright \\(c\\) ([^\n]*)" _ "${_license}")
set(_copyright_holder ${CMAKE_MATCH_1})
string(REGEX REPLACE "\n\n" "\n.\n" _license_text "${_license_text}")
string(REGEX REPLACE "\n$" "" _license_text "${_license_text}")
string(REGEX REPLACE "\n" "\n " _license_text "${_license_text}")
file(WRITE ${_deb_dir}/copyright
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: auditpipe
Source: ${PROJECT_HOMEPAGE_URL}

Files: *
Copyright: ${_copyright_holder}
License: Expat

License: Expat
 ${_license_text}
")
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in ${_deb_dir}/changelog @ONLY)
execute_process(COMMAND gzip -9nc ${_deb_dir}/changelog OUTPUT_FILE ${_deb_dir}/changelog.Debian.gz
                RESULT_VARIABLE _gzip_rc)
if(_gzip_rc)
  message(FATAL_ERROR "gzip of the Debian changelog failed: ${_gzip_rc}")
endif()
foreach(_component IN LISTS _components)
  string(TOUPPER ${_component} _upper)
  set(_package ${CPACK_DEBIAN_${_upper}_PACKAGE_NAME})
  install(FILES ${_deb_dir}/copyright ${_deb_dir}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_package} COMPONENT ${_component}
          EXCLUDE_FROM_ALL)
  set(_overrides ${PROJECT_SOURCE_DIR}/packaging/debian/${_component}.lintian-overrides)
  if(EXISTS ${_overrides})
    configure_file(${_overrides} ${_deb_dir}/${_package} @ONLY)
    install(FILES ${_deb_dir}/${_package} DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides
            COMPONENT ${_component} EXCLUDE_FROM_ALL)
  endif()
endforeach()

include(CPack)
