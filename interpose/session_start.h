// ensure_session(): starts gpuslack's session as the first hooked call
// would (session/session.h). For entry points that are not hooks but may
// be a process's first contact with gpuslack: the C API's allocator, which
// PyTorch loads with dlopen, without LD_PRELOAD.
#pragma once

namespace gpuslack {
namespace interpose {

void ensure_session();

}  // namespace interpose
}  // namespace gpuslack
