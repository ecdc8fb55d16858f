# GPUSLACK_SANITIZE=address: ASan + UBSan; =thread: TSan. Applied to every
# target, so the simulated device and the tests are instrumented too.
if(GPUSLACK_SANITIZE STREQUAL "address")
  set(_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
elseif(GPUSLACK_SANITIZE STREQUAL "thread")
  set(_san -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT GPUSLACK_SANITIZE STREQUAL "")
  message(FATAL_ERROR "GPUSLACK_SANITIZE must be empty, 'address' or 'thread', not '${GPUSLACK_SANITIZE}'")
endif()
if(_san)
  add_compile_options(${_san} -g)
  add_link_options(${_san})
endif()
