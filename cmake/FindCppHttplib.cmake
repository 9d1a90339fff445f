# FindCppHttplib: cpp-httplib as Debian ships it (libcpp-httplib-dev): a
# compiled libcpp-httplib.so and the header httplib.h declaring it, with no
# CMake package, only cpp-httplib.pc. The .pc file's Cflags carry the
# CPPHTTPLIB_*_SUPPORT definitions the library was compiled with; the
# header's classes differ without them, so they come from the .pc file and
# are not guessed. Defines CppHttplib_FOUND, CppHttplib_VERSION and
# CppHttplib::CppHttplib.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_CppHttplib QUIET IMPORTED_TARGET cpp-httplib)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CppHttplib REQUIRED_VARS PC_CppHttplib_LINK_LIBRARIES
                                  VERSION_VAR PC_CppHttplib_VERSION)
if(CppHttplib_FOUND AND NOT TARGET CppHttplib::CppHttplib)
  set(CppHttplib_VERSION ${PC_CppHttplib_VERSION})
  add_library(CppHttplib::CppHttplib INTERFACE IMPORTED)
  set_target_properties(CppHttplib::CppHttplib PROPERTIES
                        INTERFACE_LINK_LIBRARIES PkgConfig::PC_CppHttplib)
endif()
