# tests/cuda/emu/mutants.cmake: kernel v3 (and v2 forward) with one synchronisation removed, run on the emulator,
# must FAIL (included by tests/cuda/CMakeLists.txt after cplab_kernel_emu_tests).
#
# What it is: at configure time each mutant is cuda/attention_v3_fwd.cu with one statement cut (a
# literal text replaced by another), written to the build tree; an executable compiles emu/emu_v3.cpp
# against it (its directory first on the include path) with the v3 cases (test_kernel_emu_v3.cpp),
# and a test `kernel_emulation_mutant_<name>` passes only when that executable fails: exit status
# not 0 and either doctest's FAILURE or the emulator's abort (cplab_emu: ...) in its output
# (emu/expect_failure.cmake). If the text to cut is no longer in the kernel (it was edited), the
# mutant's test fails, naming the text: a mutation test that cannot silently pass.
# What it is not: a general mutation tester (hand-picked cuts, the issue's list). A mutant whose
# cut leaves a variable unused keeps a `(void)x;` so it still compiles under -Werror. The test
# fails, naming the cause, when the mutant's executable is older than its source (a stale build).
set(_v3_src ${_cuda}/attention_v3_fwd.cu)
file(READ ${_v3_src} _v3)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_v3_src})

function(cplab_v3_mutant name cut keep)
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/mutants/${name})
  string(FIND "${_v3}" "${cut}" _at)
  if(_at EQUAL -1)
    add_test(NAME kernel_emulation_mutant_${name}
             COMMAND ${CMAKE_COMMAND} -E echo "mutant ${name}: the text to cut is not in ${_v3_src}: ${cut}")
    set_tests_properties(kernel_emulation_mutant_${name} PROPERTIES WILL_FAIL TRUE LABELS cuda)
    # WILL_FAIL on a command that succeeds: the test fails, with the message above
    return()
  endif()
  string(REPLACE "${cut}" "${keep}" _mutant "${_v3}")
  file(WRITE ${_dir}/attention_v3_fwd.cu.new "${_mutant}")
  file(COPY_FILE ${_dir}/attention_v3_fwd.cu.new ${_dir}/attention_v3_fwd.cu ONLY_IF_DIFFERENT)
  add_executable(cplab_kernel_emu_mutant_${name} ${_emu}/test_kernel_emu_v3.cpp ${_emu}/emu_v3.cpp)
  target_include_directories(cplab_kernel_emu_mutant_${name} BEFORE PRIVATE ${_dir})
  target_link_libraries(cplab_kernel_emu_mutant_${name} PRIVATE cplab_kernel_emu_common)
  set_source_files_properties(${_emu}/emu_v3.cpp TARGET_DIRECTORY cplab_kernel_emu_mutant_${name}
                              PROPERTIES COMPILE_OPTIONS "-Wno-unknown-pragmas;-Wno-sign-compare")
  add_test(NAME kernel_emulation_mutant_${name}
           COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:cplab_kernel_emu_mutant_${name}> "-DARGS=-tc=emulated kernel v3*"
                   -DSRC=${_dir}/attention_v3_fwd.cu -P ${_emu}/expect_failure.cmake)
  set_tests_properties(kernel_emulation_mutant_${name} PROPERTIES LABELS cuda TIMEOUT 300)
endfunction()

# (a) a wgmma wait: S (of the first tile, of the next tile) read before its product lands; O's
# products never waited for
cplab_v3_mutant(wgmma_wait_s0 "    wgmma_wait<0>();  // S of the first tile\n" "")
cplab_v3_mutant(wgmma_wait_s "      wgmma_wait<1>();  // S of tile j + 1 has landed (the older group); O += P V may still run\n" "")
cplab_v3_mutant(wgmma_wait_o "      wgmma_wait<0>();  // O += P V of tile j has landed\n" "")
# (b) an mbarrier wait: a K/V stage, and Q, read before TMA has written it
cplab_v3_mutant(mbar_wait_kv "    mbar_wait(&bar[1 + ((j - t_begin) & 1)], static_cast<std::uint32_t>(((j - t_begin) >> 1) & 1));\n" "    (void)j;\n")
cplab_v3_mutant(mbar_wait_q "    mbar_wait(&bar[0], 0);\n" "")
# (c) the empty barrier, both sides: a consumer that never releases its stage (the loader's wait
# never ends: a deadlock), and a loader that refills a stage without waiting for its release
cplab_v3_mutant(empty_arrive "    mbar_arrive(&empty[stage]);" "    (void)stage;")
cplab_v3_mutant(empty_wait "        mbar_wait(&empty[stage], static_cast<std::uint32_t>((((j - t_begin) >> 1) & 1) ^ 1));\n" "")
# (d) the ping-pong's named barrier: a warpgroup that takes its turn without waiting for it leaves
# the turns unbalanced (a sync that never completes, or arrivals left on a barrier at the end)
cplab_v3_mutant(pingpong_sync "      named_barrier_sync(kTurn0 + wg, kConsumerThreads);\n      issue_s(s, stage ^ 1);" "      issue_s(s, stage ^ 1);")
cplab_v3_mutant(pingpong_last "    if (wg == 0) named_barrier_arrive(kTurn0 + 1, kConsumerThreads);" "    named_barrier_arrive(kTurn0 + 1, kConsumerThreads);")

