# FindMariaDBClient: MariaDB Connector/C (Debian's libmariadb-dev), the
# libmysqlclient API. Defines MariaDBClient_FOUND and MariaDB::client.
find_path(MariaDBClient_INCLUDE_DIR mysql.h PATH_SUFFIXES mariadb)
find_library(MariaDBClient_LIBRARY NAMES mariadb)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MariaDBClient REQUIRED_VARS MariaDBClient_LIBRARY MariaDBClient_INCLUDE_DIR)
if(MariaDBClient_FOUND AND NOT TARGET MariaDB::client)
  add_library(MariaDB::client UNKNOWN IMPORTED)
  set_target_properties(MariaDB::client PROPERTIES IMPORTED_LOCATION "${MariaDBClient_LIBRARY}"
                                                   INTERFACE_INCLUDE_DIRECTORIES "${MariaDBClient_INCLUDE_DIR}")
endif()
mark_as_advanced(MariaDBClient_INCLUDE_DIR MariaDBClient_LIBRARY)
