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
// compiled here four times; the bfloat16 kernel (cpu_flash_bf16.inc) is compiled once,
// for AVX-512 with AVX512_BF16. This file holds what is common and picks the copy.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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
  // float32 inputs and output, or (the bfloat16 handler) the *16 ones.
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;
  const uint16_t* q16 = nullptr;
  const uint16_t* k16 = nullptr;
  const uint16_t* v16 = nullptr;
  uint16_t* out16 = nullptr;
  const int32_t* q_seg;
  const int32_t* kv_seg;
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
  // The bfloat16 kernel's layouts (cpu_flash_bf16.inc): pairs of bfloat16 in 32-bit words.
  std::vector<uint32_t> key_pairs;    // [Hp/2][Tkp]
  std::vector<uint32_t> value_pairs;  // [Tkp/2][Hp]
  std::vector<uint32_t> query_pairs;  // [kRows][Hp/2]
  std::vector<uint16_t> weights16;    // [kRows][Tkp]
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
// AVX-512 with the bfloat16 extension (Zen 4, Cooper Lake, Sapphire Rapids and later):
// the float32 kernel again (the same code as the avx512 copy), and the bfloat16 one.
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4,avx512bf16")
namespace avx512bf16 {
#include "cpu_flash_isa.inc"
#include "cpu_flash_bf16.inc"
}  // namespace avx512bf16
#pragma GCC pop_options
#endif

// Instruction-set levels, as the `isa` attribute and SeamlineCpuFlashIsaLevel name them.
enum IsaLevel : int64_t { kAuto = 0, kBaseline = 1, kAvx2 = 2, kAvx512 = 3, kAvx512Bf16 = 4 };

// The best level this CPU runs.
int64_t best_level() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4"))
    return __builtin_cpu_supports("avx512bf16") ? kAvx512Bf16 : kAvx512;
  if (__builtin_cpu_supports("x86-64-v3")) return kAvx2;
#endif
  return kBaseline;
}

using RunItem = void (*)(const Problem&, Scratch&, int64_t, int64_t);

