// libFuzzer target over BlockManager op sequences (tests/lib/alloc, ctest
// alloc.fuzz_block_manager, built with clang's -fsanitize=fuzzer). Each
// input is a program: 3 bytes per op (an opcode and a 16-bit argument);
// after every op every invariant must hold, or the target aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "alloc/block_manager.h"

using gpuslack::alloc::BlockManager;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A 4 MiB small pool (Note [The small pool apart]): pages there first,
  // then in the large space.
  BlockManager m(36ull << 20, 4ull << 20);
  std::map<uint64_t, uint64_t> live;
  for (size_t i = 0; i + 3 <= size; i += 3) {
    uint8_t op = data[i];
    uint64_t arg = data[i + 1] | (uint64_t{data[i + 2]} << 8);
    if (op % 3 != 0 || live.empty()) {
      // Sizes from bytes to 16 MiB: the argument scaled by the opcode.
      uint64_t bytes = arg << (op % 9);
      // Opcodes with bit 7 set price the placement (Note [Placement by
      // cost]): 1 per 2 MiB granule whose index has its low bit set; bit 6
      // caps the price at 0.
      auto odd_granules = [](uint64_t offset, uint64_t n, uint64_t enough = BlockManager::kAnyCost) {
        uint64_t c = 0;
        for (uint64_t g = offset >> 21; g <= (offset + n - 1) >> 21 && c < enough; ++g) c += g & 1;
        return c;
      };
      uint64_t cap = op & 0x40 ? 0 : BlockManager::kAnyCost;
      // Bit 5 asks for granule edges (Note [Whole granules at granule edges]).
      std::optional<uint64_t> at = (op & 0x80) ? m.allocate(bytes, odd_granules, cap, op & 0x20) : m.allocate(bytes);
      if (at && (op & 0x80) && m.size_of(*at) > BlockManager::kSmallLimit && odd_granules(*at, m.size_of(*at)) > cap)
        std::abort();  // placed over its price
      if (at) {
        if (live.count(*at)) std::abort();  // handed out twice
        live[*at] = bytes;
      }
    } else {
      auto it = live.begin();
      std::advance(it, arg % live.size());
      if (m.release(it->first) != BlockManager::round_up(it->second)) std::abort();
      live.erase(it);
    }
    std::string err = m.check();
    if (!err.empty()) {
      std::fprintf(stderr, "invariant broken: %s\n", err.c_str());
      std::abort();
    }
  }
  for (auto& [offset, bytes] : live) m.release(offset);
  if (m.allocated() != 0 || m.largest_free() != m.capacity() - m.small_pool() ||
      m.small_free().total() != m.small_pool())
    std::abort();
  return 0;
}
