# tests/cuda/emu/mutants.cmake: kernel v3 (and v2 forward) with one synchronisation removed, run on the emulator,
# must FAIL (included by tests/cuda/CMakeLists.txt after cplab_kernel_emu_tests).
#
# What it is: at configure time each mutant is the kernel file with one statement cut (a literal
# text replaced by another), written to the build tree; an executable compiles the kernel's emu file
# against it (its directory first on the include path) with that kernel's cases, and a test
# `kernel_emulation_mutant_<name>` passes only when that executable fails: exit status
# not 0 and either doctest's FAILURE or the emulator's abort (cplab_emu: ...) in its output
# (emu/expect_failure.cmake). If the text to cut is no longer in the kernel (it was edited), the
# mutant's test fails, naming the text: a mutation test that cannot silently pass.
# What it is not: a general mutation tester (hand-picked cuts, the issue's list). A mutant whose
# cut leaves a variable unused keeps a `(void)x;` so it still compiles under -Werror. The test
# fails, naming the cause, when the mutant's executable is older than its source (a stale build).
# cplab_kernel_mutant(KERNEL NAME CUT KEEP): KERNEL v3 (cuda/attention_v3_fwd.cu, the cases of
# test_kernel_emu_v3.cpp; test kernel_emulation_mutant_NAME) or v2 (cuda/attention_v2_fwd.cu, the
# v2 cases of test_kernel_emu.cpp; test kernel_emulation_mutant_v2_NAME). The mutant's executable
# compiles the mutated kernel's emu file and the test cases and links the rest as built.
function(cplab_kernel_mutant kernel name cut keep)
  if(kernel STREQUAL "v3")
    set(_file attention_v3_fwd.cu)
    set(_emu_src ${_emu}/emu_v3.cpp)
    set(_cases ${_emu}/test_kernel_emu_v3.cpp)
    set(_other cplab_kernel_emu_v2_fwd)
    set(_id ${name})
  else()
    set(_file attention_v2_fwd.cu)
    set(_emu_src ${_emu}/emu_v2_fwd.cpp)
    set(_cases ${_emu}/test_kernel_emu.cpp)
    set(_other cplab_kernel_emu_v3)
    set(_id v2_${name})
  endif()
  set(_src ${_cuda}/${_file})
  set(_test kernel_emulation_mutant_${_id})
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/mutants/${_id})
  file(READ ${_src} _text)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_src})
  string(FIND "${_text}" "${cut}" _at)
  if(_at EQUAL -1)
    # WILL_FAIL on a command that succeeds: the test fails, with this message
    add_test(NAME ${_test} COMMAND ${CMAKE_COMMAND} -E echo "mutant ${_id}: the text to cut is not in ${_src}: ${cut}")
    set_tests_properties(${_test} PROPERTIES WILL_FAIL TRUE LABELS "cuda;host")
    return()
  endif()
  string(REPLACE "${cut}" "${keep}" _mutant "${_text}")
  file(WRITE ${_dir}/${_file}.new "${_mutant}")
  file(COPY_FILE ${_dir}/${_file}.new ${_dir}/${_file} ONLY_IF_DIFFERENT)
  set(_exe cplab_kernel_emu_mutant_${_id})
  add_executable(${_exe} ${_cases} ${_emu_src})
  target_include_directories(${_exe} BEFORE PRIVATE ${_dir})  # the mutant's kernel file first
  target_link_libraries(${_exe} PRIVATE cplab_kernel_emu_common ${_other})
  set_source_files_properties(${_emu_src} TARGET_DIRECTORY ${_exe} PROPERTIES COMPILE_OPTIONS "${_emu_kernel_flags}")
  add_test(NAME ${_test}
           COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${_exe}> "-DARGS=-tc=emulated kernel ${kernel}*"
                   -DSRC=${_dir}/${_file} -P ${_emu}/expect_failure.cmake)
  set_tests_properties(${_test} PROPERTIES LABELS "cuda;host" TIMEOUT 300)
endfunction()

# (a) a wgmma wait: S (of the first tile, of the next tile) read before its product lands; O's
# products never waited for
cplab_kernel_mutant(v3 wgmma_wait_s0 "    wgmma_wait<0>();  // S of the first tile\n" "")
cplab_kernel_mutant(v3 wgmma_wait_s "      wgmma_wait<1>();  // S of tile j + 1 has landed (the older group); O += P V may still run\n" "")
cplab_kernel_mutant(v3 wgmma_wait_o "      wgmma_wait<0>();  // O += P V of tile j has landed\n" "")
# (b) an mbarrier wait: a K/V stage, and Q, read before TMA has written it
cplab_kernel_mutant(v3 mbar_wait_kv "    mbar_wait(&bar[1 + ((j - t_begin) & 1)], static_cast<std::uint32_t>(((j - t_begin) >> 1) & 1));\n" "    (void)j;\n")
cplab_kernel_mutant(v3 mbar_wait_q "    mbar_wait(&bar[0], 0);\n" "")
# (c) the empty barrier, both sides: a consumer that never releases its stage (the loader's wait
# never ends: a deadlock), and a loader that refills a stage without waiting for its release
cplab_kernel_mutant(v3 empty_arrive "    mbar_arrive(&empty[stage]);" "    (void)stage;")
cplab_kernel_mutant(v3 empty_wait "        mbar_wait(&empty[stage], static_cast<std::uint32_t>((((j - t_begin) >> 1) & 1) ^ 1));\n" "")
# (d) the ping-pong's named barrier: a warpgroup that takes its turn without waiting for it leaves
# the turns unbalanced (a sync that never completes, or arrivals left on a barrier at the end)
cplab_kernel_mutant(v3 pingpong_sync "      named_barrier_sync(kTurn0 + wg, kConsumerThreads);\n      issue_s(s, stage ^ 1);" "      issue_s(s, stage ^ 1);")
cplab_kernel_mutant(v3 pingpong_last "    if (wg == 0) named_barrier_arrive(kTurn0 + 1, kConsumerThreads);" "    named_barrier_arrive(kTurn0 + 1, kConsumerThreads);")

# Kernel v2's forward (issue 23's FlashAttention-2 tiles):
# the barrier after a tile's last read of its buffer: without it a warp that runs ahead refills the
# buffer (the next tile but one) while the others still read it
cplab_kernel_mutant(v2 refill_sync "    __syncthreads();  // this buffer is refilled two tiles on\n" "")
# d 64: the barrier between Q's copies and the reads of its fragments into registers, before the
# loops (each thread waits for its own copies only)
cplab_kernel_mutant(v2 q_regs_sync "      cp_async_wait<1>();\n      __syncthreads();\n      for (int kk = 0; kk < D / 16; ++kk) load_q(qf[kk], kk);" "      cp_async_wait<1>();\n      for (int kk = 0; kk < D / 16; ++kk) load_q(qf[kk], kk);")
