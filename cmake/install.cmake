# Install rules, man pages and the Debian package (cpack -G DEB). Layout (lib/cvs/config/layout.hpp):
#   bin/cvs, bin/cvs-gpu-probe                     what users run
#   libexec/cvs-maxtext/                           the suites and setup-venv (`cvs run`, `cvs setup-venv`)
#   share/cvs-maxtext/{configs,thresholds}/        the shipped configs ({cvs_root})
#   share/cvs-maxtext/requirements-maxtext-cpu.lock  the venv's pins
#   share/man/man1/, share/doc/cvs-maxtext/
include(GNUInstallDirs)
set(CVS_PACKAGE cvs-maxtext)
set(CVS_INSTALL_LIBEXEC ${CMAKE_INSTALL_LIBEXECDIR}/${CVS_PACKAGE})
set(CVS_INSTALL_DATA ${CMAKE_INSTALL_DATADIR}/${CVS_PACKAGE})
set(CVS_INSTALL_DOC ${CMAKE_INSTALL_DATADIR}/doc/${CVS_PACKAGE})

install(TARGETS cvs RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS $<TARGET_FILE:gpu_probe> DESTINATION ${CMAKE_INSTALL_BINDIR} RENAME cvs-gpu-probe)
# A renamed program is not a target to CPack's stripping: strip it as install/strip would.
install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND \"${CMAKE_STRIP}\" \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/cvs-gpu-probe\")
endif()")
install(TARGETS jaxmaxtext_single jaxmaxtext_distributed jaxmaxtext_fleet jaxmaxtext_certify
        RUNTIME DESTINATION ${CVS_INSTALL_LIBEXEC})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/setup-venv DESTINATION ${CVS_INSTALL_LIBEXEC})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs ${PROJECT_SOURCE_DIR}/thresholds DESTINATION ${CVS_INSTALL_DATA})
install(FILES ${PROJECT_SOURCE_DIR}/tools/requirements-maxtext-cpu.lock DESTINATION ${CVS_INSTALL_DATA})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/packaging/copyright
        DESTINATION ${CVS_INSTALL_DOC})
# The docs by task, where the README's links find them (docs/NAME.md beside it).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs DESTINATION ${CVS_INSTALL_DOC} FILES_MATCHING PATTERN "*.md")

