// The C library's dlsym, found by reading its dynamic symbol
// table (real_dl.h says why no lookup by name will do).
//
// Every function here is uninstrumented and calls no other function: a
// sanitizer runtime reaches them through interpose/dl_hooks.cc before its
// shadow memory and interceptors exist (real_dl.h). Loads and stores of the
// cached addresses are __atomic builtins for the same reason (std::atomic's
// members are functions of their own in a Debug build).
#include "cuda/real_dl.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <string>

#define GPUSLACK_UNINSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))

namespace gpuslack {
namespace cuda {
namespace {

void* g_dlsym = nullptr;

// One loaded object's dynamic symbol table.
struct Image {
  ElfW(Addr) base = 0;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Half)* versym = nullptr;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;
};

GPUSLACK_UNINSTRUMENTED bool same(const char* a, const char* b) {
  for (; *a == *b; ++a, ++b)
    if (*a == '\0') return true;
  return false;
}

GPUSLACK_UNINSTRUMENTED bool starts_with(const char* s, const char* prefix) {
  for (; *prefix; ++s, ++prefix)
    if (*s != *prefix) return false;
  return true;
}

GPUSLACK_UNINSTRUMENTED const char* base_name(const char* path) {
  const char* b = path;
  for (const char* p = path; *p; ++p)
    if (*p == '/') b = p + 1;
  return b;
}

// The dynamic loader relocates the address entries of the dynamic section
// in place on most targets, not on all: an entry below the load address is
// still an offset.
GPUSLACK_UNINSTRUMENTED ElfW(Addr) absolute(ElfW(Addr) base, ElfW(Addr) v) { return v < base ? v + base : v; }

GPUSLACK_UNINSTRUMENTED bool read_image(const link_map* m, Image* im) {
  if (!m->l_ld) return false;
  im->base = m->l_addr;
  for (const ElfW(Dyn)* d = m->l_ld; d->d_tag != DT_NULL; ++d) {
    ElfW(Addr) a = absolute(m->l_addr, d->d_un.d_ptr);
    switch (d->d_tag) {
      case DT_SYMTAB: im->symtab = reinterpret_cast<const ElfW(Sym)*>(a); break;
      case DT_STRTAB: im->strtab = reinterpret_cast<const char*>(a); break;
      case DT_VERSYM: im->versym = reinterpret_cast<const ElfW(Half)*>(a); break;
      case DT_GNU_HASH: im->gnu_hash = reinterpret_cast<const uint32_t*>(a); break;
      case DT_HASH: im->sysv_hash = reinterpret_cast<const uint32_t*>(a); break;
      default: break;
    }
  }
  return im->symtab && im->strtab && (im->gnu_hash || im->sysv_hash);
}

// Symbol `i` is a function called `name`, defined here at its default
// version (the one a program linked today binds to; not a compat version).
GPUSLACK_UNINSTRUMENTED bool is_default_function(const Image& im, uint32_t i, const char* name) {
  const ElfW(Sym)& s = im.symtab[i];
  if (s.st_shndx == SHN_UNDEF || s.st_value == 0 || (s.st_info & 0xf) != STT_FUNC) return false;
  if (im.versym && (im.versym[i] & 0x8000)) return false;
  return same(im.strtab + s.st_name, name);
}

GPUSLACK_UNINSTRUMENTED void* find_in(const Image& im, const char* name) {
  if (im.gnu_hash) {
    uint32_t h = 5381;
    for (const char* c = name; *c; ++c) h = h * 33 + static_cast<unsigned char>(*c);
    const uint32_t nbuckets = im.gnu_hash[0], symoffset = im.gnu_hash[1], bloom_words = im.gnu_hash[2];
    if (nbuckets == 0) return nullptr;
    const uint32_t* buckets = reinterpret_cast<const uint32_t*>(
        reinterpret_cast<const ElfW(Addr)*>(im.gnu_hash + 4) + bloom_words);
    const uint32_t* chain = buckets + nbuckets;
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; ++i) {
      uint32_t h2 = chain[i - symoffset];
      if ((h | 1) == (h2 | 1) && is_default_function(im, i, name))
        return reinterpret_cast<void*>(im.base + im.symtab[i].st_value);
      if (h2 & 1) break;
    }
    return nullptr;
  }
  uint32_t h = 0;
  for (const char* c = name; *c; ++c) {
    h = (h << 4) + static_cast<unsigned char>(*c);
    uint32_t g = h & 0xf0000000u;
    if (g) h ^= g >> 24;
    h &= ~g;
  }
  const uint32_t nbucket = im.sysv_hash[0];
  if (nbucket == 0) return nullptr;
  const uint32_t* bucket = im.sysv_hash + 2;
  const uint32_t* chain = bucket + nbucket;
  for (uint32_t i = bucket[h % nbucket]; i != 0; i = chain[i])
    if (is_default_function(im, i, name)) return reinterpret_cast<void*>(im.base + im.symtab[i].st_value);
  return nullptr;
}

GPUSLACK_UNINSTRUMENTED void find_dlsym() {
  for (const link_map* m = _r_debug.r_map; m; m = m->l_next) {
    if (!m->l_name) continue;
    const char* b = base_name(m->l_name);
    if (!starts_with(b, "libc.so") && !starts_with(b, "libdl.so")) continue;
    Image im;
    if (!read_image(m, &im)) continue;
    if (void* s = find_in(im, "dlsym")) {
      __atomic_store_n(&g_dlsym, s, __ATOMIC_RELEASE);
      return;
    }
  }
}

}  // namespace

GPUSLACK_UNINSTRUMENTED DlsymFn libc_dlsym() {
  void* p = __atomic_load_n(&g_dlsym, __ATOMIC_ACQUIRE);
  if (!p) {
    find_dlsym();
    p = __atomic_load_n(&g_dlsym, __ATOMIC_ACQUIRE);
  }
  return reinterpret_cast<DlsymFn>(p);
}

void* real_dlsym(void* handle, const char* name) {
  DlsymFn f = libc_dlsym();
  return f ? f(handle, name) : nullptr;
}

std::string loader_string(const char* s) {  // See Note [Strings the loader owns]
  if (!s) return {};
  GPUSLACK_LOADER_READS_BEGIN();
  std::string copy(s);
  GPUSLACK_LOADER_READS_END();
  return copy;
}

}  // namespace cuda
}  // namespace gpuslack
