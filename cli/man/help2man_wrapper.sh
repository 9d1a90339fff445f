#!/bin/sh
# help2man reads a program's --help and --version; the manual page of
# `auditpipe` is that of its one subcommand so far, `auditpipe ingest`.
#   help2man_wrapper.sh <auditpipe binary> --help|--version
bin=$1
shift
case "$1" in
  --help) exec "$bin" ingest --help ;;
  *) exec "$bin" "$@" ;;
esac
