# What `cmake --install` places and what the Debian package (cpack -G DEB) holds. The idea not to
# miss: an operator's edits to /etc/gdrproxy are never overwritten (an existing config is kept by
# the install step, and the package marks its configs as conffiles, so dpkg keeps them on upgrade
# and leaves them until purge); nothing for tests is installed
# (the tests' tool, build/gdrproxy-testkit, is not an install target).
#   bin/gdrproxy, bin/gdrproxy-runtime (a link: the OCI runtime engines call), bin/gdr-loopback-relay
#   lib/gdrproxy/gdr-harness (`gdrproxy harness` by another name), lib/gdrproxy/slurm/gdr_spank.so
#     (the SPANK plugin's default harness path is /usr/lib/gdrproxy/gdr-harness)
#   /etc/gdrproxy/{agent.json,runtime.json} (no device granted until the operator says so)
#   lib/systemd/system/gdrproxy-agent.service, share/doc/gdrproxy/, share/gdrproxy/ (profiles,
#     policies, netns profiles, the NVIDIA allowlist), share/bash-completion/completions/gdrproxy
include(GNUInstallDirs)
set(GDRPROXY_ETC_DIR "/etc/gdrproxy" CACHE PATH "Where the configs go (absolute)")

install(TARGETS gdrproxy gdr-loopback-relay RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(CODE "file(CREATE_LINK gdrproxy \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/gdrproxy-runtime\" SYMBOLIC)")
install(PROGRAMS harness/gdr-harness DESTINATION lib/gdrproxy)
if(TARGET gdr_spank)
  # A plugin slurmstepd loads by the path plugstack.conf names, not a library of the loader's.
  install(TARGETS gdr_spank LIBRARY DESTINATION lib/gdrproxy/slurm)
endif()

# The agent's unit, running this install's binary (the prefix is the one of the install step:
# cpack installs under /usr).
install(CODE "
  file(READ \"${PROJECT_SOURCE_DIR}/configs/systemd/gdrproxy-agent.service\" unit)
  string(REPLACE \"/usr/local/bin/gdrproxy\" \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/gdrproxy\" unit \"\${unit}\")
  file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/gdrproxy-agent.service\" \"\${unit}\")
  message(STATUS \"Installing: \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/gdrproxy-agent.service\")")

# Configs: the defaults grant nothing; an existing file is the operator's and stays.
foreach(cfg agent.json runtime.json)
  install(CODE "
    set(dst \"\$ENV{DESTDIR}${GDRPROXY_ETC_DIR}/${cfg}\")
    if(EXISTS \"\${dst}\")
      message(STATUS \"Kept (the operator's): \${dst}\")
    else()
      file(INSTALL \"${PROJECT_SOURCE_DIR}/configs/install/${cfg}\" DESTINATION \"${GDRPROXY_ETC_DIR}\")
    endif()")
endforeach()
# The bash completion, made by the built binary from its own subcommand tree (cli/CMakeLists.txt);
# bash-completion loads it by the command's name. gdrproxy-runtime gets none: its words are the
# OCI runtime's (runc's), not gdrproxy's.
install(FILES ${GDRPROXY_BASH_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(DIRECTORY configs/policy configs/netns configs/agent configs/allowlists
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gdrproxy)
# The README beside docs/, as in the checkout, so that its links into docs/ lead there.
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
install(DIRECTORY deploy/kubernetes DESTINATION ${CMAKE_INSTALL_DOCDIR}/deploy)

# The Debian package: `cpack -G DEB` in the build directory (configure with
# -DCMAKE_INSTALL_PREFIX=/usr for the distribution's layout).
set(CPACK_PACKAGE_NAME gdrproxy)
set(CPACK_PACKAGE_VENDOR "gdrproxy")
set(CPACK_PACKAGE_CONTACT "gdrproxy maintainers <gdrproxy@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "RDMA and NVIDIA GPU devices for sandboxed containers at native speed")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "runc | crun")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/configs/install/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
