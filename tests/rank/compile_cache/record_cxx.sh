#!/bin/sh
# The C++ compiler inductor runs in the compile-once tests: notes each run in $CXX_LOG, then is g++.
echo "$*" >> "$CXX_LOG"
exec g++ "$@"
