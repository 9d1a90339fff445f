# FindSOCI: Debian's libsoci-dev ships no CMake package, so find it by hand.
#
# Defines SOCI_FOUND, SOCI_<backend>_FOUND and the imported targets
# SOCI::core, SOCI::sqlite3 and SOCI::postgresql (for the backends present).
find_path(SOCI_INCLUDE_DIR soci/soci.h)
find_library(SOCI_CORE_LIBRARY NAMES soci_core)
if(SOCI_INCLUDE_DIR AND SOCI_CORE_LIBRARY AND NOT TARGET SOCI::core)
  add_library(SOCI::core UNKNOWN IMPORTED)
  set_target_properties(SOCI::core PROPERTIES IMPORTED_LOCATION "${SOCI_CORE_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${SOCI_INCLUDE_DIR}")
  target_link_libraries(SOCI::core INTERFACE ${CMAKE_DL_LIBS})
endif()
foreach(_backend sqlite3 postgresql)
  find_library(SOCI_${_backend}_LIBRARY NAMES soci_${_backend})
  if(SOCI_${_backend}_LIBRARY AND TARGET SOCI::core)
    set(SOCI_${_backend}_FOUND TRUE)
    if(NOT TARGET SOCI::${_backend})
      add_library(SOCI::${_backend} UNKNOWN IMPORTED)
      set_target_properties(SOCI::${_backend} PROPERTIES IMPORTED_LOCATION "${SOCI_${_backend}_LIBRARY}"
                                                         INTERFACE_LINK_LIBRARIES SOCI::core)
    endif()
  endif()
endforeach()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SOCI REQUIRED_VARS SOCI_CORE_LIBRARY SOCI_INCLUDE_DIR HANDLE_COMPONENTS)
mark_as_advanced(SOCI_INCLUDE_DIR SOCI_CORE_LIBRARY SOCI_sqlite3_LIBRARY SOCI_postgresql_LIBRARY)
