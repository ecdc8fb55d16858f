// Keeping the N largest of something, by a key: the few threads that lost
// most (ledger/exited_threads.h), the call sites that blocked longest
// (report/summary.cc), the pageable-copy sites that moved most
// (report/staging.cc).
//
// Two shapes of the same selection:
//   - sort_largest_first / keep_largest: everything is at hand; sort it by
//     key, largest first, ties in their original order (a stable sort, so
//     the caller's order is the tie-break), and keep the first n.
//   - offer_to_top: items arrive one at a time into a vector of at most n
//     (memory that does not grow with the items offered). An item is kept
//     while there is room, or when its key is strictly larger than the
//     least kept one (the first of them on a tie), which then leaves; what
//     leaves (or the item itself, when not kept) is handed back so the
//     caller can fold it into a remainder.
//
// `key(const T&)` returns something ordered (an integer, a double).
//
// Thread safety: none; plain functions on the caller's vectors.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace gpuslack {

// Stable-sorts `items` by key, largest first.
template <typename T, typename Key>
void sort_largest_first(std::vector<T>& items, Key key) {
  std::stable_sort(items.begin(), items.end(), [&](const T& a, const T& b) { return key(a) > key(b); });
}

// sort_largest_first, then drops all but the first `n`.
template <typename T, typename Key>
void keep_largest(std::vector<T>& items, size_t n, Key key) {
  sort_largest_first(items, key);
  if (items.size() > n) items.erase(items.begin() + static_cast<std::ptrdiff_t>(n), items.end());
}

// Offers `item` to `top`, which holds at most `n` (in no particular order).
// Returns what is left out: nothing, `item`, or the kept item it replaced.
template <typename T, typename Key>
std::optional<T> offer_to_top(std::vector<T>& top, size_t n, T item, Key key) {
  if (top.size() < n) {
    top.push_back(std::move(item));
    return std::nullopt;
  }
  if (top.empty()) return item;
  auto least = std::min_element(top.begin(), top.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
  if (!(key(item) > key(*least))) return item;
  std::optional<T> out(std::move(*least));
  *least = std::move(item);
  return out;
}

}  // namespace gpuslack
