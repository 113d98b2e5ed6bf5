# expect_exit.cmake: a ctest helper (bench/ and cuda/comm/ argument errors). Runs EXE with ARGS
# ('|'-separated) and fails unless the exit status is CODE and stdout + stderr contain the literal text TEXT.
#   cmake -DEXE=prog "-DARGS=a|b|c" -DCODE=2 "-DTEXT=message" -P expect_exit.cmake
# What it is not: a general test driver (one command, one status, one substring).
string(REPLACE "|" ";" _args "${ARGS}")
execute_process(COMMAND "${EXE}" ${_args} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
message("${EXE} ${_args}\n-> exit status ${_rc}\n${_out}${_err}")
if(NOT "${_rc}" STREQUAL "${CODE}")
  message(FATAL_ERROR "expected exit status ${CODE}, got ${_rc}")
endif()
string(FIND "${_out}${_err}" "${TEXT}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "the output does not contain: ${TEXT}")
endif()
