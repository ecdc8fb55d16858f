# Real PyTorch on the simulated device (torch_sim.py; ctest label `torch`):
# the pinned torch that scripts/torch-env.sh installs into a cache outside
# the clone (scripts/test.sh runs it first). Release builds only: sanitizer
# builds need not load torch. A missing torch fails the tests, saying how to
# install it; none skips.
if(GPUSLACK_SANITIZE STREQUAL "" AND CMAKE_BUILD_TYPE STREQUAL "Release")
  set(GPUSLACK_TORCH_PYTHON "" CACHE FILEPATH "Python of the pinned torch (empty: where scripts/torch-env.sh puts it)")
  set(_torch_python ${GPUSLACK_TORCH_PYTHON})
  if(NOT _torch_python)
    execute_process(COMMAND ${PROJECT_SOURCE_DIR}/scripts/torch-env.sh --path
                    OUTPUT_VARIABLE _torch_python OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  list(GET CUDAToolkit_INCLUDE_DIRS 0 _cuda_include)
  foreach(what symbols smoke timeline)
    add_test(NAME torch.${what}
      COMMAND ${CMAKE_COMMAND} -E env
        TORCH_PYTHON=${_torch_python} SIMCUDA_DIR=${GPUSIM_DIR} GPUSLACK_LIBRARY=$<TARGET_FILE:gpuslack>
        CUDA_INCLUDE_DIR=${_cuda_include} PYTHONDONTWRITEBYTECODE=1
        ${_torch_python} ${CMAKE_CURRENT_SOURCE_DIR}/torch_sim.py ${what})
    set_tests_properties(torch.${what} PROPERTIES LABELS "torch;python" TIMEOUT 600)
  endforeach()
  # The peer benchmark's command (scripts/bench-peers.sh, bench/replay/peers.py)
  # on one small minimalloc-format trace, so it cannot rot: torch's allocator
  # default and expandable beside gpuslack's, and the cached pair.
  # With a PASS_REGULAR_EXPRESSION ctest ignores the exit status: the
  # FAIL_REGULAR_EXPRESSION catches what a failed step prints instead.
  if(GPUSLACK_BUILD_BENCH)  # bench/ (trace_replay) is added after tests/
    add_test(NAME torch.bench_peers
      COMMAND ${CMAKE_COMMAND} -E env PYTHONDONTWRITEBYTECODE=1
        /usr/bin/python3 ${PROJECT_SOURCE_DIR}/bench/replay/peers.py --build ${CMAKE_BINARY_DIR}
        --torch-python ${_torch_python} --traces ${PROJECT_SOURCE_DIR}/tests/bench/peers_small.csv
        --pairs 2000 --rounds 1 --no-alloc-bench)
    set_tests_properties(torch.bench_peers PROPERTIES LABELS "torch;bench" TIMEOUT 300
      PASS_REGULAR_EXPRESSION "Cached alloc\\+free pair" FAIL_REGULAR_EXPRESSION "FAILED|failed \\(exit|Traceback")
    # The pressure table (peers.py --pressure) on one small trace, torch's
    # two allocators beside gpuslack's: every cell a size, none "> 4x"
    # (CMake's regular expressions have no {3}).
    add_test(NAME torch.bench_pressure
      COMMAND ${CMAKE_COMMAND} -E env PYTHONDONTWRITEBYTECODE=1
        /usr/bin/python3 ${PROJECT_SOURCE_DIR}/bench/replay/peers.py --pressure --build ${CMAKE_BINARY_DIR}
        --torch-python ${_torch_python} --traces ${PROJECT_SOURCE_DIR}/tests/bench/pressure_small.csv)
    set_tests_properties(torch.bench_pressure PROPERTIES LABELS "torch;bench" TIMEOUT 600
      PASS_REGULAR_EXPRESSION "\\| pressure_small [^|]*\\| 100 MiB \\| [0-9]+ MiB \\([0-9.]+x\\) \\| [0-9]+ MiB \\([0-9.]+x\\) \\| [0-9]+ MiB \\([0-9.]+x\\) \\|"
      FAIL_REGULAR_EXPRESSION "failed \\(exit|Traceback|hung|answered")
    # The recorder of real models' traces (bench/replay/record_torch.py) on
    # its tiny model, with real torch on the simulated device; the trace
    # converted and replayed through gpuslack (tests/bench/record_torch_test.py).
    add_test(NAME torch.record_traces
      COMMAND ${CMAKE_COMMAND} -E env PYTHONDONTWRITEBYTECODE=1
        TORCH_PYTHON=${_torch_python} BUILD_DIR=${CMAKE_BINARY_DIR}
        /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tests/bench/record_torch_test.py)
    set_tests_properties(torch.record_traces PROPERTIES LABELS "torch;bench" TIMEOUT 300)
  endif()
  # The GPU check's torch part (tests/gpu/torch_allocators.py: a small
  # transformer trained under torch's default and expandable allocators,
  # gpuslack.torch.use() and LD_PRELOAD) end to end on the simulated device
  # with small sizes, so that on a real GPU it is an already tested script.
  # Losses are not compared there (nothing is computed); the table must come.
  add_test(NAME torch.gpu_script
    COMMAND ${CMAKE_COMMAND} -E env
      LD_LIBRARY_PATH=${GPUSIM_DIR} GPUSLACK_LIBRARY=$<TARGET_FILE:gpuslack> PYTHONDONTWRITEBYTECODE=1
      PYTHONWARNINGS=ignore::UserWarning
      ${_torch_python} ${PROJECT_SOURCE_DIR}/tests/gpu/torch_allocators.py
      --steps 5 --warmup 2 --batch 2 --min-len 16 --max-len 64 --d-model 64 --layers 2 --heads 4 --vocab 256
      --timeout 60)
  set_tests_properties(torch.gpu_script PROPERTIES LABELS "torch;python" TIMEOUT 300
    PASS_REGULAR_EXPRESSION "every way ran on the simulated device"
    FAIL_REGULAR_EXPRESSION "gpusim: unanswered|Traceback")

  # gpuslack under real torch (under_torch/run.py): use(), LD_PRELOAD under
  # torch's allocators, a training loop, re-forked workers, the launcher.
  foreach(what use preload train refork launcher pyframes share)
    add_test(NAME torch.gpuslack.${what}
      COMMAND ${CMAKE_COMMAND} -E env
        TORCH_PYTHON=${_torch_python} SIMCUDA_DIR=${GPUSIM_DIR} GPUSLACK_LIBRARY=$<TARGET_FILE:gpuslack>
        PYTHONDONTWRITEBYTECODE=1
        ${_torch_python} ${CMAKE_CURRENT_SOURCE_DIR}/under_torch/run.py ${what})
    set_tests_properties(torch.gpuslack.${what} PROPERTIES LABELS "torch;python" TIMEOUT 300)
  endforeach()

  # DistributedDataParallel over NCCL across 4 processes (under_torch/ddp_run.py):
  # python -m gpuslack run -- torchrun --standalone --nproc_per_node 4 ddp.py
  # (docs/deploy.md's torchrun block, read from the page),
  # each rank's collectives in its summary with NCCL's algorithm and protocol
  # per row (--algo-proto: from gpuslack's NCCL profiler plugin), the 4
  # merged by gpuslack merge.
  add_test(NAME torch.ddp
    COMMAND ${CMAKE_COMMAND} -E env
      TORCH_PYTHON=${_torch_python} SIMCUDA_DIR=${GPUSIM_DIR} GPUSLACK_LIBRARY=$<TARGET_FILE:gpuslack>
      PYTHONDONTWRITEBYTECODE=1
      ${_torch_python} ${CMAKE_CURRENT_SOURCE_DIR}/under_torch/ddp_run.py --algo-proto)
  set_tests_properties(torch.ddp PROPERTIES LABELS "torch;python" TIMEOUT 300)
endif()