# Kernel v2's forward the same way (cuda/attention_v2_fwd.cu; issue 23's FlashAttention-2 tiles):
# the executable is cplab_kernel_emu_common's sources with the mutant's attention_v2_fwd.cu first on
# the include path of emu_v2_fwd.cpp, and the cases of test_kernel_emu.cpp (v2 fwd + bwd).
set(_v2_src ${_cuda}/attention_v2_fwd.cu)
file(READ ${_v2_src} _v2)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_v2_src})

function(cplab_v2_mutant name cut keep)
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/mutants/v2_${name})
  string(FIND "${_v2}" "${cut}" _at)
  if(_at EQUAL -1)
    add_test(NAME kernel_emulation_mutant_v2_${name}
             COMMAND ${CMAKE_COMMAND} -E echo "mutant v2_${name}: the text to cut is not in ${_v2_src}: ${cut}")
    set_tests_properties(kernel_emulation_mutant_v2_${name} PROPERTIES WILL_FAIL TRUE LABELS cuda)
    return()
  endif()
  string(REPLACE "${cut}" "${keep}" _mutant "${_v2}")
  file(WRITE ${_dir}/attention_v2_fwd.cu.new "${_mutant}")
  file(COPY_FILE ${_dir}/attention_v2_fwd.cu.new ${_dir}/attention_v2_fwd.cu ONLY_IF_DIFFERENT)
  set(_exe cplab_kernel_emu_mutant_v2_${name})
  add_executable(${_exe} ${_emu}/test_kernel_emu.cpp ${_emu}/emu_main.cpp ${_emu}/emu_v1.cpp ${_emu}/emu_v2_fwd.cpp
                 ${_emu}/emu_v2_bwd.cpp ${_emu}/emu_sinks.cpp ${_emu}/emu_v3.cpp ${_cuda}/tensor_map.cpp)
  target_compile_definitions(${_exe} PRIVATE CPLAB_EMULATE CPLAB_EMULATION_HEADER="device_emulation.h")
  target_include_directories(${_exe} BEFORE PRIVATE ${_dir})
  target_include_directories(${_exe} PRIVATE ${_emu} ${CMAKE_CURRENT_SOURCE_DIR} ${_cuda})
  target_link_libraries(${_exe} PRIVATE cplab_ref CUDA::cudart_static doctest::doctest cplab_warnings)
  set_source_files_properties(${_emu}/emu_v1.cpp ${_emu}/emu_v2_fwd.cpp ${_emu}/emu_v2_bwd.cpp ${_emu}/emu_sinks.cpp
                              ${_emu}/emu_v3.cpp TARGET_DIRECTORY ${_exe}
                              PROPERTIES COMPILE_OPTIONS "-Wno-unknown-pragmas;-Wno-sign-compare")
  add_test(NAME kernel_emulation_mutant_v2_${name}
           COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${_exe}> "-DARGS=-tc=emulated kernel v2*"
                   -DSRC=${_dir}/attention_v2_fwd.cu -P ${_emu}/expect_failure.cmake)
  set_tests_properties(kernel_emulation_mutant_v2_${name} PROPERTIES LABELS cuda TIMEOUT 300)
endfunction()

# the barrier after a tile's last read of its buffer: without it a warp that runs ahead refills the
# buffer (the next tile but one) while the others still read it
cplab_v2_mutant(refill_sync "    __syncthreads();  // this buffer is refilled two tiles on\n" "")
# d 64: the barrier between Q's copies and the reads of its fragments into registers, before the
# loops (each thread waits for its own copies only)
cplab_v2_mutant(q_regs_sync "      cp_async_wait<1>();\n      __syncthreads();\n      for (int kk = 0; kk < D / 16; ++kk) load_q(qf[kk], kk);" "      cp_async_wait<1>();\n      for (int kk = 0; kk < D / 16; ++kk) load_q(qf[kk], kk);")
