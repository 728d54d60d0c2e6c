# cmake --install (make install PREFIX=...): the libraries, headers, posemb.pc,
# the CLI, the Python module and the docs.
#   PREFIX/bin/posemb
#   PREFIX/LIBDIR/libposemb.so.MAJOR.MINOR (soname), libposemb.so, libposemb.a
#   PREFIX/LIBDIR/pkgconfig/posemb.pc
#   PREFIX/include/posemb/*.h (version.h generated)
#   PREFIX/lib/python3/dist-packages/posemb/ (POSEMB_PYTHON_DIR)
#   PREFIX/share/doc/posemb/
set(POSEMB_PYTHON_DIR "lib/python3/dist-packages" CACHE STRING
  "Where the Python module goes, relative to the prefix (Debian's python3 searches /usr/lib/python3/dist-packages)")

install(TARGETS posemb RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_BINARY_DIR}/public/libposemb.a DESTINATION ${CMAKE_INSTALL_LIBDIR}) # CMakeLists.txt: posemb_public_archive
install(TARGETS posemb_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Unspecified)
install(DIRECTORY include/posemb DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/posemb/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/posemb)

set(POSEMB_PC_DNNL "")
if(POSEMB_BF16 AND dnnl_FOUND)
  set(POSEMB_PC_DNNL " -ldnnl")
endif()
# The installed libposemb.a holds gemm_xsmm.c's calls into libxsmm, so a static link needs libxsmm.pc's flags.
set(POSEMB_PC_XSMM "")
if(POSEMB_USE_XSMM)
  set(POSEMB_PC_XSMM " libxsmm")
endif()
# posemb.pc is written at install time so that `cmake --install --prefix P` names P.
configure_file(cmake/posemb.pc.in ${PROJECT_BINARY_DIR}/posemb.pc.in @ONLY)
install(CODE "
  set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
  file(READ \"${PROJECT_BINARY_DIR}/posemb.pc.in\" pc)
  string(REPLACE \"${CMAKE_INSTALL_PREFIX}\" \"\${prefix}\" pc \"\${pc}\")
  file(WRITE \"${PROJECT_BINARY_DIR}/posemb.pc\" \"\${pc}\")
")
install(FILES ${PROJECT_BINARY_DIR}/posemb.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python module finds the library relative to itself (_install.py), so a
# prefix chosen at install time works.
configure_file(cmake/python_install.py.in ${PROJECT_BINARY_DIR}/python/_install.py @ONLY)
install(DIRECTORY python/posemb DESTINATION ${POSEMB_PYTHON_DIR} FILES_MATCHING PATTERN "*.py"
  PATTERN "__pycache__" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/python/_install.py DESTINATION ${POSEMB_PYTHON_DIR}/posemb)

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md" PATTERN "*.html"
  PATTERN "*.png" PATTERN "*.svg" PATTERN "*.json")
