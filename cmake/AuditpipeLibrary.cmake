# auditpipe_library(<name> [URL_SINK] SOURCES <files>... [PUBLIC <deps>...] [PRIVATE <deps>...])
#
# One of auditpipe's libraries outside the core (the SQL skeleton, a sink, a
# bridge, auditpipe::open), all made the same way: target auditpipe_<name>,
# used as auditpipe::<name> (alias and export name), its include/ folder
# public, the project's warnings. Each is remembered for AuditpipeInstall,
# which installs its target and headers. URL_SINK: a sink auditpipe::open()
# chooses by URL scheme; its namespace, header folder and header are
# auditpipe::<name>, auditpipe/<name>/<name>_sink.h, declaring
# <name>::url_schemes and <name>::open(url).
function(auditpipe_library name)
  cmake_parse_arguments(L "URL_SINK" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  set(target auditpipe_${name})
  add_library(${target} ${L_SOURCES})
  add_library(auditpipe::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME ${target})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${target} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
  auditpipe_warnings(${target})
  set_property(GLOBAL APPEND PROPERTY AUDITPIPE_LIBRARIES ${name})
  set_property(GLOBAL APPEND PROPERTY AUDITPIPE_LIBRARY_HEADERS ${CMAKE_CURRENT_SOURCE_DIR}/include/)
  if(L_URL_SINK)
    set_property(GLOBAL APPEND PROPERTY AUDITPIPE_URL_SINKS ${name})
  endif()
endfunction()
