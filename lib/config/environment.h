// The process environment, as gpuslack may read it: every variable gpuslack
// reads (GPUSLACK_CONF, GPUSLACK_OUTPUT, the rank variables, NCCL_*) goes
// through here.
//
// Note [Secure execution] (options.h says what such a process gets): a
// process started with AT_SECURE set (a setuid or setgid program, file
// capabilities, an LSM's say) runs with more privilege than the user who
// started it and who chose its environment. There environment_variable()
// and environment_block() answer null: gpuslack reads nothing a less
// privileged user wrote. glibc's own secure_getenv makes the same
// decision, from the same flag.
//
// Thread safety: any thread; the answers are those of getenv/environ (do
// not call while another thread changes the environment).
#pragma once

namespace gpuslack {

// True when the kernel started this process with AT_SECURE.
bool secure_execution();

// getenv(name), or null in a secure process.
const char* environment_variable(const char* name);

// environ ("NAME=value" strings, null-terminated), or null in a secure
// process.
const char* const* environment_block();

}  // namespace gpuslack
