// cpu-flash: exact attention for CPUs, fused into one pass over each query block.
//
// Why a compiled kernel: XLA's CPU backend runs attention as separate HLO ops
// (two batched matmuls, a mask, a max, an exp, a sum), each a full pass over the
// [B, N, Tq, Tk] score tensor in main memory. Here the scores of a few query rows
// live in a buffer that stays in L1/L2 while they are masked, exponentiated,
// summed and multiplied by V, so memory traffic and memory use are linear in the
// sequence length, and keys outside a query's segment are never visited at all
// (a packed row of several short documents costs what the documents cost).
//
// Semantics are the seam's contract (seamline.contracts.attention): layout
// q [B, Tq, N, H], k/v [B, Tk, K, H] with N % K == 0, segment ids [B, Tq]/[B, Tk],
// causal with queries aligned to the end of the keys, a row with no visible key
// gives zeros, a masked key's NaN never leaks, a visible key's NaN shows. A
// relative-position bias (contract 1.2) adds values[clip(kv_pos - q_pos, -D, D) + D, n]
// to each score where it is computed: per item the head's column of the few-kilobyte
// table is copied once, and each score's bias is one lookup.
//
// Work is split into (batch, query head) items run on XLA's own
// intra-op thread pool, so the kernel uses exactly the threads XLA was given.
//
// The per-instruction-set half (the micro-kernels and run_item) is cpu_flash_isa.inc,
// compiled here three times; this file holds what is common and picks the copy.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

typedef float f8 __attribute__((vector_size(32)));
typedef int32_t i8 __attribute__((vector_size(32)));

constexpr int kLanes = 8;
constexpr int kRows = 8;         // query rows whose scores are computed together
constexpr int kWeighRows = 4;    // rows whose weights multiply the values together
constexpr int kKeyStep = 16;     // keys per step of the score micro-kernel (two vectors)
// How far ahead (in keys) the copy of a head's keys and values prefetches (measured:
// 1.1-1.4x on the model's shapes, most on the smallest).
constexpr int kPrefetchKeys = 8;

// Every helper is inlined into its caller, so each instruction-set copy of the kernel
// (cpu_flash_isa.inc, below) compiles them for its own instruction set.
#define SEAMLINE_INLINE inline __attribute__((always_inline))

struct Problem {
  const float* q;
  const float* k;
  const float* v;
  const int32_t* q_seg;
  const int32_t* kv_seg;
  float* out;
  // The relative bias: values [2D + 1, heads] and positions [B, Tq] / [B, Tk]; unread
  // unless `biased`.
  const float* bias_values;
  const int32_t* q_pos;
  const int32_t* kv_pos;
  int64_t reach;  // D
  int64_t batch, q_len, kv_len, heads, kv_heads, head_dim;
  float scale;
  bool causal, segmented, biased;
  // Per (batch, query): the half-open range of keys that can be visible to it
  // (its segment's first and last key, cut by the causal bound). Keys outside are
  // never visited. Where the query's segment is one run of keys (packed and padded
  // rows always are), the range is exact: every key in it is visible and no key
  // needs its segment compared; otherwise keys inside are masked one by one.
  std::vector<int32_t> key_lo, key_hi;
  std::vector<uint8_t> exact;
};

// The range of keys each query may see, from the runs of equal kv segment ids.
void compute_key_ranges(Problem& p) {
  const int64_t B = p.batch, Tq = p.q_len, Tk = p.kv_len;
  p.key_lo.assign(B * Tq, 0);
  p.key_hi.assign(B * Tq, static_cast<int32_t>(Tk));
  p.exact.assign(B * Tq, 1);
  struct Run {
    int32_t id, start, end;
  };
  std::vector<Run> runs;
  for (int64_t b = 0; b < B; ++b) {
    if (p.segmented) {
      runs.clear();
      const int32_t* kv = p.kv_seg + b * Tk;
      for (int64_t j = 0; j < Tk; ++j) {
        if (runs.empty() || runs.back().id != kv[j])
          runs.push_back({kv[j], static_cast<int32_t>(j), static_cast<int32_t>(j + 1)});
        else
          runs.back().end = static_cast<int32_t>(j + 1);
      }
      const int32_t* qs = p.q_seg + b * Tq;
      int32_t lo = 0, hi = 0, count = 0;
      for (int64_t i = 0; i < Tq; ++i) {
        if (i == 0 || qs[i] != qs[i - 1]) {
          lo = static_cast<int32_t>(Tk);
          hi = 0;
          count = 0;
          for (const Run& run : runs) {
            if (run.id != qs[i]) continue;
            lo = std::min(lo, run.start);
            hi = std::max(hi, run.end);
            ++count;
          }
        }
        p.key_lo[b * Tq + i] = lo;
        p.key_hi[b * Tq + i] = hi;
        p.exact[b * Tq + i] = count <= 1;
      }
    }
    if (p.causal) {
      const int64_t offset = Tk - Tq;
      for (int64_t i = 0; i < Tq; ++i) {
        int32_t& hi = p.key_hi[b * Tq + i];
        hi = static_cast<int32_t>(std::min<int64_t>(hi, std::max<int64_t>(0, i + offset + 1)));
      }
    }
  }
}

