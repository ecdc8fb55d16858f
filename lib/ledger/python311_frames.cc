// See python311_frames.h. Offsets are CPython 3.11's, x86-64 and aarch64
// (LP64) alike.
#include "ledger/python311_frames.h"

#include <cstdint>
#include <cstring>

namespace gpuslack {
namespace ledger {
namespace {

// PyThreadState: prev, next, interp, 7 ints (+ padding), then cframe.
constexpr size_t kThreadCFrame = 56;
// _PyCFrame: use_tracing (+ padding), then current_frame.
constexpr size_t kCFrameCurrentFrame = 8;
// _PyInterpreterFrame: f_func, f_globals, f_builtins, f_locals, f_code,
// frame_obj, previous, prev_instr, stacktop, is_entry, owner.
constexpr size_t kFrameCode = 32;
constexpr size_t kFramePrevious = 48;
constexpr size_t kFramePrevInstr = 56;
constexpr size_t kFrameOwner = 69;
constexpr char kOwnedByGenerator = 1;
// PyCodeObject.
constexpr size_t kCodeFirstLineNo = 72;
constexpr size_t kCodeFilename = 112;
constexpr size_t kCodeQualname = 128;
constexpr size_t kCodeLineTable = 136;
constexpr size_t kCodeFirstTraceable = 168;
constexpr size_t kCodeAdaptive = 184;  // the bytecode, 2-byte code units
// PyObject: ob_refcnt, ob_type. PyVarObject: + ob_size.
constexpr size_t kObjectType = 8;
constexpr size_t kVarObjectSize = 16;
// PyASCIIObject: state bits (interned:2, kind:3, compact:1, ascii:1,
// ready:1) at 32; a compact ASCII string's characters follow at 48.
constexpr size_t kUnicodeState = 32;
constexpr size_t kUnicodeAsciiData = 48;
constexpr unsigned kCompactAsciiReady = 0xE0;  // compact, ascii, ready
// PyBytesObject: the bytes at 32.
constexpr size_t kBytesData = 32;

const void* at(const void* base, size_t offset) {
  const void* p;
  std::memcpy(&p, static_cast<const char*>(base) + offset, sizeof(p));
  return p;
}
int int_at(const void* base, size_t offset) {
  int v;
  std::memcpy(&v, static_cast<const char*>(base) + offset, sizeof(v));
  return v;
}

const char* ascii(const void* str, const void* unicode_type) {
  if (str == nullptr || at(str, kObjectType) != unicode_type) return nullptr;
  unsigned state;
  std::memcpy(&state, static_cast<const char*>(str) + kUnicodeState, sizeof(state));
  if ((state & kCompactAsciiReady) != kCompactAsciiReady) return nullptr;
  return static_cast<const char*>(str) + kUnicodeAsciiData;
}

// The 3.11 location table (Objects/locations.md): entries of a first byte
// 1CCCCLLL (code C, L+1 code units) then code-dependent varints.
struct Reader {
  const unsigned char* p;
  const unsigned char* end;
  bool more() const { return p < end; }
  unsigned byte() { return p < end ? *p++ : 0; }
  unsigned varint() {
    unsigned b = byte(), v = b & 63, shift = 0;
    while ((b & 64) && p < end && shift < 30) {
      b = byte();
      shift += 6;
      v |= (b & 63) << shift;
    }
    return v;
  }
  int svarint() {
    unsigned u = varint();
    return (u & 1) ? -static_cast<int>(u >> 1) : static_cast<int>(u >> 1);
  }
};

// The line of code unit `index` of `code`, or -1.
int line_of(const void* code, long index) {
  const void* table = at(code, kCodeLineTable);
  if (table == nullptr) return -1;
  long size;
  std::memcpy(&size, static_cast<const char*>(table) + kVarObjectSize, sizeof(size));
  if (size <= 0 || size > (1 << 26)) return -1;
  const unsigned char* bytes = static_cast<const unsigned char*>(table) + kBytesData;
  Reader r{bytes, bytes + size};
  int line = int_at(code, kCodeFirstLineNo);
  long addr = 0;
  while (r.more()) {
    unsigned first = r.byte();
    if (!(first & 0x80)) return -1;  // not at an entry: give up
    unsigned kind = (first >> 3) & 15;
    long units = (first & 7) + 1;
    bool located = true;
    if (kind == 15) {
      located = false;
    } else if (kind == 14) {
      line += r.svarint();
      r.varint();
      r.varint();
      r.varint();
    } else if (kind == 13) {
      line += r.svarint();
    } else if (kind >= 10) {
      line += static_cast<int>(kind) - 10;
      r.byte();
      r.byte();
    } else {
      r.byte();
    }
    if (index < addr + units) return located ? line : -1;
    addr += units;
  }
  return -1;
}

}  // namespace

int read_python311_frames(const void* thread_state, const void* code_type, const void* unicode_type,
                          Python311Frame* frames, int max_frames) {
  if (thread_state == nullptr || code_type == nullptr || unicode_type == nullptr) return 0;
  const void* cframe = at(thread_state, kThreadCFrame);
  if (cframe == nullptr) return 0;
  const void* frame = at(cframe, kCFrameCurrentFrame);
  int n = 0;
  for (int hops = 0; frame != nullptr && n < max_frames && hops < 4096; ++hops, frame = at(frame, kFramePrevious)) {
    const void* code = at(frame, kFrameCode);
    if (code == nullptr || at(code, kObjectType) != code_type) break;
    uintptr_t instr = reinterpret_cast<uintptr_t>(at(frame, kFramePrevInstr));
    uintptr_t first = reinterpret_cast<uintptr_t>(code) + kCodeAdaptive;
    long index = (static_cast<long>(instr) - static_cast<long>(first)) / 2;
    char owner = *(static_cast<const char*>(frame) + kFrameOwner);
    // _PyFrame_IsIncomplete: a frame still setting up is not shown.
    if (owner != kOwnedByGenerator && index < int_at(code, kCodeFirstTraceable)) continue;
    const char* file = ascii(at(code, kCodeFilename), unicode_type);
    const char* function = ascii(at(code, kCodeQualname), unicode_type);
    if (file == nullptr || function == nullptr) break;
    frames[n++] = Python311Frame{file, function, index >= 0 ? line_of(code, index) : -1};
  }
  return n;
}

}  // namespace ledger
}  // namespace gpuslack
