// hooked_calls(): every hooked call (ledger/api_call.h's ApiCall), in the
// hook tables' order, for the C API's labels (gpuslack_labels_json: which
// calls synchronize the device). Static storage; never changes.
#pragma once

#include "ledger/api_call.h"

namespace gpuslack {
namespace interpose {

struct HookedCalls {
  const ApiCall* const* calls;
  int count;
};
HookedCalls hooked_calls();

}  // namespace interpose
}  // namespace gpuslack
