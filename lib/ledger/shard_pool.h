// ShardPool<T>: one shard per live thread, recycled when its thread exits.
//
// The machinery behind Note [Exited threads] (ledger.h), shared by the
// ledger's shards (ledger.cc) and the collectives' (nccl/collectives.cc):
//   - A thread's first call takes a shard (mine(), out of line): from the
//     free list, or made and pushed on a lock-free list of every shard made,
//     which reports walk while threads run. A shard is never freed (leak
//     checkers see it reachable from the pool): a report may read it at any
//     time. `prepare` runs on the taking thread first (the ledger writes the
//     thread's tid and name there); then the shard goes live.
//   - A shard is live while its `generation` is the pool's: set with a
//     release store once prepared; 0 while free.
//   - Thread exit: a pthread key whose destructor gets the shard (glibc runs
//     it after the thread's C++ thread_local destructors, which may still
//     make hooked calls; a call made after it takes a shard again and sets
//     the key again, and glibc runs the destructor again, up to
//     PTHREAD_DESTRUCTOR_ITERATIONS times). Under the fold lock, `retire`
//     moves the shard's figures out (to the exited threads') and empties
//     it; the shard is then marked free and goes on the free list.
//   - Reports hold the fold lock (fold_mutex), so no shard leaves while
//     they read, and read live shards only (for_each_live).
//   - Fork (Note [Fork] in session/session.cc): after_fork_child moves the
//     pool to a new generation, so every shard of the parent, live or free,
//     is left behind at once, never read again; the locks are made anew.
//     It takes no lock and allocates nothing. What `retire` folded into
//     (the exited threads' figures) is the user's to leave behind.
//
// Requirements: T derives from PooledShard<T> and is default-constructible.
// One pool per T (the calling thread's shard is a thread_local of
// ShardPool<T>). A pool is a namespace-scope object with constant
// initialization and a trivial destructor: nothing runs at load (Note [Lazy
// and silent] in session/session.h).
//
// Lock order: the fold lock before any lock of a shard's own; the free
// list's lock is taken alone.
//
// Thread safety: mine() from any thread, for its own shard (no lock once
// taken); for_each_live under fold_mutex(); after_fork_child only in the
// child of a fork, from its atfork handler.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

namespace gpuslack {
namespace ledger {

template <typename T>
class ShardPool;

// What the pool keeps in each shard: derive T from PooledShard<T>.
template <typename T>
struct PooledShard {
  T* next_made = nullptr;  // every shard made, newest first
  T* next_free = nullptr;  // guarded by the pool's free-list lock
  // The pool's generation while a thread owns the shard; 0 when free.
  std::atomic<uint32_t> generation{0};
  ShardPool<T>* pool = nullptr;  // set when made
};

template <typename T>
class ShardPool {
 public:
  // prepare: on the taking thread, before the shard goes live. retire: on
  // the exiting thread, under the fold lock, while the shard is live: moves
  // its figures out and leaves it empty for its next thread.
  using Hook = void (*)(T&);

  constexpr ShardPool(Hook prepare, Hook retire) : prepare_(prepare), retire_(retire) {}
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  // The calling thread's shard, taken on its first call; nullptr when none
  // could be made (out of memory). The hot path: one thread_local load.
  T* mine() {
    T* s = t_mine_;
    if (__builtin_expect(s == nullptr, 0)) s = t_mine_ = take();
    return s;
  }

  // The calling thread's shard if it has taken one; nullptr otherwise.
  static T* mine_if_taken() { return t_mine_; }

  // Held by reports while they read, and by a shard leaving.
  std::mutex& fold_mutex() { return fold_mu_; }

  // Calls f(T&) on every live shard. The caller holds fold_mutex().
  template <typename F>
  void for_each_live(F&& f) {
    const uint32_t generation = generation_.load(std::memory_order_relaxed);
    for (T* s = made_.load(std::memory_order_acquire); s; s = s->next_made)
      if (live(*s, generation)) f(*s);
  }

  // Shards made so far, in use or free (those a fork left behind included).
  size_t count() const { return count_.load(std::memory_order_relaxed); }

  // In the child of a fork: see above.
  void after_fork_child() {
    generation_.fetch_add(1, std::memory_order_relaxed);
    new (&free_mu_) std::mutex();
    free_ = nullptr;
    new (&fold_mu_) std::mutex();
    t_mine_ = nullptr;
    // This thread's key still names its shard of the parent
    // (pthread_setspecific with NULL allocates nothing).
    if (key_made_.load(std::memory_order_acquire)) pthread_setspecific(key_, nullptr);
  }

  // Tests of Note [Fork] only: the free list's lock.
  std::mutex& free_mutex() { return free_mu_; }

 private:
  static bool live(const T& s, uint32_t generation) {
    return s.generation.load(std::memory_order_acquire) == generation;
  }

  // Out of line: a thread's first call.
  __attribute__((noinline, cold)) T* take() {
    pthread_once(&key_once_, make_key);
    T* s = nullptr;
    {
      std::lock_guard<std::mutex> lock(free_mu_);
      if (free_) {
        s = free_;
        free_ = s->next_free;
        s->next_free = nullptr;
      }
    }
    if (!s) {
      s = new (std::nothrow) T();  // reachable from made_ for the process's life
      if (!s) return nullptr;
      s->pool = this;
      T* head = made_.load(std::memory_order_relaxed);
      do {
        s->next_made = head;
      } while (!made_.compare_exchange_weak(head, s, std::memory_order_release, std::memory_order_relaxed));
      count_.fetch_add(1, std::memory_order_relaxed);
    }
    if (prepare_) prepare_(*s);
    s->generation.store(generation_.load(std::memory_order_relaxed), std::memory_order_release);
    if (key_made_.load(std::memory_order_acquire)) pthread_setspecific(key_, s);
    return s;
  }

  static void make_key() { key_made_.store(pthread_key_create(&key_, on_thread_exit) == 0, std::memory_order_release); }

  // The key's destructor, on the exiting thread.
  static void on_thread_exit(void* shard) {
    T* s = static_cast<T*>(shard);
    ShardPool* pool = s->pool;
    if (t_mine_ == s) t_mine_ = nullptr;
    {
      std::lock_guard<std::mutex> fold(pool->fold_mu_);
      // A shard of the parent of a fork: left behind (after_fork_child).
      if (!live(*s, pool->generation_.load(std::memory_order_relaxed))) return;
      pool->retire_(*s);
      s->generation.store(0, std::memory_order_relaxed);
    }
    std::lock_guard<std::mutex> lock(pool->free_mu_);
    s->next_free = pool->free_;
    pool->free_ = s;
  }

  const Hook prepare_;
  const Hook retire_;
  std::atomic<T*> made_{nullptr};
  std::atomic<size_t> count_{0};
  std::atomic<uint32_t> generation_{1};
  std::mutex free_mu_;
  T* free_ = nullptr;  // guarded by free_mu_
  std::mutex fold_mu_;
  // Per T, as the pool is: the key (its destructor finds the pool through
  // the shard) and the calling thread's shard.
  static inline pthread_once_t key_once_ = PTHREAD_ONCE_INIT;
  static inline pthread_key_t key_;
  static inline std::atomic<bool> key_made_{false};  // set once, under key_once_
  static inline thread_local T* t_mine_ = nullptr;
};

}  // namespace ledger
}  // namespace gpuslack
