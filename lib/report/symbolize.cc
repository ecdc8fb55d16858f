// See symbolize.h. Report time only: allocating and the loader's lock are
// fine here, unlike in ledger/backtrace.cc, which captured these addresses.
#include "report/symbolize.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ledger/python_frames.h"

namespace gpuslack {
namespace report {
namespace {

// The object (load base) that holds this file's code: libgpuslack.so when
// preloaded, the test executable in unit tests.
const void* own_object_base() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&own_object_base), &info) == 0) return nullptr;
  return info.dli_fbase;
}

// dladdr of the byte before the return address: inside the call instruction,
// so inside the calling function even when the call is its last instruction.
bool lookup(const void* frame, Dl_info* info) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(frame);
  if (addr <= 1) return false;
  *info = Dl_info{};
  return dladdr(reinterpret_cast<const void*>(addr - 1), info) != 0;
}

// The main program's dli_fname is empty (glibc names it ""): ask /proc.
std::string main_program_name() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "??";
  path[n] = '\0';
  return path;
}

std::string module_name(const char* fname) {
  std::string path = (fname != nullptr && fname[0] != '\0') ? std::string(fname) : main_program_name();
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string demangle(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string out(demangled);
  std::free(demangled);
  return out;
}

std::string describe(const void* frame) {
  Dl_info info{};
  if (!lookup(frame, &info)) return "??";
  uintptr_t addr = reinterpret_cast<uintptr_t>(frame);
  std::string module = module_name(info.dli_fname);
  if (info.dli_sname != nullptr && info.dli_saddr != nullptr) {
    uintptr_t offset = addr - reinterpret_cast<uintptr_t>(info.dli_saddr);
    return absl::StrCat(demangle(info.dli_sname), "+0x", absl::Hex(offset), " (", module, ")");
  }
  uintptr_t offset = addr - reinterpret_cast<uintptr_t>(info.dli_fbase);
  return absl::StrCat(module, "+0x", absl::Hex(offset));
}

// The native frames, less the leading ones in the dropped object.
std::vector<std::string> native_frames(const std::vector<void*>& frames, const void* drop_object_base);

}  // namespace

std::vector<std::string> symbolize(const std::vector<void*>& frames) {
  return symbolize(frames, own_object_base());
}

std::vector<std::string> symbolize(const std::vector<void*>& frames, const void* drop_object_base) {
  std::vector<std::string> python;
  std::vector<void*> native;
  native.reserve(frames.size());
  for (void* frame : frames) {
    std::string text;
    if (ledger::python_frame_text(frame, &text)) {
      python.push_back(text + " (python)");
    } else if (!ledger::is_python_frame(frame)) {
      native.push_back(frame);
    }
  }
  std::vector<std::string> out = native_frames(native, drop_object_base);
  out.insert(out.begin(), python.begin(), python.end());
  return out;
}

namespace {
std::vector<std::string> native_frames(const std::vector<void*>& frames, const void* drop_object_base) {
  size_t first = 0;
  if (drop_object_base != nullptr) {
    for (; first < frames.size(); ++first) {
      Dl_info info{};
      if (!lookup(frames[first], &info) || info.dli_fbase != drop_object_base) break;
    }
  }
  std::vector<std::string> out;
  out.reserve(frames.size() - first);
  for (size_t i = first; i < frames.size(); ++i) out.push_back(describe(frames[i]));
  return out;
}
}  // namespace

}  // namespace report
}  // namespace gpuslack