# gzip -9n: what Debian's policy asks of man pages and changelogs (no timestamp, reproducible).
find_program(CVS_GZIP gzip REQUIRED)
set(cvs_changelog ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(OUTPUT ${cvs_changelog}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging
  COMMAND ${CVS_GZIP} -9nc ${PROJECT_SOURCE_DIR}/packaging/changelog > ${cvs_changelog}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/changelog)
add_custom_target(cvs_changelog ALL DEPENDS ${cvs_changelog})
install(FILES ${cvs_changelog} DESTINATION ${CVS_INSTALL_DOC})

# Man pages from each command's --help (Debian's help2man). A subcommand runs through a small
# wrapper (build/man/bin/cvs-SUB: exec cvs SUB "$@") so help2man can call it like a program.
find_program(CVS_HELP2MAN help2man)
if(CVS_HELP2MAN)
  set(cvs_man_pages
      "cvs|the cluster validation suite's command line (JAX MaxText pre-training, gated)|-"
      "cvs-config|check, list and copy suite configs|config"
      "cvs-run|run a suite: jaxmaxtext_single, jaxmaxtext_distributed, fleet or certify|run jaxmaxtext_single"
      "cvs-fleet|the single-node suite on every node, each node scored against the fleet|fleet"
      "cvs-certify|certify a cluster: preflight, nodes, links, scaling ladder|certify"
      "cvs-calibrate|a threshold file from what a known-good node or cluster measured|calibrate"
      "cvs-report|the HTML report of a session from its results.json|report"
      "cvs-card|a session as model-verification entries|card"
      "cvs-compare|two sessions per sweep and metric, exit 1 on a regression|compare"
      "cvs-metrics|the metrics of MaxText training logs as JSON|metrics"
      "cvs-history|the results store: sessions, a node's ledger, lemons, trends, export|history"
      "cvs-setup-venv|make the venv the CPU default trains in (MaxText on JAX's CPU backend)|setup-venv"
      "cvs-gpu-probe|this node's GPUs and the compute processes on them, as JSON|@gpu_probe")
  set(cvs_man_out)
  foreach(entry IN LISTS cvs_man_pages)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 page)
    list(GET parts 1 what)
    list(GET parts 2 sub)
    set(wrapper ${CMAKE_BINARY_DIR}/man/bin/${page})
    if(sub STREQUAL "@gpu_probe")
      file(GENERATE OUTPUT ${wrapper} CONTENT "#!/bin/sh\nexec '$<TARGET_FILE:gpu_probe>' \"$@\"\n"
           FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    else()
      if(sub STREQUAL "-")
        set(sub "")
      endif()
      file(GENERATE OUTPUT ${wrapper} CONTENT "#!/bin/sh\nexec '$<TARGET_FILE:cvs>' ${sub} \"$@\"\n"
           FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    endif()
    set(out ${CMAKE_BINARY_DIR}/man/${page}.1)
    add_custom_command(OUTPUT ${out}.gz
      COMMAND ${CVS_HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
              --name=${what} --output=${out} ${wrapper}
      COMMAND ${CVS_GZIP} -9nf ${out}
      DEPENDS cvs gpu_probe jaxmaxtext_single ${PROJECT_SOURCE_DIR}/tools/setup-venv
      COMMENT "man page ${page}(1)" VERBATIM)
    list(APPEND cvs_man_out ${out}.gz)
  endforeach()
  add_custom_target(cvs_man_pages ALL DEPENDS ${cvs_man_out})
  install(FILES ${cvs_man_out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: no man pages (Debian's help2man; tools/setup installs it)")
endif()

# cpack -G DEB (from the build folder): cvs-maxtext_<version>_amd64.deb. Depends: the shared
# libraries the binaries link (dpkg-shlibdeps), python3 (setup-venv), openssh-client (the ssh
# transport). The test-only packages of tools/setup are never named.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ${CVS_PACKAGE})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# The .deb's Maintainer: whoever packages this build, never a made-up address. -D
# CVS_PACKAGE_MAINTAINER="Name <mail>", else Debian's DEBFULLNAME and DEBEMAIL, else the author of
# the commit built (git); with none, the build goes on and cpack refuses to package.
if(NOT CVS_PACKAGE_MAINTAINER AND DEFINED ENV{DEBFULLNAME} AND DEFINED ENV{DEBEMAIL})
  set(CVS_PACKAGE_MAINTAINER "$ENV{DEBFULLNAME} <$ENV{DEBEMAIL}>")
endif()
if(NOT CVS_PACKAGE_MAINTAINER)
  find_program(CVS_GIT git)
  if(CVS_GIT)
    execute_process(COMMAND ${CVS_GIT} -C ${PROJECT_SOURCE_DIR} log -1 "--format=%an <%ae>"
                    OUTPUT_VARIABLE CVS_PACKAGE_MAINTAINER OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
endif()
if(CVS_PACKAGE_MAINTAINER MATCHES "^[^<>]+ <[^<>@ ]+@[^<>@ ]+>$")
  set(CPACK_PACKAGE_CONTACT "${CVS_PACKAGE_MAINTAINER}")
else()
  message(STATUS "no .deb Maintainer ('${CVS_PACKAGE_MAINTAINER}'): cpack will refuse (fix: "
                 "-DCVS_PACKAGE_MAINTAINER=\"Name <mail>\", or export DEBFULLNAME and DEBEMAIL)")
endif()
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "cluster validation suite: JAX MaxText pre-training, gated")
set(CPACK_PACKAGE_DESCRIPTION
    "Runs JAX MaxText pre-training on one or many GPU nodes (local, ssh, Slurm;
in Docker or Podman containers) and gates each run on performance and
correctness: a PASS/FAIL HTML report, results.json and JUnit XML. Fleet mode
scores every node against the fleet; certify runs preflight, node, link and
scaling tiers.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, openssh-client")
# libamdhip64-5: cvs-gpu-probe opens the HIP runtime at run time when a node has it (AMD nodes),
# so no Depends: a CPU or NVIDIA node never pays its ~255 MB.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "podman | docker.io, slurm-client, libamdhip64-5, man-db")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Homepage: only when the site has one to name (-DCVS_PACKAGE_HOMEPAGE=URL); none is made up.
set(CVS_PACKAGE_HOMEPAGE "" CACHE STRING "the .deb's Homepage field (none when empty)")
if(CVS_PACKAGE_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${CVS_PACKAGE_HOMEPAGE}")
endif()
include(CPack)