// Scratch one thread reuses across items: the item's keys transposed, its values,
// masks and the scores of kRows queries, all padded to whole vectors.
struct Scratch {
  std::vector<float> keys_t;   // [Hp][Tkp]: keys transposed, non-finite entries zeroed
  std::vector<float> values;   // [Tkp][Hp]: values, non-finite entries zeroed
  std::vector<int32_t> broken; // [Tkp]: -1 where the key or value has a non-finite entry
  std::vector<int32_t> kv_seg; // [Tkp]
  std::vector<float> scores;   // [kRows][Tkp]
  std::vector<float> query;    // [kRows][Hp]: scaled queries
  std::vector<float> bias;     // [2D + 1]: this head's relative-bias values
  std::vector<int32_t> kv_pos; // [Tkp]: key positions (with a bias)
};

SEAMLINE_INLINE int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// The row stride of the transposed keys: whole key steps, plus one step so that a
// power-of-two length does not put every head-dimension row of a step in the same
// few L1 sets (measured: 10 % on 256 keys).
SEAMLINE_INLINE int64_t padded_stride(int64_t kv_len) { return round_up(kv_len, kKeyStep) + kKeyStep; }

// Which keys one query row may see: [lo, hi), and there only its segment's keys
// unless the range is exact. A row past the block's end sees nothing (lo == hi).
struct RowMask {
  int32_t lo, hi, segment;
  bool exact;
};


// One copy of the kernel per instruction set. x86-64-v4 (AVX-512) gives 32 vector
// registers, room for the 16 accumulators of an 8-row score block without spills;
// x86-64-v3 (AVX2 + FMA) is the common case; the baseline runs anywhere.
namespace baseline {
#include "cpu_flash_isa.inc"
}  // namespace baseline
#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
namespace avx2 {
#include "cpu_flash_isa.inc"
}  // namespace avx2
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
namespace avx512 {
#include "cpu_flash_isa.inc"
}  // namespace avx512
#pragma GCC pop_options
#endif

// Instruction-set levels, as the `isa` attribute and SeamlineCpuFlashIsaLevel name them.
enum IsaLevel : int64_t { kAuto = 0, kBaseline = 1, kAvx2 = 2, kAvx512 = 3 };

// The best level this CPU runs.
int64_t best_level() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return kAvx512;
  if (__builtin_cpu_supports("x86-64-v3")) return kAvx2;
#endif
  return kBaseline;
}

using RunItem = void (*)(const Problem&, Scratch&, int64_t, int64_t);

RunItem run_item_for(int64_t level) {
#if defined(__x86_64__)
  if (level == kAvx512) return avx512::run_item;
  if (level == kAvx2) return avx2::run_item;
#endif
  return baseline::run_item;
}

// Items shared by the calling thread and the pool's; the caller waits only for
// items already claimed, so a pool task that starts late finds nothing left and
// touches nothing but this (reference-counted) state.
struct Shared {
  const Problem* problem;
  RunItem run_item;
  int64_t items;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
};

constexpr size_t kKeptScratchBytes = size_t{4} << 20;

// Scratch grows to the largest shape a thread has served; past a few MiB (keys of
// tens of thousands of tokens) it is given back after the call rather than held by
// XLA's pool threads for the life of the process.
void release_if_large(Scratch& sc) {
  const size_t bytes = (sc.keys_t.capacity() + sc.values.capacity() + sc.scores.capacity() +
                        sc.query.capacity() + sc.bias.capacity()) * sizeof(float) +
                       (sc.broken.capacity() + sc.kv_seg.capacity() + sc.kv_pos.capacity()) *
                           sizeof(int32_t);
  if (bytes <= kKeptScratchBytes) return;
  sc = Scratch();
}

