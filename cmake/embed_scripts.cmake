# Embeds the node agent's programs (lib/cvs/exec/agent/*.sh, POSIX sh, and *.py, Python run by the
# training's python -c) into a C++ header at build time: each as a raw string constant named as its
# file without the extension, full-line comments and blank lines removed (the programs travel as
# argv on every node; the Python ones hold no multi-line strings). A name without an extension is
# a .sh. Run by lib/CMakeLists.txt:
#   cmake -DDIR=<folder of the .sh files> -DNAMES=a,b,c -DOUT=<header> -P embed_scripts.cmake
string(REPLACE "," ";" names "${NAMES}")
set(out "// Generated from lib/cvs/exec/agent/*.sh and *.py by cmake/embed_scripts.cmake at build time: edit those files.\n")
string(APPEND out "#pragma once\n\nnamespace cvs::agent::scripts {\n")
foreach(file_name IN LISTS names)
  if(NOT file_name MATCHES "\\.")
    string(APPEND file_name ".sh")
  endif()
  string(REGEX REPLACE "\\.[a-z]+$" "" name "${file_name}")
  file(READ "${DIR}/${file_name}" text)
  string(PREPEND text "\n")
  string(REGEX REPLACE "\n[ \t]*#[^\n]*" "" text "${text}")
  string(REGEX REPLACE "\n\n+" "\n" text "${text}")
  string(REGEX REPLACE "^\n" "" text "${text}")
  if(text MATCHES "\\)CVSSH")
    message(FATAL_ERROR "${file_name} contains the raw-string delimiter )CVSSH")
  endif()
  string(APPEND out "inline constexpr const char* ${name} = R\"CVSSH(${text})CVSSH\";\n")
endforeach()
string(APPEND out "\n}  // namespace cvs::agent::scripts\n")
file(WRITE "${OUT}" "${out}")
