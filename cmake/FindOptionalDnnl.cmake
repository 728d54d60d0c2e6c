# oneDNN (the optional bf16 products) is found through its CMake config, and a
# config can fail hard: Debian's calls find_package(OpenCL) as REQUIRED, which
# stops the whole configure when the OpenCL development files are missing. An
# optional dependency must never do that, so the config is first loaded in a
# child CMake; only a config that loads there is loaded here.
#
# Sets dnnl_FOUND (TRUE only for a loadable oneDNN 2.x, whose target is then
# DNNL::dnnl) and POSEMB_DNNL_REASON (why not, for the status line).
function(posemb_find_optional_dnnl)
  set(probe "${CMAKE_BINARY_DIR}/dnnl-probe")
  file(WRITE "${probe}/CMakeLists.txt"
    "cmake_minimum_required(VERSION 3.18)\n"
    "project(dnnl_probe LANGUAGES C)\n"
    "find_package(dnnl CONFIG REQUIRED)\n"
    "message(STATUS \"dnnl-version:\${dnnl_VERSION}:\")\n")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${probe}" -B "${probe}/build"
            "-DCMAKE_PREFIX_PATH=${CMAKE_PREFIX_PATH}" "-Ddnnl_DIR=${dnnl_DIR}"
            "-DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(REMOVE_RECURSE "${probe}")
  if(NOT rc EQUAL 0)
    # The first "Could NOT find X" (a missing dependency of the config) or else
    # whether the config itself is missing.
    string(REGEX MATCH "Could NOT find [^\n]*" why "${err}")
    if(why STREQUAL "" AND err MATCHES "dnnl-config.cmake")
      set(why "no oneDNN CMake config (Debian: libdnnl-dev)")
    elseif(why STREQUAL "")
      set(why "oneDNN's CMake config failed to load")
    else()
      set(why "oneDNN's CMake config failed: ${why}")
    endif()
    set(dnnl_FOUND FALSE PARENT_SCOPE)
    set(POSEMB_DNNL_REASON "${why}" PARENT_SCOPE)
    return()
  endif()
  string(REGEX MATCH "dnnl-version:([^:]*):" _ "${out}")
  if(CMAKE_MATCH_1 VERSION_GREATER_EQUAL 3)
    set(dnnl_FOUND FALSE PARENT_SCOPE)
    set(POSEMB_DNNL_REASON "oneDNN ${CMAKE_MATCH_1} found; posemb uses the 2.x API" PARENT_SCOPE)
    return()
  endif()
  find_package(dnnl CONFIG QUIET)
  set(dnnl_FOUND ${dnnl_FOUND} PARENT_SCOPE)
  set(dnnl_VERSION ${dnnl_VERSION} PARENT_SCOPE)
endfunction()
