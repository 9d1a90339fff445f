# How every auditpipe library is made: the properties all of them share
# (auditpipe_library_defaults) and the libraries outside the core
# (auditpipe_library), remembered for AuditpipeInstall.

# ABI version of the shared libraries: the major version once it is above
# 0; while it is 0, every minor release may break the ABI, so 0.MINOR
# (libauditpipe.so.0.1). README "Versioning" states the policy.
if(PROJECT_VERSION_MAJOR GREATER 0)
  set(AUDITPIPE_SOVERSION ${PROJECT_VERSION_MAJOR})
else()
  set(AUDITPIPE_SOVERSION 0.${PROJECT_VERSION_MINOR})
endif()

# auditpipe_library_defaults(target): position-independent code (so the
# static libraries link into a consumer's shared library; the TLS of the
# producer path otherwise needs R_X86_64_TPOFF32 relocations), symbols
# hidden unless include/auditpipe/export.h's AUDITPIPE_EXPORT marks them,
# and the shared library's VERSION/SOVERSION.
function(auditpipe_library_defaults target)
  set_target_properties(${target} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    VERSION ${PROJECT_VERSION}
    SOVERSION ${AUDITPIPE_SOVERSION})
  auditpipe_warnings(${target})
endfunction()

# auditpipe_library(<name> COMPONENT <component> [URL_SINK] SOURCES <files>...
#                   [PUBLIC <deps>...] [PRIVATE <deps>...])
#
# One of auditpipe's libraries outside the core (the SQL skeleton, a sink, a
# bridge, auditpipe::open), all made the same way: target auditpipe_<name>,
# used as auditpipe::<name> (alias and export name), its include/ folder
# public, the project's warnings. Each is remembered for AuditpipeInstall,
# which installs its target and headers into the find_package component
# <component> (its own targets file) and writes its pkg-config file.
# URL_SINK: a sink auditpipe::open() chooses by URL scheme; its namespace,
# header folder and header are auditpipe::<name>,
# auditpipe/<name>/<name>_sink.h, declaring <name>::url_schemes and
# <name>::open(url).
function(auditpipe_library name)
  cmake_parse_arguments(L "URL_SINK" "COMPONENT" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  if(NOT L_COMPONENT)
    message(FATAL_ERROR "auditpipe_library(${name}): COMPONENT missing")
  endif()
  set(target auditpipe_${name})
  add_library(${target} ${L_SOURCES})
  add_library(auditpipe::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME ${target})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
  auditpipe_library_defaults(${target})
  set_property(GLOBAL APPEND PROPERTY AUDITPIPE_LIBRARIES ${name})
  set_property(GLOBAL PROPERTY AUDITPIPE_LIBRARY_${name}_COMPONENT ${L_COMPONENT})
  set_property(GLOBAL APPEND PROPERTY AUDITPIPE_LIBRARY_HEADERS ${CMAKE_CURRENT_SOURCE_DIR}/include/)
  if(L_URL_SINK)
    set_property(GLOBAL APPEND PROPERTY AUDITPIPE_URL_SINKS ${name})
  endif()
endfunction()