void work(Shared& s) {
  thread_local Scratch scratch;
  bool worked = false;
  for (;;) {
    const int64_t item = s.next.fetch_add(1);
    if (item >= s.items) break;
    // Only a claimed item may look at the problem: a task that starts after the call
    // returned finds the items exhausted and never touches the caller's (gone) frame.
    const Problem& p = *s.problem;
    s.run_item(p, scratch, item / p.heads, item % p.heads);
    worked = true;
    s.done.fetch_add(1, std::memory_order_release);
  }
  if (worked) release_if_large(scratch);
}

ffi::Error Attention(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k,
                     ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::S32> q_seg,
                     ffi::Buffer<ffi::S32> kv_seg, ffi::Buffer<ffi::F32> bias_values,
                     ffi::Buffer<ffi::S32> q_pos, ffi::Buffer<ffi::S32> kv_pos,
                     ffi::ResultBuffer<ffi::F32> out, float scale, bool causal, bool segmented,
                     bool biased, int64_t threads, int64_t isa) {
  static const int64_t kBest = best_level();
  if (isa < kAuto || isa > kAvx512)
    return ffi::Error::InvalidArgument("cpu-flash: isa must be 0 (auto), 1, 2 or 3");
  if (isa > kBest)
    return ffi::Error::InvalidArgument("cpu-flash: this CPU does not run the requested isa");
  const auto qd = q.dimensions(), kd = k.dimensions();
  if (qd.size() != 4 || kd.size() != 4 || v.dimensions().size() != 4)
    return ffi::Error::InvalidArgument("cpu-flash: q, k and v must be [B, T, heads, head_dim]");
  Problem p;
  p.q = q.typed_data();
  p.k = k.typed_data();
  p.v = v.typed_data();
  p.q_seg = q_seg.typed_data();
  p.kv_seg = kv_seg.typed_data();
  p.out = out->typed_data();
  p.batch = qd[0];
  p.q_len = qd[1];
  p.heads = qd[2];
  p.head_dim = qd[3];
  p.kv_len = kd[1];
  p.kv_heads = kd[2];
  p.scale = scale;
  p.causal = causal;
  p.segmented = segmented;
  p.biased = biased;
  p.bias_values = bias_values.typed_data();
  p.q_pos = q_pos.typed_data();
  p.kv_pos = kv_pos.typed_data();
  p.reach = 0;
  if (biased) {
    const auto bd = bias_values.dimensions();
    if (bd.size() != 2 || bd[0] % 2 != 1 || bd[1] != p.heads ||
        q_pos.element_count() != p.batch * p.q_len || kv_pos.element_count() != p.batch * p.kv_len)
      return ffi::Error::InvalidArgument(
          "cpu-flash: a bias needs values [2D + 1, heads] and positions [B, Tq] and [B, Tk]");
    p.reach = (bd[0] - 1) / 2;
  }
  if (kd[0] != p.batch || kd[3] != p.head_dim || p.kv_heads == 0 || p.heads % p.kv_heads)
    return ffi::Error::InvalidArgument("cpu-flash: k/v shapes do not match q");
  if (p.batch == 0 || p.q_len == 0 || p.heads == 0 || p.head_dim == 0) return ffi::Error::Success();
  if (p.kv_len == 0) {
    std::memset(p.out, 0, sizeof(float) * p.batch * p.q_len * p.heads * p.head_dim);
    return ffi::Error::Success();
  }
  compute_key_ranges(p);

  auto shared = std::make_shared<Shared>();
  shared->problem = &p;
  shared->run_item = run_item_for(isa == kAuto ? kBest : isa);
  shared->items = p.batch * p.heads;
  int64_t helpers = threads > 0 ? threads - 1 : pool.num_threads() - 1;
  helpers = std::max<int64_t>(0, std::min(helpers, shared->items - 1));
  for (int64_t t = 0; t < helpers; ++t) pool.Schedule([shared] { work(*shared); });
  work(*shared);
  while (shared->done.load(std::memory_order_acquire) < shared->items) std::this_thread::yield();
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SeamlineCpuFlashF32, Attention,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("scale")
                                  .Attr<bool>("causal")
                                  .Attr<bool>("segmented")
                                  .Attr<bool>("biased")
                                  .Attr<int64_t>("threads")
                                  .Attr<int64_t>("isa"));

// The best instruction-set level this CPU runs (1 baseline, 2 AVX2+FMA, 3 AVX-512),
// for the Python side to refuse an `isa` the machine lacks before compiling a call.
extern "C" __attribute__((visibility("default"))) int64_t SeamlineCpuFlashIsaLevel() {
  return best_level();
}
