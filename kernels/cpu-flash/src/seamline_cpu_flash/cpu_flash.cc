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
// gives zeros, a masked key's NaN never leaks, a visible key's NaN shows.
//
// Work is split into (batch, query head) items run on XLA's own
// intra-op thread pool, so the kernel uses exactly the threads XLA was given.

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

// Helpers are inlined into run_item, so each of its target clones (AVX2+FMA, and
// the baseline) compiles them for its own instruction set.
#define SEAMLINE_INLINE inline __attribute__((always_inline))

// A scalar in a vector operation is broadcast: this form compiles to one vbroadcastss,
// where an initialiser list of eight copies compiled to a chain of inserts.
SEAMLINE_INLINE f8 splat(float x) { return f8{} + x; }
SEAMLINE_INLINE i8 splat_i(int32_t x) { return i8{} + x; }
SEAMLINE_INLINE f8 load(const float* p) {
  f8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
SEAMLINE_INLINE i8 load_i(const int32_t* p) {
  i8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
SEAMLINE_INLINE void store(float* p, f8 v) { std::memcpy(p, &v, sizeof v); }
SEAMLINE_INLINE float hsum(f8 v) {
  float s = 0.0f;
  for (int i = 0; i < kLanes; ++i) s += v[i];
  return s;
}
SEAMLINE_INLINE float hmax(f8 v) {
  float m = v[0];
  for (int i = 1; i < kLanes; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

// exp(x) for x <= 0 in float32, to about 2 ulp: x = n ln2 + r with |r| <= ln2/2,
// exp(r) by the Cephes minimax polynomial, 2^n built in the exponent bits. Below
// -87.3 (where 2^n would be denormal) the answer is 0. A NaN stays NaN, so a
// real NaN in a visible score reaches the output instead of hiding.
SEAMLINE_INLINE f8 exp_nonpositive(f8 x) {
  const f8 lo = splat(-87.3f);
  const f8 xc = x < lo ? lo : x;  // a NaN compares false and is kept
  const f8 round_magic = splat(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  f8 n = (xc * splat(1.44269504088896341f) + round_magic) - round_magic;
  f8 r = xc - n * splat(0.693359375f) - n * splat(-2.12194440e-4f);
  f8 p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * (r * r) + r + splat(1.0f);
  i8 bits = (__builtin_convertvector(n, i8) + splat_i(127)) << 23;
  f8 scale;
  std::memcpy(&scale, &bits, sizeof scale);
  f8 y = p * scale;
  return x < lo ? splat(0.0f) : y;
}

struct Problem {
  const float* q;
  const float* k;
  const float* v;
  const int32_t* q_seg;
  const int32_t* kv_seg;
  float* out;
  int64_t batch, q_len, kv_len, heads, kv_heads, head_dim;
  float scale;
  bool causal, segmented;
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

// The scores of lanes [j, j + 8) with the keys the row may not see set to -inf,
// folded into the row's running maximum. Lanes wholly inside an exact range (all
// but the edges of a packed row's segment) skip the mask.
SEAMLINE_INLINE f8 mask_and_max(f8 x, int64_t j, const RowMask& row, const int32_t* kv_seg,
                                f8& vmax) {
  if (!(row.exact && j >= row.lo && j + kLanes <= row.hi)) {
    const i8 index = splat_i(static_cast<int32_t>(j)) + i8{0, 1, 2, 3, 4, 5, 6, 7};
    i8 visible = (index >= splat_i(row.lo)) & (index < splat_i(row.hi));
    if (!row.exact) visible &= load_i(kv_seg + j) == splat_i(row.segment);
    x = visible ? x : splat(-std::numeric_limits<float>::infinity());
  }
  // A NaN score (a NaN query, say) becomes the maximum and stays it, so the whole row
  // comes out NaN, as the contract's reference gives.
  vmax = (x > vmax) | (x != x) ? x : vmax;
  return x;
}

// Masked scores of kRows queries against keys [lo, hi) (multiples of kLanes), and
// each row's maximum: one pass, while the scores are still in registers.
SEAMLINE_INLINE void score_rows(const float* query, const float* keys_t, int64_t Hp, int64_t Tkp,
                                int64_t lo, int64_t hi, const RowMask* rows,
                                const int32_t* kv_seg, float* scores, float* row_max) {
  f8 vmax[kRows];
  for (int r = 0; r < kRows; ++r) vmax[r] = splat(-std::numeric_limits<float>::infinity());
  int64_t j = lo;
  for (; j + kKeyStep <= hi; j += kKeyStep) {
    f8 acc[kRows][2] = {};
    for (int64_t h = 0; h < Hp; ++h) {
      const f8 k0 = load(keys_t + h * Tkp + j);
      const f8 k1 = load(keys_t + h * Tkp + j + kLanes);
      for (int r = 0; r < kRows; ++r) {
        const f8 qv = splat(query[r * Hp + h]);
        acc[r][0] += qv * k0;
        acc[r][1] += qv * k1;
      }
    }
    for (int r = 0; r < kRows; ++r) {
      store(scores + r * Tkp + j, mask_and_max(acc[r][0], j, rows[r], kv_seg, vmax[r]));
      store(scores + r * Tkp + j + kLanes,
            mask_and_max(acc[r][1], j + kLanes, rows[r], kv_seg, vmax[r]));
    }
  }
  for (; j < hi; j += kLanes) {
    f8 acc[kRows] = {};
    for (int64_t h = 0; h < Hp; ++h) {
      const f8 k0 = load(keys_t + h * Tkp + j);
      for (int r = 0; r < kRows; ++r) acc[r] += splat(query[r * Hp + h]) * k0;
    }
    for (int r = 0; r < kRows; ++r)
      store(scores + r * Tkp + j, mask_and_max(acc[r], j, rows[r], kv_seg, vmax[r]));
  }
  for (int r = 0; r < kRows; ++r) row_max[r] = hmax(vmax[r]);
}

// Masked scores over [lo, hi) to unnormalised weights in place; their sum. A masked
// key's -inf becomes exactly 0.
SEAMLINE_INLINE float exponentiate_row(float* s, int64_t lo, int64_t hi, float row_max) {
  const f8 shift = splat(row_max);
  f8 vsum = splat(0.0f);
  for (int64_t j = lo; j < hi; j += kLanes) {
    const f8 w = exp_nonpositive(load(s + j) - shift);
    store(s + j, w);
    vsum += w;
  }
  return hsum(vsum);
}

// Whether the row sees a broken (non-finite) key or value: then its output is NaN.
SEAMLINE_INLINE bool sees_broken(const RowMask& row, const int32_t* kv_seg,
                                 const int32_t* broken, int64_t lo, int64_t hi) {
  for (int64_t j = std::max<int64_t>(lo, row.lo); j < std::min<int64_t>(hi, row.hi); ++j)
    if (broken[j] && (row.exact || kv_seg[j] == row.segment)) return true;
  return false;
}

// out[r][:] = sum_j w[r][j] * values[j][:] for kWeighRows rows at once, NV vectors of
// head_dim at a time (values' non-finite entries were zeroed, so a zero weight stays
// zero). Each value row loaded serves every row: the values stream from L2 once per
// kWeighRows rows, which is what bounds this loop.
template <int NV>
SEAMLINE_INLINE void weigh_values(const float* const* w, const float* values, int64_t Hp,
                                  int64_t h0, int64_t lo, int64_t hi, float* const* out) {
  f8 acc[kWeighRows][NV] = {};
  for (int64_t j = lo; j < hi; ++j) {
    const float* row = values + j * Hp + h0;
    f8 x[NV];
    for (int c = 0; c < NV; ++c) x[c] = load(row + c * kLanes);
    for (int r = 0; r < kWeighRows; ++r) {
      const f8 p = splat(w[r][j]);
      for (int c = 0; c < NV; ++c) acc[r][c] += p * x[c];
    }
  }
  for (int r = 0; r < kWeighRows; ++r)
    for (int c = 0; c < NV; ++c) store(out[r] + h0 + c * kLanes, acc[r][c]);
}

SEAMLINE_INLINE void weigh_values_any(const float* const* w, const float* values, int64_t Hp,
                                      int64_t lo, int64_t hi, float* const* out) {
  for (int64_t h0 = 0; h0 < Hp; h0 += 4 * kLanes) {
    switch (std::min<int64_t>(4, (Hp - h0) / kLanes)) {
      case 4: weigh_values<4>(w, values, Hp, h0, lo, hi, out); break;
      case 3: weigh_values<3>(w, values, Hp, h0, lo, hi, out); break;
      case 2: weigh_values<2>(w, values, Hp, h0, lo, hi, out); break;
      default: weigh_values<1>(w, values, Hp, h0, lo, hi, out); break;
    }
  }
}

#if defined(__x86_64__)
// AVX-512 (x86-64-v4) gives 32 vector registers, room for the 16 accumulators of an
// 8-row score block without spills; AVX2+FMA (v3) is the common case; then baseline.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void run_item(const Problem& p, Scratch& sc, int64_t b, int64_t n) {
  const int64_t Tq = p.q_len, Tk = p.kv_len, N = p.heads, K = p.kv_heads, H = p.head_dim;
  const int64_t Hp = round_up(H, kLanes), Tkp = padded_stride(Tk);
  const int64_t kvh = n / (N / K);
  const int64_t q0 = 0, q1 = Tq;

  // The keys any query of this head may see; only those are copied and visited.
  int64_t block_lo = Tk, block_hi = 0;
  for (int64_t i = q0; i < q1; ++i) {
    if (p.key_lo[b * Tq + i] >= p.key_hi[b * Tq + i]) continue;
    block_lo = std::min<int64_t>(block_lo, p.key_lo[b * Tq + i]);
    block_hi = std::max<int64_t>(block_hi, p.key_hi[b * Tq + i]);
  }
  block_lo = block_lo / kLanes * kLanes;
  block_hi = std::max(block_lo, round_up(block_hi, kLanes));

  // Only [block_lo, block_hi) is ever read; the lanes past Tk are zeroed so that no
  // stale bits (a denormal, a NaN) enter the arithmetic.
  sc.keys_t.resize(Hp * Tkp);
  sc.values.resize(Tkp * Hp);
  sc.broken.resize(Tkp);
  sc.kv_seg.resize(Tkp);
  sc.scores.resize(kRows * Tkp);
  sc.query.resize(kRows * Hp);
  // Keys and values of this head, non-finite entries zeroed (a masked key's NaN must
  // not reach the products) and remembered per key (a visible one's must show).
  bool any_broken = false;
  for (int64_t j = block_lo; j < std::min(block_hi, Tk); ++j) {
    const float* kr = p.k + ((b * Tk + j) * K + kvh) * H;
    const float* vr = p.v + ((b * Tk + j) * K + kvh) * H;
    float* vdst = sc.values.data() + j * Hp;
    i8 finite = splat_i(-1);
    int64_t h = 0;
    for (; h + kLanes <= H; h += kLanes) {
      const f8 kx = load(kr + h), vx = load(vr + h);
      const i8 kf = (kx - kx) == splat(0.0f), vf = (vx - vx) == splat(0.0f);  // false: NaN, inf
      finite &= kf & vf;
      const f8 kc = kf ? kx : splat(0.0f);
      store(vdst + h, vf ? vx : splat(0.0f));
      for (int l = 0; l < kLanes; ++l) sc.keys_t[(h + l) * Tkp + j] = kc[l];
    }
    bool ok = true;
    for (int l = 0; l < kLanes; ++l) ok &= finite[l] != 0;
    for (; h < H; ++h) {
      const bool kf = std::isfinite(kr[h]), vf = std::isfinite(vr[h]);
      ok &= kf && vf;
      sc.keys_t[h * Tkp + j] = kf ? kr[h] : 0.0f;
      vdst[h] = vf ? vr[h] : 0.0f;
    }
    for (h = H; h < Hp; ++h) {
      sc.keys_t[h * Tkp + j] = 0.0f;
      vdst[h] = 0.0f;
    }
    sc.broken[j] = ok ? 0 : -1;
    any_broken |= !ok;
    sc.kv_seg[j] = p.segmented ? p.kv_seg[b * Tk + j] : 0;
  }
  for (int64_t j = std::min(block_hi, Tk); j < block_hi; ++j) {
    for (int64_t h = 0; h < Hp; ++h) sc.keys_t[h * Tkp + j] = 0.0f;
    std::memset(sc.values.data() + j * Hp, 0, Hp * sizeof(float));
    sc.broken[j] = 0;
    sc.kv_seg[j] = 0;
  }

  for (int64_t r0 = q0; r0 < q1; r0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, q1 - r0));
    int64_t lo = Tk, hi = 0;
    for (int r = 0; r < rows; ++r) {
      const int64_t i = r0 + r;
      if (p.key_lo[b * Tq + i] >= p.key_hi[b * Tq + i]) continue;
      lo = std::min<int64_t>(lo, p.key_lo[b * Tq + i]);
      hi = std::max<int64_t>(hi, p.key_hi[b * Tq + i]);
    }
    float sums[kRows] = {};
    bool poisoned[kRows] = {};
    if (lo < hi) {
      lo = lo / kLanes * kLanes;
      hi = round_up(hi, kLanes);
      for (int r = 0; r < kRows; ++r) {
        float* dst = sc.query.data() + r * Hp;
        if (r < rows) {
          const float* qr = p.q + ((b * Tq + r0 + r) * N + n) * H;
          for (int64_t h = 0; h < H; ++h) dst[h] = qr[h] * p.scale;
        } else {
          for (int64_t h = 0; h < H; ++h) dst[h] = 0.0f;
        }
      }
      RowMask masks[kRows];
      for (int r = 0; r < kRows; ++r) {
        const int64_t i = r0 + r;
        if (r >= rows) {
          masks[r] = {0, 0, 0, true};
          continue;
        }
        masks[r] = {p.key_lo[b * Tq + i], p.key_hi[b * Tq + i],
                    p.segmented ? p.q_seg[b * Tq + i] : 0,
                    !p.segmented || p.exact[b * Tq + i] != 0};
      }
      float row_max[kRows];
      score_rows(sc.query.data(), sc.keys_t.data(), Hp, Tkp, lo, hi, masks, sc.kv_seg.data(),
                 sc.scores.data(), row_max);
      for (int r = 0; r < kRows; ++r) {
        float* s = sc.scores.data() + r * Tkp;
        if (r < rows && row_max[r] != -std::numeric_limits<float>::infinity()) {
          sums[r] = exponentiate_row(s, lo, hi, row_max[r]);
          poisoned[r] =
              any_broken && sees_broken(masks[r], sc.kv_seg.data(), sc.broken.data(), lo, hi);
        }
        if (sums[r] == 0.0f)
          for (int64_t j = lo; j < hi; ++j) s[j] = 0.0f;
      }
    }
    float result[kRows][512];
    float* res[kRows];
    std::vector<float> heap;
    if (Hp > 512) {
      heap.assign(kRows * Hp, 0.0f);
      for (int r = 0; r < kRows; ++r) res[r] = heap.data() + r * Hp;
    } else {
      for (int r = 0; r < kRows; ++r) res[r] = result[r];
    }
    for (int r = 0; r < kRows; r += kWeighRows) {
      if (lo < hi) {
        const float* weights[kWeighRows];
        for (int g = 0; g < kWeighRows; ++g) weights[g] = sc.scores.data() + (r + g) * Tkp;
        weigh_values_any(weights, sc.values.data(), Hp, lo, hi, res + r);
      } else {
        for (int g = 0; g < kWeighRows; ++g)
          for (int64_t h = 0; h < Hp; ++h) res[r + g][h] = 0.0f;
      }
    }
    for (int r = 0; r < rows; ++r) {
      float* o = p.out + ((b * Tq + r0 + r) * N + n) * H;
      if (sums[r] == 0.0f) {
        for (int64_t h = 0; h < H; ++h) o[h] = 0.0f;
      } else if (poisoned[r]) {
        for (int64_t h = 0; h < H; ++h) o[h] = std::numeric_limits<float>::quiet_NaN();
      } else {
        const float inv = 1.0f / sums[r];
        for (int64_t h = 0; h < H; ++h) o[h] = res[r][h] * inv;
      }
    }
  }
}

// Items shared by the calling thread and the pool's; the caller waits only for
// items already claimed, so a pool task that starts late finds nothing left and
// touches nothing but this (reference-counted) state.
struct Shared {
  const Problem* problem;
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
                        sc.query.capacity()) * sizeof(float) +
                       (sc.broken.capacity() + sc.kv_seg.capacity()) * sizeof(int32_t);
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
    run_item(p, scratch, item / p.heads, item % p.heads);
    worked = true;
    s.done.fetch_add(1, std::memory_order_release);
  }
  if (worked) release_if_large(scratch);
}

ffi::Error Attention(ffi::ThreadPool pool, ffi::Buffer<ffi::F32> q, ffi::Buffer<ffi::F32> k,
                     ffi::Buffer<ffi::F32> v, ffi::Buffer<ffi::S32> q_seg,
                     ffi::Buffer<ffi::S32> kv_seg, ffi::ResultBuffer<ffi::F32> out, float scale,
                     bool causal, bool segmented, int64_t threads) {
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
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("scale")
                                  .Attr<bool>("causal")
                                  .Attr<bool>("segmented")
                                  .Attr<int64_t>("threads"));
