# Embeds the node agent's POSIX sh programs (lib/cvs/exec/agent/*.sh) into a C++ header at build time:
# each as a raw string constant, full-line comments and blank lines removed (the programs travel
# as argv on every node). Run by lib/CMakeLists.txt:
#   cmake -DDIR=<folder of the .sh files> -DNAMES=a,b,c -DOUT=<header> -P embed_scripts.cmake
string(REPLACE "," ";" names "${NAMES}")
set(out "// Generated from lib/cvs/exec/agent/*.sh by cmake/embed_scripts.cmake at build time: edit the .sh files.\n")
string(APPEND out "#pragma once\n\nnamespace cvs::agent::scripts {\n")
foreach(name IN LISTS names)
  file(READ "${DIR}/${name}.sh" text)
  string(PREPEND text "\n")
  string(REGEX REPLACE "\n[ \t]*#[^\n]*" "" text "${text}")
  string(REGEX REPLACE "\n\n+" "\n" text "${text}")
  string(REGEX REPLACE "^\n" "" text "${text}")
  if(text MATCHES "\\)CVSSH")
    message(FATAL_ERROR "${name}.sh contains the raw-string delimiter )CVSSH")
  endif()
  string(APPEND out "inline constexpr const char* ${name} = R\"CVSSH(${text})CVSSH\";\n")
endforeach()
string(APPEND out "\n}  // namespace cvs::agent::scripts\n")
file(WRITE "${OUT}" "${out}")
