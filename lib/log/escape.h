// Input quoted in a log line, made safe to print: one line, no control
// byte, nothing a terminal would act on.
//
// Note [Escaped input]: gpuslack's log lines quote what others wrote
// (GPUSLACK_CONF's keys and values, paths from the environment, reasons
// that embed them). Quoted raw, a newline in GPUSLACK_CONF forged a second
// log line of the user's choosing, and an escape sequence reached the
// terminal. escape_bytes() writes \n, \r and \t as such and every other
// byte below 0x20, 0x7f (DEL) and every byte from 0x80 (so no C1 control
// and no partial UTF-8 sequence) as \xNN; printable ASCII, backslash
// included, is kept. It is idempotent (its output has nothing left to
// escape), so text escaped where it is quoted can pass through the log's
// sink, which escapes each whole message again (log_sink.h), unchanged.
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace gpuslack {
namespace log {

std::string escape_bytes(std::string_view text);

}  // namespace log
}  // namespace gpuslack
