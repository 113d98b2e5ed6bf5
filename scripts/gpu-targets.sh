# shellcheck shell=bash disable=SC2034  # sourced: the variables are its callers'
# gpu-targets.sh: THE list of the programs the GPU run builds and runs (sourced by scripts/gpu-results.sh
# and scripts/gpu-prebuilt.sh; the rehearsal test gets them through gpu-prebuilt.sh shadow).
#   gpu_targets   their CMake targets
#   gpu_programs  the same programs, as paths relative to the build folder (what the CTestTestfiles name)
# What it is not: the tests that run them (ctest -L cuda -LE host selects those: tests/cuda/CMakeLists.txt).
gpu_targets=(cplab_cuda_tests cplab_comm_tests cplab_cp_gpu_tests cplab-comm-check cplab-bench)
gpu_programs=(tests/cuda/cplab_cuda_tests tests/cuda/cplab_comm_tests tests/cuda/cplab_cp_gpu_tests
              cuda/comm/cplab-comm-check bench/cplab-bench)
