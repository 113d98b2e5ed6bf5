# expect_failure.cmake: a ctest helper for the emulated kernel mutants (mutants.cmake). Runs EXE with
# ARGS ('|'-separated) and passes only if it FAILS: exit status not 0 and its output shows a failed
# doctest run ("Status: FAILURE!") or an emulator abort ("cplab_emu: "), so a mutant that does not
# start at all (missing executable, bad arguments) does not count as caught.
# With -DSRC=file (the mutant's source), an executable older than SRC (a stale build: the mutant's
# cut changed and its target was not rebuilt, or its rebuild failed) fails the test instead of
# being run.
#   cmake -DEXE=prog "-DARGS=a|b" [-DSRC=file] -P expect_failure.cmake
if(SRC AND EXISTS "${EXE}" AND "${SRC}" IS_NEWER_THAN "${EXE}")
  message(FATAL_ERROR "${EXE} is older than its source ${SRC}: build the mutant targets first (a stale mutant proves nothing)")
endif()
string(REPLACE "|" ";" _args "${ARGS}")
execute_process(COMMAND "${EXE}" ${_args} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
message("${EXE} ${_args}\n-> exit status ${_rc}\n${_out}${_err}")
if("${_rc}" STREQUAL "0")
  message(FATAL_ERROR "the mutant passed: the emulation did not catch the missing synchronisation")
endif()
string(FIND "${_out}${_err}" "Status: FAILURE!" _failed)
string(FIND "${_out}${_err}" "cplab_emu: " _aborted)
if(_failed EQUAL -1 AND _aborted EQUAL -1)
  message(FATAL_ERROR "the mutant failed, but not by a failed check or an emulator abort (exit status ${_rc})")
endif()
message("caught: the mutant fails")
