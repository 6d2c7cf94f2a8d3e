# Writes OUT (a C++ source defining croq::build_info::git_sha()) with the commit the source tree is
# at, "-dirty" added when tracked files differ from it. Run at every build (target croq_git_sha);
# the file is replaced only when its text changes, so an unchanged commit rebuilds nothing.
# Usage: cmake -DSRC=<source dir> -DOUT=<file.cpp> -P git_sha.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
  OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT sha)
  set(sha "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
    OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(dirty)
    set(sha "${sha}-dirty")
  endif()
endif()
set(text "// Generated at build time by src/cmake/git_sha.cmake: the commit croq was built from.\n#include \"croq/util/build_info.hpp\"\nnamespace croq::build_info {\nconst char* git_sha() { return \"${sha}\"; }\n}  // namespace croq::build_info\n")
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