RunItem run_item_for(int64_t level) {
#if defined(__x86_64__)
  if (level == kAvx512Bf16) return avx512bf16::run_item;
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
                       (sc.broken.capacity() + sc.kv_seg.capacity() + sc.kv_pos.capacity() +
                        sc.key_pairs.capacity() + sc.value_pairs.capacity() +
                        sc.query_pairs.capacity()) * sizeof(int32_t) +
                       sc.weights16.capacity() * sizeof(uint16_t);
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

// Shapes and attributes into `p` (its data pointers are already set), checked.
ffi::Error prepare(Problem& p, ffi::AnyBuffer::Dimensions qd, ffi::AnyBuffer::Dimensions kd,
                   size_t v_rank, ffi::AnyBuffer::Dimensions bd, int64_t q_pos_count,
                   int64_t kv_pos_count, float scale, bool causal, bool segmented, bool biased,
                   int64_t isa) {
  static const int64_t kBest = best_level();
  if (isa < kAuto || isa > kAvx512Bf16)
    return ffi::Error::InvalidArgument("cpu-flash: isa must be 0 (auto), 1, 2, 3 or 4");
  if (isa > kBest)
    return ffi::Error::InvalidArgument("cpu-flash: this CPU does not run the requested isa");
  if (qd.size() != 4 || kd.size() != 4 || v_rank != 4)
    return ffi::Error::InvalidArgument("cpu-flash: q, k and v must be [B, T, heads, head_dim]");
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
  p.reach = 0;
  if (biased) {
    if (bd.size() != 2 || bd[0] % 2 != 1 || bd[1] != p.heads ||
        q_pos_count != p.batch * p.q_len || kv_pos_count != p.batch * p.kv_len)
      return ffi::Error::InvalidArgument(
          "cpu-flash: a bias needs values [2D + 1, heads] and positions [B, Tq] and [B, Tk]");
    p.reach = (bd[0] - 1) / 2;
  }
  if (kd[0] != p.batch || kd[3] != p.head_dim || p.kv_heads == 0 || p.heads % p.kv_heads)
    return ffi::Error::InvalidArgument("cpu-flash: k/v shapes do not match q");
  return ffi::Error::Success();
}

// The (batch, head) items of a prepared problem, on the calling thread and the pool's.
void run(Problem& p, ffi::ThreadPool& pool, RunItem run_item, int64_t threads) {
  compute_key_ranges(p);
  auto shared = std::make_shared<Shared>();
  shared->problem = &p;
  shared->run_item = run_item;
  shared->items = p.batch * p.heads;
  int64_t helpers = threads > 0 ? threads - 1 : pool.num_threads() - 1;
  helpers = std::max<int64_t>(0, std::min(helpers, shared->items - 1));
  for (int64_t t = 0; t < helpers; ++t) pool.Schedule([shared] { work(*shared); });
  work(*shared);
  while (shared->done.load(std::memory_order_acquire) < shared->items) std::this_thread::yield();
}

bool nothing_to_do(const Problem& p) {
  return p.batch == 0 || p.q_len == 0 || p.heads == 0 || p.head_dim == 0;
}

int64_t output_elements(const Problem& p) { return p.batch * p.q_len * p.heads * p.head_dim; }

// Where each handler's arrays go in the problem: float32, or bfloat16 bits.
void bind(Problem& p, const float* q, const float* k, const float* v, float* out) {
  p.q = q;
  p.k = k;
  p.v = v;
  p.out = out;
}
void bind(Problem& p, const uint16_t* q, const uint16_t* k, const uint16_t* v, uint16_t* out) {
  p.q16 = q;
  p.k16 = k;
  p.v16 = v;
  p.out16 = out;
}

// What both handlers do once their kernel is known: bind, check, and run the items.
template <ffi::DataType T>
ffi::Error solve(ffi::ThreadPool& pool, ffi::Buffer<T>& q, ffi::Buffer<T>& k, ffi::Buffer<T>& v,
                 ffi::Buffer<ffi::S32>& q_seg, ffi::Buffer<ffi::S32>& kv_seg,
                 ffi::Buffer<ffi::F32>& bias_values, ffi::Buffer<ffi::S32>& q_pos,
                 ffi::Buffer<ffi::S32>& kv_pos, ffi::ResultBuffer<T>& out, float scale,
                 bool causal, bool segmented, bool biased, int64_t threads, int64_t isa,
                 RunItem run_item) {
  Problem p;
  bind(p, q.typed_data(), k.typed_data(), v.typed_data(), out->typed_data());
  p.q_seg = q_seg.typed_data();
  p.kv_seg = kv_seg.typed_data();
  p.bias_values = bias_values.typed_data();
  p.q_pos = q_pos.typed_data();
  p.kv_pos = kv_pos.typed_data();
  ffi::Error checked = prepare(p, q.dimensions(), k.dimensions(), v.dimensions().size(),
                               bias_values.dimensions(), q_pos.element_count(),
                               kv_pos.element_count(), scale, causal, segmented, biased, isa);
  if (checked.failure() || nothing_to_do(p)) return checked;
  if (p.kv_len == 0) {
    std::memset(out->typed_data(), 0, sizeof(*out->typed_data()) * output_elements(p));
    return ffi::Error::Success();
  }
  run(p, pool, run_item, threads);
  return ffi::Error::Success();
}

ffi::Error Attention(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k,
                     ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::S32> q_seg,
                     ffi::Buffer<ffi::S32> kv_seg, ffi::Buffer<ffi::F32> bias_values,
                     ffi::Buffer<ffi::S32> q_pos, ffi::Buffer<ffi::S32> kv_pos,
                     ffi::ResultBuffer<ffi::F32> out, float scale, bool causal, bool segmented,
                     bool biased, int64_t threads, int64_t isa) {
  static const int64_t kBest = best_level();
  // An out-of-range isa picks some copy here; prepare() refuses it before anything runs.
  return solve(pool, q, k, v, q_seg, kv_seg, bias_values, q_pos, kv_pos, out, scale, causal,
               segmented, biased, threads, isa, run_item_for(isa == kAuto ? kBest : isa));
}

// bfloat16 in and out, computed with the CPU's bfloat16 dot products; only where the
// CPU has them (the Python side calls it only then, and widens to float32 elsewhere).
ffi::Error AttentionBf16(ffi::ThreadPool pool, ffi::Buffer<ffi::BF16> q, ffi::Buffer<ffi::BF16> k,
                         ffi::Buffer<ffi::BF16> v, ffi::Buffer<ffi::S32> q_seg,
                         ffi::Buffer<ffi::S32> kv_seg, ffi::Buffer<ffi::F32> bias_values,
                         ffi::Buffer<ffi::S32> q_pos, ffi::Buffer<ffi::S32> kv_pos,
                         ffi::ResultBuffer<ffi::BF16> out, float scale, bool causal,
                         bool segmented, bool biased, int64_t threads) {
  static const int64_t kBest = best_level();
#if defined(__x86_64__)
  if (kBest >= kAvx512Bf16)
    return solve(pool, q, k, v, q_seg, kv_seg, bias_values, q_pos, kv_pos, out, scale, causal,
                 segmented, biased, threads, kAuto, avx512bf16::run_item_bf16);
#endif
  return ffi::Error::InvalidArgument(
      "cpu-flash: this CPU has no bfloat16 dot products (avx512_bf16); widen to float32");
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

XLA_FFI_DEFINE_HANDLER_SYMBOL(SeamlineCpuFlashBF16, AttentionBf16,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::ThreadPool>()
                                  .Arg<ffi::Buffer<ffi::BF16>>()
                                  .Arg<ffi::Buffer<ffi::BF16>>()
                                  .Arg<ffi::Buffer<ffi::BF16>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::BF16>>()
                                  .Attr<float>("scale")
                                  .Attr<bool>("causal")
                                  .Attr<bool>("segmented")
                                  .Attr<bool>("biased")
                                  .Attr<int64_t>("threads"));

// The best instruction-set level this CPU runs (1 baseline, 2 AVX2+FMA, 3 AVX-512,
// 4 AVX-512 with bfloat16 dot products),
// for the Python side to refuse an `isa` the machine lacks before compiling a call.
extern "C" __attribute__((visibility("default"))) int64_t SeamlineCpuFlashIsaLevel() {
  return best_level();
}
