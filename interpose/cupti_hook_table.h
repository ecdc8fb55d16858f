// The interposed CUPTI symbols: the subscription calls and the process-wide
// activity registration, so that gpuslack hears of a tool that comes after it (Note [One CUPTI, several tools]
// in timeline/coexistence.h). Not timed, not in the ledger, no session
// started: cupti_hooks.cc forwards each, unchanged, to the real libcupti
// (cuda/runtime_symbols.h, Library::kCupti) after the timeline has yielded
// when it must.
//
// Not to be included outside interpose/.
//
// A row: X(symbol, (parameters), (arguments), exclusive, name)
//   - symbol, parameters, arguments: exactly cupti_callbacks.h's (CUPTI 13.2);
//   - exclusive: an expression over the parameters, true when the caller
//     asks CUPTI to itself (v1 always; v2 unless allowMultipleSubscribers;
//     CUPTI treats absent params as a single subscriber's request);
//   - name: the subscriber's own name, or nullptr (then the calling
//     object's file name stands for it).
//
// CUPTI entry points not listed here pass through untouched.
#pragma once

#include <cupti_activity.h>
#include <cupti_callbacks.h>

#define GPUSLACK_CUPTI_HOOKS(X)                                                                        \
  X(cuptiSubscribe, (CUpti_SubscriberHandle * subscriber, CUpti_CallbackFunc callback, void* userdata), \
    (subscriber, callback, userdata), true, nullptr)                                                    \
  X(cuptiSubscribe_v2,                                                                                  \
    (CUpti_SubscriberHandle * subscriber, CUpti_CallbackFunc callback, void* userdata,                   \
     CUpti_SubscriberParams* pParams),                                                                  \
    (subscriber, callback, userdata, pParams), !(pParams && pParams->allowMultipleSubscribers),         \
    (pParams ? pParams->subscriberName : nullptr))                                                      \
  /* The process-wide buffer callbacks, which a tool may register without   */                        \
  /* subscribing (torch.profiler's Kineto does): they replace the ones      */                        \
  /* gpuslack registered where CUPTI allows one subscriber, so there it     */                        \
  /* yields first; where it shares CUPTI its own are per subscriber.        */                        \
  X(cuptiActivityRegisterCallbacks,                                                                     \
    (CUpti_BuffersCallbackRequestFunc funcBufferRequested, CUpti_BuffersCallbackCompleteFunc funcBufferCompleted), \
    (funcBufferRequested, funcBufferCompleted), false, nullptr)
