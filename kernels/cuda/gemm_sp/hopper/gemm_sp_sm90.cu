// croq-kernel: {"dtypes": ["f16f32", "f16", "bf16f32", "bf16", "e4m3f16", "e4m3bf16"], "rank": 20, "tensor_cores": true, "b_layout": "col", "summary": "the hopper_gemm_sp family's sm_90a template at its default (sparse WGMMA, A prepared once)"}
/*
 * croq's Hopper 2:4 structured-sparse GEMM template (sm_90a): C[M,N] = A[M,K] * B through croq's
 * kernel ABI version 2 (include/croq/kernel_abi.h, operator CROQ_OP_MATMUL_SPARSE24), A 2:4 sparse
 * (in every aligned group of four consecutive elements of a row at most two are non-zero), B
 * "row.col" (stored N x K row-major, b_layout CROQ_COL_MAJOR), C row-major, any M, N, K, f32
 * accumulation. Element types: f16 -> f32, f16 -> f16, bf16 -> f32, bf16 -> bf16, e4m3 -> f16,
 * e4m3 -> bf16, e4m3 -> f32 (optionally with per-tensor f32 scales, CROQ_SCALE_TENSOR).
 *
 * The harness hands A in dense form [M,K] with its 2:4 metadata ([M, K/8] bytes, a nibble
 * i0 | i1 << 2 per group of four naming the kept positions; the other two positions hold arbitrary
 * values and are never read). croq_gemm_prepare compresses A once, off the clock, into this
 * template's own format (the "prepared A", below); the timed croq_gemm reads only that, B and C.
 * K must be a multiple of 8.

 * The configuration is chosen by macros placed in front of this file (the hopper_gemm_sp kernel
 * family writes them; docs/gemm_sp.md explains each):
 *
 *   CROQ_BM, CROQ_BN, CROQ_BK   CTA tile: BM rows (a multiple of 64 per consumer warpgroup), BN
 *                               columns (a multiple of 32 up to 256, the WGMMA N), BK logical K
 *                               per pipeline stage (64 or 128: 2 or 4 sparse WGMMA k32 steps for
 *                               16-bit inputs, 1 or 2 k64 steps for e4m3)
 *   CROQ_STAGES                 depth of the shared-memory ring (2..8)
 *   CROQ_CONSUMERS              1 or 2 consumer warpgroups beside the producer warpgroup; with 2
 *                               the producer gives its registers to them (setmaxnreg 40 / 232)
 *   CROQ_PINGPONG               0: the consumers split each tile's rows (cooperative); 1: each
 *                               computes whole tiles in turn, one's epilogue overlapping the
 *                               other's MMAs (needs CONSUMERS 2)
 *   CROQ_PERSISTENT             1: one CTA (cluster) per SM looping over tiles; 0: one per tile
 *   CROQ_RASTER, CROQ_GROUP     tile order: 0 row by row, 1 bands of GROUP tile-rows walked column
 *                               by column, 2 bands of GROUP tile-columns, 3 as 1 walked as a snake
 *   CROQ_CLUSTER_M, CLUSTER_N   thread-block cluster: CTAs sharing a B tile (CLUSTER_M) or an A
 *                               tile (CLUSTER_N) each load a slice and multicast it to the others
 *   CROQ_EPILOGUE               0: stores from the accumulator registers; 1: swizzled shared
 *                               memory (stmatrix for 16-bit outputs) and TMA tensor stores;
 *                               2: registers, 16-bit outputs transposed in each quad of lanes so
 *                               every thread stores 16 contiguous bytes
 *   CROQ_SWIZZLE_A, SWIZZLE_B   shared-memory swizzle width in bytes of the compressed A tile
 *                               (32, 64, 128) and of the B tile (64, 128); a width above a tile
 *                               row's bytes is clamped to it
 *   CROQ_MMA_DEPTH              WGMMA groups left in flight when a stage is released (0 or 1; with 1
 *                               the next k block's metadata words go to a second register set, since
 *                               a sparse WGMMA reads its metadata register while it runs)
 *   CROQ_META                   where the sparse metadata comes from: 0 TMA'd with the stage, each
 *                               WGMMA's word read from shared memory just before it; 1 TMA'd with
 *                               the stage, all of the stage's words read at once (vector loads)
 *                               before its first WGMMA (hoisted); 2 not in shared memory at all:
 *                               each consumer thread loads its words for the next k block from
 *                               global memory (L2) into registers while the current block's
 *                               WGMMAs run
 *   CROQ_SPLIT_K                k slices per output tile (1: none), reduced in slice order through
 *                               the workspace by the last slice (deterministic); needs PERSISTENT
 *   CROQ_SPLIT_TAIL             with SPLIT_K > 1: 0 splits every tile; 1 splits only the tiles of
 *                               the last, partly filled wave (or of the last wave and a half), the
 *                               others computed whole before them, when that ends the kernel
 *                               sooner: 1024 tiles on 132 SMs take 8 waves of whole tiles, 7 and 4/5
 *                               with the last 100 in 5 slices (the launch picks the tail from the
 *                               clusters that are resident; no tail when the waves are full)
 *   CROQ_PROMOTE                e4m3 inputs only (16-bit inputs ignore it): two-level accumulation.
 *                               An FP8 WGMMA adds into its f32 accumulators with reduced precision
 *                               (the tensor core keeps about 14 bits of the running sum), so the
 *                               error grows with K. 0: off (the WGMMAs accumulate the whole k
 *                               range); N > 0: every N k blocks the WGMMA accumulators are added
 *                               into separate f32 registers and the next WGMMA starts afresh
 *                               (scale-d 0), which needs twice the accumulator registers
 *   CROQ_PROMOTE_SUB            with CROQ_PROMOTE 1 (and MMA_DEPTH 0): 1 computes each k block one
 *                               sub-tile at a time (one m64 atom x BN/2 columns) into a small
 *                               WGMMA accumulator that is added into the f32 tile accumulators
 *                               right after it: 1.5 x the accumulator registers instead of 2 x;
 *                               each sub-tile waits for its WGMMAs, the other consumer warpgroup
 *                               keeps the tensor cores busy; one m64 atom per consumer (with two,
 *                               ptxas spilled 92-116 bytes at 128 + 32 accumulators)
 *   CROQ_KEEP                   how the metadata register sets are kept live until the wait that
 *                               retires their WGMMAs (see the main loop): 1 (default) stores of
 *                               the set under a branch never taken at run time (ptxas cannot tell
 *                               it), which keeps the registers live without any shared-memory
 *                               traffic; 0 the same stores always run (volatile shared-memory
 *                               stores, 16 bytes per consumer thread and k block: the kernels
 *                               before 2026-12-04, 1-2.7 % slower at 4096x8192x8192, since a
 *                               sparse kernel is bound by shared memory's bandwidth)
 *   CROQ_DTYPES                 which instantiations to compile (bit mask; default all): 1 f16->f32,
 *                               2 f16->f16, 4 bf16->f32, 8 bf16->bf16, 16 e4m3->f16, 32 e4m3->bf16,
 *                               64 e4m3->f32
 *   CROQ_ACC_UNCHECKED          1: build past the accumulator limit (never set by the family)
 *
 * Prepared A (croq_gemm_prepared_bytes / croq_gemm_prepare). With Kp = K rounded up to 64 and
 * Mb = ceil(M / 64):
 *   values   [M, Kp/2] row-major, element type of A: the two kept elements of every group of four,
 *            in k order (zeros past K);
 *   metadata [Mb, Kp/64 chunks, 128 words] u32: for each 64-row block and 64-wide k chunk, the
 *            words one consumer warpgroup hands to its sparse WGMMAs, in thread order, so that a
 *            thread reads its own words with one vector load. Each group of four is a nibble
 *            (i0 | i1 << 2, the positions of the kept elements, i0 < i1), groups in k order from
 *            bit 0. 16-bit inputs (k32 WGMMA): thread t = 32 w + l holds for each k32 step
 *            s of the chunk the word [row r, k0..k0+15 | row r+8, k0..k0+15] (16 bits each) with
 *            r = 16 w + l/4, k0 = 32 s + 16 (l % 2); lanes l and l ^ 2 hold the same words (the
 *            sparsity selector 0 reads lanes 0 and 1 of each quad), so a chunk stores 64 slots
 *            (w, l/4, l%2) x 2 steps. e4m3 (k64 WGMMA): thread t holds the 32 k of row
 *            r = 16 w + l/4 + 8 (l % 2) starting at k0 = 32 ((l/2) % 2), one word per thread;
 * A group whose nibble names no 2-of-4 pattern (i0 >= i1) gets NaN values (and positions 0 and 1), so
 * that the product shows it: croq_gemm_prepare never synchronises or reads device memory back.
 * Both are loaded by TMA: the values in BM x (BK/2) boxes with the A swizzle, the metadata in
 * (BM/64) x (BK/64 x 128 words) boxes without swizzle.
 *
 * Structure: warpgroup 0 is the producer (one thread issues the TMA loads of the compressed A
 * tile, the B tile and the metadata into a ring of STAGES shared-memory stages, each completing on
 * a "full" mbarrier); warpgroups 1..CONSUMERS wait on "full", issue
 * wgmma.mma_async.sp m64nBNk32 (k64 for e4m3) from shared-memory descriptors with the metadata
 * word in a register and sparsity selector 0, and release the stage on its "empty" mbarrier. A sparse
 * WGMMA reads its metadata register asynchronously, until the wgmma.wait_group that retires it, and
 * ptxas does not reserve the register that long: the consumers keep every metadata register set
 * live until that wait (a volatile shared-memory store of the set after it, under a branch that is
 * never taken: CROQ_KEEP) and alternate two sets
 * when a group stays in flight (see the main loop).
 * Edges: TMA fills out-of-bounds elements with zeros (M, N and K tails), the epilogue predicates
 * or clips. TMA needs 16-byte aligned rows: when B's or C's are not, the operand goes through a
 * padded copy in the workspace.
 */
#include <croq/kernel_abi.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <type_traits>

// ---------------------------------------------------------------------------------------------
// Configuration (defaults: a cooperative 128 x 256 tile)
// ---------------------------------------------------------------------------------------------
#ifndef CROQ_BM
#define CROQ_BM 128
#endif
#ifndef CROQ_BN
#define CROQ_BN 256
#endif
#ifndef CROQ_BK
#define CROQ_BK 64
#endif
#ifndef CROQ_STAGES
#define CROQ_STAGES 4
#endif
#ifndef CROQ_CONSUMERS
#define CROQ_CONSUMERS 2
#endif
#ifndef CROQ_PINGPONG
#define CROQ_PINGPONG 0
#endif
#ifndef CROQ_PERSISTENT
#define CROQ_PERSISTENT 1
#endif
#ifndef CROQ_RASTER
#define CROQ_RASTER 1
#endif
#ifndef CROQ_GROUP
#define CROQ_GROUP 8
#endif
#ifndef CROQ_CLUSTER_M
#define CROQ_CLUSTER_M 1
#endif
#ifndef CROQ_CLUSTER_N
#define CROQ_CLUSTER_N 1
#endif
#ifndef CROQ_EPILOGUE
#define CROQ_EPILOGUE 0
#endif
#ifndef CROQ_SWIZZLE_A
#define CROQ_SWIZZLE_A 128
#endif
#ifndef CROQ_SWIZZLE_B
#define CROQ_SWIZZLE_B 128
#endif
#ifndef CROQ_MMA_DEPTH
#define CROQ_MMA_DEPTH 1
#endif
#ifndef CROQ_META
#define CROQ_META 1
#endif
#ifndef CROQ_SPLIT_K
#define CROQ_SPLIT_K 1
#endif
#ifndef CROQ_SPLIT_TAIL
#define CROQ_SPLIT_TAIL 0
#endif
#ifndef CROQ_PROMOTE
#define CROQ_PROMOTE 0
#endif
#ifndef CROQ_PROMOTE_SUB
#define CROQ_PROMOTE_SUB 0
#endif
#ifndef CROQ_KEEP
#define CROQ_KEEP 1
#endif
#ifndef CROQ_DTYPES
#define CROQ_DTYPES 127
#endif

#define CROQ_STR_(x) #x
#define CROQ_STR(x) CROQ_STR_(x)

// Everything but the ABI entry points has internal linkage (the unnamed namespace): two kernels of
// this template with different configurations, loaded into one process or linked into one library
// (croq export), never share a function or a cache.
namespace croq_hopper_sp {
namespace {

struct e4m3_t {
  uint8_t bits;
};

constexpr int BM = CROQ_BM, BN = CROQ_BN, BK = CROQ_BK;
constexpr int STAGES = CROQ_STAGES;
constexpr int CONSUMERS = CROQ_CONSUMERS;
constexpr int CM = CROQ_CLUSTER_M, CN = CROQ_CLUSTER_N, CS = CM * CN;
constexpr bool PINGPONG = CROQ_PINGPONG != 0;
constexpr int META = CROQ_META;
constexpr int SPLIT_K = CROQ_SPLIT_K;
constexpr bool SPLIT_TAIL = CROQ_SPLIT_TAIL != 0;
constexpr int PROMOTE = CROQ_PROMOTE;          // e4m3: k blocks between promotions (0: off)
constexpr bool PROMOTE_SUB = CROQ_PROMOTE_SUB != 0;
constexpr int WG_M = PINGPONG ? BM : BM / CONSUMERS;  // rows of C per consumer warpgroup
constexpr int M_ATOMS = WG_M / 64;                    // m64 WGMMA per consumer per k step
constexpr int THREADS = (CONSUMERS + 1) * 128;
constexpr int KCHUNKS = BK / 64;                      // 64-wide metadata chunks per stage
constexpr int META_WORDS = 128;                       // u32 words per (64-row block, 64-k chunk)
constexpr int E_STAGE_BYTES = META == 2 ? 0 : (BM / 64) * KCHUNKS * META_WORDS * 4;
constexpr int FLAG_GROUPS = PINGPONG ? 1 : CONSUMERS;
constexpr int EPI_SLOT_BYTES = 8192;  // one TMA-epilogue chunk: 64 rows x 128 bytes
constexpr int EPI_BYTES = CROQ_EPILOGUE == 1 ? CONSUMERS * 2 * EPI_SLOT_BYTES : 0;
constexpr int BAR_BYTES = (((2 * STAGES + 2) * 8 + 127) / 128) * 128;
constexpr int KEEP_BYTES = CONSUMERS * 128 * 16;  // keep_alive's scratch: 16 bytes per consumer thread
constexpr bool REG_SHARING = CONSUMERS == 2;
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;

template <typename TIn>
struct Shape {
  static constexpr int ES = sizeof(TIn);
  static constexpr int KSTEP = ES == 1 ? 64 : 32;  // logical K of one sparse WGMMA
  static constexpr int KSTEPS = BK / KSTEP;        // sparse WGMMAs per stage and m64 atom
  static constexpr int A_ROW = BK / 2 * ES;        // bytes of a compressed A row per stage
  static constexpr int B_ROW = BK * ES;            // bytes of a B row (K-major) per stage
  static constexpr int SWA = CROQ_SWIZZLE_A < A_ROW ? CROQ_SWIZZLE_A : A_ROW;
  static constexpr int SWB = CROQ_SWIZZLE_B < B_ROW ? CROQ_SWIZZLE_B : B_ROW;
  static constexpr int A_ATOM = SWA / ES, B_ATOM = SWB / ES;  // elements per swizzle row
  static constexpr int A_STAGE_BYTES = BM * A_ROW;
  static constexpr int B_STAGE_BYTES = BN * B_ROW;
  static constexpr int AB_STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
  static constexpr int TX_BYTES = AB_STAGE_BYTES + E_STAGE_BYTES;  // bytes landing per stage
  static constexpr int SMEM_BYTES =
      1024 + STAGES * (AB_STAGE_BYTES + E_STAGE_BYTES) + EPI_BYTES + BAR_BYTES + KEEP_BYTES;
  static constexpr int MODE_A = SWA == 128 ? 1 : SWA == 64 ? 2 : 3;  // descriptor layout type
  static constexpr int MODE_B = SWB == 128 ? 1 : SWB == 64 ? 2 : 3;
  static constexpr int META_REGS = KSTEPS;  // metadata words per m64 atom and stage
  static_assert(SWA == 128 || SWA == 64 || SWA == 32, "A swizzle must be 32, 64 or 128 bytes");
  static_assert(SWB == 128 || SWB == 64, "B swizzle must be 64 or 128 bytes: one sparse WGMMA reads 64 bytes of K");
  static_assert(SMEM_BYTES <= 232448, "the configuration needs more than 227 KB of shared memory");
  // Swizzled TMA boxes and WGMMA operands need 1024-byte aligned regions: every A/B stage, every
  // region of a stage and the epilogue slots after the stages keep that alignment.
  static_assert(A_STAGE_BYTES % 1024 == 0 && B_STAGE_BYTES % 1024 == 0 && (BM / CN) * SWA % 1024 == 0 &&
                    (BN / CM) * SWB % 1024 == 0 && EPI_BYTES % 1024 == 0,
                "shared-memory regions must stay 1024-byte aligned");
};

static_assert(CONSUMERS == 1 || CONSUMERS == 2, "CROQ_CONSUMERS must be 1 or 2");
static_assert(!PINGPONG || CONSUMERS == 2, "CROQ_PINGPONG needs two consumer warpgroups");
static_assert(BM % (PINGPONG ? 64 : 64 * CONSUMERS) == 0 && BM <= 256,
              "BM must be a multiple of 64 * CONSUMERS (64 with PINGPONG), at most 256");
static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "BN must be a multiple of 32 in [32, 256]");
static_assert(BK == 64 || BK == 128, "CROQ_BK must be 64 or 128");
static_assert(CROQ_SWIZZLE_A == 32 || CROQ_SWIZZLE_A == 64 || CROQ_SWIZZLE_A == 128, "CROQ_SWIZZLE_A: 32, 64 or 128");
static_assert(CROQ_SWIZZLE_B == 64 || CROQ_SWIZZLE_B == 128, "CROQ_SWIZZLE_B: 64 or 128");
static_assert(META >= 0 && META <= 2, "CROQ_META must be 0, 1 or 2");
static_assert(STAGES >= 2 && STAGES <= 8, "CROQ_STAGES must be in [2, 8]");
static_assert(CS >= 1 && CS <= 4, "cluster size must be in [1, 4]");
static_assert(CROQ_KEEP == 0 || CROQ_KEEP == 1, "CROQ_KEEP must be 0 or 1");
static_assert((BM / CN) % 8 == 0, "A slices of a multicast must be multiples of 8 rows");
static_assert((BN / CM) % 8 == 0, "B slices of a multicast must be multiples of 8 rows");
static_assert(CROQ_EPILOGUE >= 0 && CROQ_EPILOGUE <= 2, "CROQ_EPILOGUE must be 0, 1 or 2");
static_assert(CROQ_RASTER >= 0 && CROQ_RASTER <= 3, "CROQ_RASTER must be in [0, 3]");
static_assert(SPLIT_K >= 1 && SPLIT_K <= 16, "CROQ_SPLIT_K must be in [1, 16]");
static_assert(CROQ_SPLIT_TAIL == 0 || (CROQ_SPLIT_TAIL == 1 && SPLIT_K > 1),
              "CROQ_SPLIT_TAIL=1 splits the last wave's tiles SPLIT_K ways: it needs CROQ_SPLIT_K > 1");
static_assert(SPLIT_K == 1 || CROQ_PERSISTENT == 1,
              "split-K waits for other CTAs' partial sums, which needs every CTA resident: CROQ_PERSISTENT=1");
static_assert(PROMOTE == 0 || PROMOTE == 1 || PROMOTE == 2 || PROMOTE == 4 || PROMOTE == 8 || PROMOTE == 16,
              "CROQ_PROMOTE must be 0, 1, 2, 4, 8 or 16");
static_assert(!PROMOTE_SUB || (PROMOTE == 1 && CROQ_MMA_DEPTH == 0 && (BN / 2) % 32 == 0 && M_ATOMS == 1),
              "CROQ_PROMOTE_SUB=1 promotes after every k block (CROQ_PROMOTE=1), waits for each sub-tile's WGMMAs "
              "(CROQ_MMA_DEPTH=0), needs BN/2 a multiple of 32 and one m64 atom per consumer (ptxas spills with two)");

struct Params {
  int m, n, k;
  int units_m, units_n, num_units;  // cluster tiles
  int num_kb;                       // k blocks of BK
  int split;                        // k slices per split tile (1: none)
  int dp_units;                     // units computed whole before the split ones (0: all split)
  int num_work;                     // dp_units + (num_units - dp_units) * split
  void* c;                          // register-epilogue target (row-major, ldc elements)
  long long ldc;
  const uint32_t* meta;             // prepared metadata (META 2 reads it directly)
  int meta_blocks;                  // 64-row blocks of the prepared metadata
  int meta_chunks;                  // 64-k chunks per block (Kp / 64)
  long long meta_row_words;         // u32 words per 64-row block (Kp / 64 * 128)
  const float* a_scale;             // per-tensor scales (nullptr: 1)
  const float* b_scale;
  float* partials;                  // split-K: per (split tile, slice < split-1) a BM x BN f32 slot
  unsigned long long* flags;        // split-K: per (split tile, slice < split-1, row owner) a ready flag
  unsigned long long tag;           // the value this launch writes into a ready flag (never 0)
  int never;                        // always 0: the condition of the stores that keep registers live
};

// ---------------------------------------------------------------------------------------------
// PTX wrappers
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}
__device__ __forceinline__ void mbar_arrive_local(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Arrive on the barrier at the same offset in CTA `cta` of the cluster (release at CTA scope: the
// arrive only says this CTA's WGMMAs, already complete, no longer read the stage).
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
__device__ __forceinline__ void flag_release(unsigned long long* f, unsigned long long v) {
  asm volatile("fence.acq_rel.gpu;\nst.release.gpu.global.u64 [%0], %1;" ::"l"(f), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long flag_acquire(const unsigned long long* f) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(f) : "memory");
  return v;
}
__device__ __forceinline__ void flag_clear(unsigned long long* f) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(f), "l"(0ULL) : "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void prefetch_tmap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void tma_load_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                                   uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_store(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void fence_acc(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ uint32_t ld_shared_u32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint2 ld_shared_u64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ uint32_t ld_global_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 ld_global_u64(const uint32_t* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
__device__ __forceinline__ void st_shared_volatile_v4(uint32_t addr, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.volatile.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
}
__device__ __forceinline__ void st_shared_v2(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

// Shared-memory matrix descriptor: start address, leading and stride byte offsets (16-byte units)
// and the swizzle mode in bits 62-63.
template <int MODE>
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32) | (static_cast<uint64_t>(MODE) << 62);
}

// wgmma.mma_async.sp m64nNk32 (16-bit inputs) / m64nNk64 (e4m3), f32 accumulators, A and B from
// shared memory (both K-major), the metadata word in a register, sparsity selector 0.
#define CROQ_R4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define CROQ_R16(i) CROQ_R4(i), CROQ_R4(i + 4), CROQ_R4(i + 8), CROQ_R4(i + 12)
#define CROQ_P16_0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define CROQ_P16_1 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define CROQ_P16_2 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define CROQ_P16_3 ", %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define CROQ_P16_4 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define CROQ_P16_5 ", %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define CROQ_P16_6 ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define CROQ_P16_7 ", %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
// SHAPE: "m64nNk32" etc; TY: ".f16.f16" etc; TAIL: the immediates after scale-d; IA, IB, IE, IS: the
// operand numbers of the A and B descriptors, the metadata and the scale-d flag.
#define CROQ_SPMMA(SHAPE, TY, TAIL, REGS, IA, IB, IE, IS, ...)                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" CROQ_STR(IS) ", 0;\n"                                   \
               "wgmma.mma_async.sp.sync.aligned." SHAPE ".f32" TY " {" REGS "}, %" CROQ_STR(IA) ", %" CROQ_STR( \
                   IB) ", %" CROQ_STR(IE) ", 0, p" TAIL ";\n}\n"                                            \
               : __VA_ARGS__                                                                               \
               : "l"(da), "l"(db), "r"(meta), "r"(scale_d))
#define CROQ_SPMMA_ALL(N, REGS, IA, IB, IE, IS, ...)                                                          \
  if constexpr (KIND == 0) {                                                                                  \
    CROQ_SPMMA("m64n" CROQ_STR(N) "k32", ".f16.f16", ", 1, 1, 0, 0", REGS, IA, IB, IE, IS, __VA_ARGS__);      \
  } else if constexpr (KIND == 1) {                                                                           \
    CROQ_SPMMA("m64n" CROQ_STR(N) "k32", ".bf16.bf16", ", 1, 1, 0, 0", REGS, IA, IB, IE, IS, __VA_ARGS__);    \
  } else {                                                                                                    \
    CROQ_SPMMA("m64n" CROQ_STR(N) "k64", ".e4m3.e4m3", ", 1, 1", REGS, IA, IB, IE, IS, __VA_ARGS__);          \
  }

// KIND: 0 f16, 1 bf16, 2 e4m3.
template <int N, int KIND>
__device__ __forceinline__ void wgmma_sp(float (&d)[N / 2], uint64_t da, uint64_t db, uint32_t meta, int scale_d) {
  if constexpr (N == 32) {
    CROQ_SPMMA_ALL(32, CROQ_P16_0, 16, 17, 18, 19, CROQ_R16(0))
  } else if constexpr (N == 64) {
    CROQ_SPMMA_ALL(64, CROQ_P16_0 CROQ_P16_1, 32, 33, 34, 35, CROQ_R16(0), CROQ_R16(16))
  } else if constexpr (N == 96) {
    CROQ_SPMMA_ALL(96, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2, 48, 49, 50, 51, CROQ_R16(0), CROQ_R16(16), CROQ_R16(32))
  } else if constexpr (N == 128) {
    CROQ_SPMMA_ALL(128, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3, 64, 65, 66, 67, CROQ_R16(0), CROQ_R16(16),
                   CROQ_R16(32), CROQ_R16(48))
  } else if constexpr (N == 160) {
    CROQ_SPMMA_ALL(160, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3 CROQ_P16_4, 80, 81, 82, 83, CROQ_R16(0),
                   CROQ_R16(16), CROQ_R16(32), CROQ_R16(48), CROQ_R16(64))
  } else if constexpr (N == 192) {
    CROQ_SPMMA_ALL(192, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3 CROQ_P16_4 CROQ_P16_5, 96, 97, 98, 99,
                   CROQ_R16(0), CROQ_R16(16), CROQ_R16(32), CROQ_R16(48), CROQ_R16(64), CROQ_R16(80))
  } else if constexpr (N == 224) {
    CROQ_SPMMA_ALL(224, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3 CROQ_P16_4 CROQ_P16_5 CROQ_P16_6, 112, 113, 114,
                   115, CROQ_R16(0), CROQ_R16(16), CROQ_R16(32), CROQ_R16(48), CROQ_R16(64), CROQ_R16(80),
                   CROQ_R16(96))
  } else {
    static_assert(N == 256, "unsupported wgmma N");
    CROQ_SPMMA_ALL(256, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3 CROQ_P16_4 CROQ_P16_5 CROQ_P16_6 CROQ_P16_7, 128,
                   129, 130, 131, CROQ_R16(0), CROQ_R16(16), CROQ_R16(32), CROQ_R16(48), CROQ_R16(64), CROQ_R16(80),
                   CROQ_R16(96), CROQ_R16(112))
  }
}

template <typename TIn>
__host__ __device__ constexpr int kind_of() {
  return std::is_same<TIn, __half>::value ? 0 : std::is_same<TIn, __nv_bfloat16>::value ? 1 : 2;
}

// ---------------------------------------------------------------------------------------------
// Tile order and work units
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void unit_coords(int u, const Params& p, int& um, int& un) {
#if CROQ_RASTER == 0
  um = u / p.units_n;
  un = u - um * p.units_n;
#elif CROQ_RASTER == 1 || CROQ_RASTER == 3
  const int per_group = CROQ_GROUP * p.units_n;
  const int g = u / per_group;
  const int first = g * CROQ_GROUP;
  const int size = min(p.units_m - first, CROQ_GROUP);
  const int r = u - g * per_group;
  um = first + r % size;
  un = r / size;
#if CROQ_RASTER == 3
  if (g & 1) un = p.units_n - 1 - un;  // snake: odd bands walked from the last column back
#endif
#else
  const int per_group = CROQ_GROUP * p.units_m;
  const int g = u / per_group;
  const int first = g * CROQ_GROUP;
  const int size = min(p.units_n - first, CROQ_GROUP);
  const int r = u - g * per_group;
  un = first + r % size;
  um = r / size;
#endif
}

// Work w: the units before p.dp_units whole, one each; then unit dp_units + j / split, k slice
// j % split with j = w - dp_units (the slices of a tile on neighbouring CTAs). `part` numbers the
// split units from 0 (their partial-sum slots); `split` is 1 for a whole unit.
struct Work {
  int unit, slice, kb0, kb1, split, part;
};
__host__ __device__ inline bool work_at(int w, const Params& p, Work& wk) {
  if (w >= p.num_work) return false;
  if (SPLIT_K == 1 || w < p.dp_units) {
    wk.unit = w;
    wk.slice = 0;
    wk.kb0 = 0;
    wk.kb1 = p.num_kb;
    wk.split = 1;
    wk.part = 0;
  } else {
    const int j = w - p.dp_units;
    wk.part = j / p.split;
    wk.unit = p.dp_units + wk.part;
    wk.slice = j - wk.part * p.split;
    wk.split = p.split;
    wk.kb0 = static_cast<int>(static_cast<long long>(wk.slice) * p.num_kb / p.split);
    wk.kb1 = static_cast<int>(static_cast<long long>(wk.slice + 1) * p.num_kb / p.split);
  }
  return true;
}

// The whole units computed before a split tail (SPLIT_TAIL): with U units on P resident clusters
// and r = U % P, the last r units (or the last r + P) are split `split` ways when their slices'
// rounds, ceil(T * split / P) / split tile times, end sooner than the ceil(T / P) of whole tiles.
// U (no tail) when the waves are full or splitting gains nothing; 0 (all split) without SPLIT_TAIL.
__host__ __device__ inline int tail_dp_units(int units, int split, int clusters) {
  if (!SPLIT_TAIL || split <= 1) return 0;
  if (clusters <= 0 || units <= clusters) return 0;  // one wave or less: split every unit
  const int r = units % clusters;
  if (r == 0) return units;
  int best_tail = 0;
  double best = 0;  // tile times saved against whole tiles
  for (int tail = r; tail <= r + clusters && tail <= units; tail += clusters) {
    const double whole = (tail + clusters - 1) / clusters;
    const double sliced = static_cast<double>((static_cast<long long>(tail) * split + clusters - 1) / clusters) / split;
    if (whole - sliced > best + 1e-9) {
      best = whole - sliced;
      best_tail = tail;
    }
  }
  return units - best_tail;
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b);
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}

template <typename TOut>
__device__ __forceinline__ void store_pair(TOut* c, long long ldc, int row, int col, int m, int n, float a, float b) {
  if (row >= m || col >= n) return;
  TOut* p = c + static_cast<long long>(row) * ldc + col;
  if constexpr (sizeof(TOut) == 4) {
    if (col + 1 < n) {
      *reinterpret_cast<float2*>(p) = make_float2(a, b);
    } else {
      *p = a;
    }
  } else {
    if (col + 1 < n) {
      *reinterpret_cast<uint32_t*>(p) = pack2<TOut>(a, b);
    } else {
      *p = static_cast<TOut>(a);
    }
  }
}

template <int PITCH>
__device__ __forceinline__ uint32_t swizzled(uint32_t off) {
  return off ^ (((off >> 7) & ((PITCH >> 4) - 1)) << 4);
}

template <typename T>
__device__ __forceinline__ uint32_t select4(const T (&v)[4], int i) {
  return i == 0 ? v[0] : i == 1 ? v[1] : i == 2 ? v[2] : v[3];
}

// ---------------------------------------------------------------------------------------------
// Preparation of A (off the clock)
// ---------------------------------------------------------------------------------------------
// The nibble of group g of row `row` (i0 | i1 << 2, the kept positions), from the harness's
// metadata [M, K/8]; groups past M or K keep positions 0 and 1 (their values are zero).
__host__ __device__ inline uint32_t nibble_at(const uint8_t* meta, int m, int k, long long row, long long g) {
  if (row >= m || g >= k / 4) return 0x4u;
  return (meta[row * (k / 8) + g / 2] >> (4 * (g % 2))) & 0xFu;
}
__host__ __device__ inline bool valid_nibble(uint32_t nib) { return (nib & 3u) < (nib >> 2); }

// `count` nibbles of row `row` from group g0 (bits 4i: group g0 + i).
__host__ __device__ inline uint32_t nibbles(const uint8_t* meta, int m, int k, long long row, long long g0, int count) {
  uint32_t w = 0;
  for (int i = 0; i < count; ++i) {
    const uint32_t nib = nibble_at(meta, m, k, row, g0 + i);
    w |= (valid_nibble(nib) ? nib : 0x4u) << (4 * i);  // an invalid group: NaN values at positions 0, 1
  }
  return w;
}

// Word w of the prepared metadata chunk (64-row block mb, 64-k chunk kc), for inputs of `es`
// bytes: the layout in the comment at the top.
__host__ __device__ inline uint32_t meta_word_value(const uint8_t* meta, int m, int k, long long mb, long long kc, int w,
                                                    int es) {
  if (es == 2) {
    const int slot = w / 2, step = w % 2;
    const int warp = slot / 16, g = (slot % 16) / 2, h = slot % 2;
    const long long r0 = mb * 64 + 16 * warp + g;
    const long long g0 = (kc * 64 + step * 32 + 16 * h) / 4;
    return nibbles(meta, m, k, r0, g0, 4) | (nibbles(meta, m, k, r0 + 8, g0, 4) << 16);
  }
  const int warp = w / 32, l = w % 32;
  const long long r = mb * 64 + 16 * warp + l / 4 + 8 * (l % 2);
  const long long g0 = (kc * 64 + 32 * ((l / 2) % 2)) / 4;
  return nibbles(meta, m, k, r, g0, 8);
}

// The word a consumer thread (0..127 in its warpgroup) reads for sparse WGMMA step j of a chunk:
// offset in words inside the chunk.
__host__ __device__ inline int consumer_meta_word(int tid, int es, int j) {
  const int warp = tid / 32, lane = tid % 32;
  return es == 2 ? (warp * 16 + (lane / 4) * 2 + (lane % 2)) * 2 + j : tid + j;
}

// The kept values (bit patterns) of group g of row `row` of A, in k order; false when the group's
// nibble names no 2-of-4 pattern. Zeros past M and K.
__host__ __device__ inline bool kept_values(const uint8_t* a, long long lda, const uint8_t* meta, int m, int k,
                                            long long row, long long g, int es, uint32_t* v0, uint32_t* v1) {
  const uint32_t nib = nibble_at(meta, m, k, row, g);
  *v0 = *v1 = 0;
  if (!valid_nibble(nib)) return false;
  if (row < m && g < k / 4) {
    const long long src = row * lda + 4 * g;
    if (es == 2) {
      *v0 = reinterpret_cast<const uint16_t*>(a)[src + (nib & 3u)];
      *v1 = reinterpret_cast<const uint16_t*>(a)[src + (nib >> 2)];
    } else {
      *v0 = a[src + (nib & 3u)];
      *v1 = a[src + (nib >> 2)];
    }
  }
  return true;
}

// One thread per (row, group of four) of the padded A: the two kept values, in k order; NaN for a
// group whose nibble names no pattern.
template <int ES>
__global__ void compress_values(const uint8_t* a, long long lda, const uint8_t* meta, int m, int k, int kp,
                                uint8_t* vals) {
  const long long groups = static_cast<long long>(m) * (kp / 4);
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < groups;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = i / (kp / 4), g = i - row * (kp / 4);
    uint32_t v0, v1;
    if (!kept_values(a, lda, meta, m, k, row, g, ES, &v0, &v1)) v0 = v1 = ES == 2 ? 0x7FFFu : 0x7Fu;  // NaN in f16, bf16 and e4m3

    const long long dst = row * (kp / 2) + 2 * g;  // even: one 2-element store
    if constexpr (ES == 2) {
      reinterpret_cast<uint32_t*>(vals)[dst / 2] = v0 | (v1 << 16);
    } else {
      reinterpret_cast<uint16_t*>(vals)[dst / 2] = static_cast<uint16_t>(v0 | (v1 << 8));
    }
  }
}

// One thread per prepared metadata word.
template <int ES>
__global__ void build_meta(const uint8_t* meta, int m, int k, int kp, uint32_t* out) {
  const int mbs = (m + 63) / 64, chunks = kp / 64;
  const long long words = static_cast<long long>(mbs) * chunks * META_WORDS;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int w = static_cast<int>(i % META_WORDS);
    const long long rest = i / META_WORDS;
    out[i] = meta_word_value(meta, m, k, rest / chunks, rest % chunks, w, ES);
  }
}

// ---------------------------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------------------------
// f32 accumulators a consumer thread may hold without spilling (ptxas of CUDA 13.0, every variant
// of the template): 192, 160 with split-K's reduction; 32 fewer when the metadata register sets
// crowd them: 16-bit inputs at BK 128 (four k32 steps' words per m64 atom), a ping-pong kernel with
// the quad-transposed 16-bit epilogue or with META 2, or META 0 (words loaded between the WGMMAs).
// f32 registers a consumer thread holds for its accumulators: the WGMMA accumulators of its tile,
// and with promotion (e4m3 only) the f32 tile accumulators beside them (CROQ_PROMOTE_SUB: the
// WGMMA accumulators of one m64 x BN/2 sub-tile).
template <typename TIn>
__host__ __device__ constexpr int accumulator_registers() {
  constexpr int tile = M_ATOMS * BN / 2;
  return kind_of<TIn>() != 2 || PROMOTE == 0 ? tile : PROMOTE_SUB ? tile + BN / 4 : 2 * tile;
}

template <typename TIn, typename TOut>
__host__ __device__ constexpr int max_accumulators() {
  const bool meta_regs = (sizeof(TIn) == 2 && BK == 128) || (PINGPONG && CROQ_EPILOGUE == 2 && sizeof(TOut) == 2) ||
                         META == 0 || (META == 2 && PINGPONG);
  return (SPLIT_K > 1 ? 160 : 192) - (meta_regs ? 32 : 0);
}

template <typename TIn, typename TOut>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_sp_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                   const __grid_constant__ CUtensorMap tm_e, const __grid_constant__ CUtensorMap tm_c,
                   const Params p) {
  using S = Shape<TIn>;
  constexpr int KIND = kind_of<TIn>();
#if !defined(CROQ_ACC_UNCHECKED) || CROQ_ACC_UNCHECKED == 0
  static_assert(accumulator_registers<TIn>() <= max_accumulators<TIn, TOut>(),
                "too many accumulators per consumer thread: at most 192 (160 with split-K; 32 fewer with 16-bit "
                "inputs at BK=128, a ping-pong kernel with the quad-transposed epilogue or META=2, or META=0; "
                "twice the tile's with CROQ_PROMOTE, 1.25-1.5 times with CROQ_PROMOTE_SUB)");
#endif
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;  // swizzled regions need 1024-byte alignment
  // A/B stages, the epilogue slots (1024-byte aligned: swizzled TMA stores), the metadata stages
  // (multiples of 512 bytes), the barriers.
  const uint32_t epi_base = base + STAGES * S::AB_STAGE_BYTES;
  const uint32_t e_base = epi_base + EPI_BYTES;
  const uint32_t bar_base = e_base + STAGES * E_STAGE_BYTES;
  auto full_bar = [&](int s) { return bar_base + 8u * s; };
  auto empty_bar = [&](int s) { return bar_base + 8u * (STAGES + s); };
  auto order_bar = [&](int c) { return bar_base + 8u * (2 * STAGES + c); };
  const uint32_t keep_base = bar_base + BAR_BYTES;

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  const uint32_t rank = CS > 1 ? cluster_ctarank() : 0;
  const int cm = static_cast<int>(rank % CM);
  const int cn = static_cast<int>(rank / CM);

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar(s), 1);
      mbar_init(empty_bar(s), (PINGPONG ? 1 : CONSUMERS) * CS);
    }
    mbar_init(order_bar(0), 1);
    mbar_init(order_bar(1), 1);
    fence_barrier_init();
    prefetch_tmap(&tm_a);
    prefetch_tmap(&tm_b);
    if (META != 2) prefetch_tmap(&tm_e);
    if (CROQ_EPILOGUE == 1) prefetch_tmap(&tm_c);
  }
  if constexpr (CS > 1) {
    cluster_sync_all();
  } else {
    __syncthreads();
  }

  const int cluster_id = blockIdx.x / CS;
  const int num_clusters = gridDim.x / CS;
  if (wg == 0) {
    // ------------------------------- producer -------------------------------
    if constexpr (REG_SHARING) setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) {
      int stage = 0;
      uint32_t phase = 0;
      uint16_t mask_a = 0, mask_b = 0;
      for (int j = 0; j < CN; ++j) mask_a |= static_cast<uint16_t>(1u << (cm + j * CM));
      for (int i = 0; i < CM; ++i) mask_b |= static_cast<uint16_t>(1u << (i + cn * CM));
      constexpr int A_ROWS = BM / CN;  // A rows this CTA loads (and multicasts) per region
      constexpr int B_ROWS = BN / CM;
      Work wk;
      for (int w = cluster_id; work_at(w, p, wk); w += num_clusters) {
        int um, un;
        unit_coords(wk.unit, p, um, un);
        const int m0 = (um * CM + cm) * BM;
        const int n0 = (un * CN + cn) * BN;
        for (int kb = wk.kb0; kb < wk.kb1; ++kb) {
          mbar_wait(empty_bar(stage), phase ^ 1);
          const uint32_t fb = full_bar(stage);
          mbar_expect_tx(fb, S::TX_BYTES);
          const uint32_t sa = base + stage * S::AB_STAGE_BYTES;
          const uint32_t sb = sa + S::A_STAGE_BYTES;
          // Compressed A: regions of A_ATOM columns x BM rows; this CTA loads rows [cn*A_ROWS, +A_ROWS).
#pragma unroll
          for (int r = 0; r < S::A_ROW / S::SWA; ++r) {
            const uint32_t dst = sa + (r * BM + cn * A_ROWS) * S::SWA;
            const int kc = kb * (BK / 2) + r * S::A_ATOM;
            if constexpr (CN > 1) {
              tma_load_multicast(dst, &tm_a, fb, kc, m0 + cn * A_ROWS, mask_a);
            } else {
              tma_load(dst, &tm_a, fb, kc, m0);
            }
          }
          // B stored N x K: regions of B_ATOM columns (K) x BN rows (N).
#pragma unroll
          for (int r = 0; r < S::B_ROW / S::SWB; ++r) {
            const uint32_t dst = sb + (r * BN + cm * B_ROWS) * S::SWB;
            const int kc = kb * BK + r * S::B_ATOM;
            if constexpr (CM > 1) {
              tma_load_multicast(dst, &tm_b, fb, kc, n0 + cm * B_ROWS, mask_b);
            } else {
              tma_load(dst, &tm_b, fb, kc, n0);
            }
          }
          if constexpr (META != 2) {
            // Metadata: BM/64 blocks x KCHUNKS chunks of 128 words, every CTA its own.
            tma_load(e_base + stage * E_STAGE_BYTES, &tm_e, fb, kb * KCHUNKS * META_WORDS, m0 / 64);
          }
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
      // Wait until every stage has been released by all consumers of the cluster, so that no CTA
      // arrives on this CTA's barriers after it has exited.
      if constexpr (CS > 1) {
        for (int s = 0; s < STAGES; ++s) {
          mbar_wait(empty_bar(stage), phase ^ 1);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    // ------------------------------- consumers -------------------------------
    if constexpr (REG_SHARING) setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    // This thread's metadata word offset inside a 128-word chunk (see the prepared-A layout).
    constexpr bool WIDE = S::ES == 2;  // 16-bit inputs: two k32 steps per chunk, read as a pair
    const int meta_word = consumer_meta_word(tid, S::ES, 0);
    float acc[M_ATOMS][BN / 2];
    // Promotion (e4m3, CROQ_PROMOTE > 0): acc holds the f32 tile sums, added to by the consumer
    // only. Whole tile (WHOLE): the WGMMAs accumulate PROM k blocks into wacc, which is then added
    // into acc (and after the unit's last block). Sub-tiles (SUB): the WGMMAs of one m64 x BN/2
    // sub-tile accumulate one k block into sub, which is added into acc at once.
    constexpr int PROM = KIND == 2 ? PROMOTE : 0;
    constexpr bool SUB = PROM > 0 && PROMOTE_SUB;
    constexpr bool WHOLE = PROM > 0 && !SUB;
    [[maybe_unused]] float wacc[WHOLE ? M_ATOMS : 1][WHOLE ? BN / 2 : 16];
    [[maybe_unused]] float sub[SUB ? BN / 4 : 16];
    const float alpha = (p.a_scale ? *p.a_scale : 1.f) * (p.b_scale ? *p.b_scale : 1.f);

    [[maybe_unused]] auto publish_partial = [&](float* slot, unsigned long long* flag, int rb0) {
      float4* dst = reinterpret_cast<float4*>(slot);
#pragma unroll
      for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
        for (int i = 0; i < BN / 8; ++i)
          __stcg(dst + ((rb0 + ma) * (BN / 8) + i) * 128 + tid,
                 make_float4(acc[ma][4 * i], acc[ma][4 * i + 1], acc[ma][4 * i + 2], acc[ma][4 * i + 3]));
      named_barrier(1 + cw, 128);
      if (tid == 0) flag_release(flag, p.tag);
    };
    [[maybe_unused]] auto add_partials = [&](int last, auto slot_of, auto flag_of, int rb0) {
      if (tid == 0) {
        for (int q = 0; q < last; ++q) {
          unsigned long long* f = flag_of(q);
          while (flag_acquire(f) != p.tag) __nanosleep(32);
          flag_clear(f);
        }
      }
      named_barrier(1 + cw, 128);
      for (int q = 0; q < last; ++q) {
        const float4* src = reinterpret_cast<const float4*>(slot_of(q));
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
          for (int i = 0; i < BN / 8; ++i) {
            const float4 v = __ldcg(src + ((rb0 + ma) * (BN / 8) + i) * 128 + tid);
            acc[ma][4 * i] += v.x;
            acc[ma][4 * i + 1] += v.y;
            acc[ma][4 * i + 2] += v.z;
            acc[ma][4 * i + 3] += v.w;
          }
      }
    };
    int stage = 0;
    uint32_t phase = 0;
    auto release = [&](int s) {
      if (tid == 0) {
        if constexpr (CS > 1) {
#pragma unroll
          for (int r = 0; r < CS; ++r) mbar_arrive_cluster(empty_bar(s), r);
        } else {
          mbar_arrive_local(empty_bar(s));
        }
      }
    };
    // Stores a metadata register set (once its WGMMAs are retired), so that ptxas keeps every word in
    // its register until here: see the main loop.
    const uint32_t keep_addr = keep_base + (cw * 128 + tid) * 16;
    auto keep_alive = [&](const uint32_t (&set)[M_ATOMS][S::META_REGS]) {
      constexpr int N = M_ATOMS * S::META_REGS;
      if (CROQ_KEEP == 1 && !p.never) return;  // stores ptxas must assume, never run
#pragma unroll
      for (int i = 0; i < N; i += 4) {
        const uint32_t* w = &set[0][0];
        st_shared_volatile_v4(keep_addr, w[i], w[i + 1 < N ? i + 1 : i], w[i + 2 < N ? i + 2 : i],
                              w[i + 3 < N ? i + 3 : i]);
      }
    };
    int local = 0;
    [[maybe_unused]] long long pos = 0;  // PINGPONG: ring position of the next unit's first k block
    [[maybe_unused]] int slot = 0;       // epilogue slot (EPILOGUE 1)
    Work wk;
    for (int w = cluster_id; work_at(w, p, wk); w += num_clusters, ++local) {
      const int kb0 = wk.kb0, kb1 = wk.kb1;
      if constexpr (PINGPONG) {
        const long long first = pos;
        pos += kb1 - kb0;
        if ((local & 1) != cw) continue;
        stage = static_cast<int>(first % STAGES);
        phase = static_cast<uint32_t>((first / STAGES) & 1);
        if (local > 0) mbar_wait(order_bar(1 - cw), static_cast<uint32_t>(((local - 1) >> 1) & 1));
      }
      int um, un;
      unit_coords(wk.unit, p, um, un);
      const int m0 = (um * CM + cm) * BM;
      const int n0 = (un * CN + cn) * BN;
      const int row0 = PINGPONG ? 0 : cw * WG_M;  // this consumer's first row in the tile

      // The metadata words of a k block live in one of two register sets, used alternately (cur for
      // the block being issued, prev for the one before). A sparse WGMMA reads its metadata register
      // after it has been issued, while it runs, and ptxas does not keep that register reserved
      // until the wgmma.wait_group that retires it: without help it reuses it at once (for the next
      // block's words, a descriptor, a loop counter) and the WGMMA multiplies with whatever lands
      // there. So every set stays live until the wait that retires its WGMMAs: keep_alive() stores
      // it (volatile shared-memory stores, which ptxas orders after the wait) only then, and only
      // then is the set loaded again. With CROQ_KEEP 1 the stores sit under a branch on p.never,
      // which is 0: ptxas keeps the registers live all the same, and no byte moves.
      using MetaSet = uint32_t[M_ATOMS][S::META_REGS];
      MetaSet meta_a, meta_b;
#pragma unroll
      for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
        for (int j = 0; j < S::META_REGS; ++j) meta_a[ma][j] = meta_b[ma][j] = 0x44444444u;
      // META 2: this thread's words of k block kb straight from global memory (L2).
      [[maybe_unused]] auto fetch_meta = [&](int kb, MetaSet& dst) {
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma) {
          const int mb = (m0 + row0 + ma * 64) / 64;
          const bool in = mb < p.meta_blocks && kb < kb1;
          const uint32_t* src = p.meta + mb * p.meta_row_words + static_cast<long long>(kb) * KCHUNKS * META_WORDS + meta_word;
#pragma unroll
          for (int c = 0; c < KCHUNKS; ++c) {
            // Chunks past Kp (the second half of the last BK=128 block) hold no words: A is zero there.
            const bool here = in && kb * KCHUNKS + c < p.meta_chunks;
            if constexpr (WIDE) {
              const uint2 v = here ? ld_global_u64(src + c * META_WORDS) : make_uint2(0x44444444u, 0x44444444u);
              dst[ma][2 * c] = v.x;
              dst[ma][2 * c + 1] = v.y;
            } else {
              dst[ma][c] = here ? ld_global_u32(src + c * META_WORDS) : 0x44444444u;
            }
          }
        }
      };
      if constexpr (META == 2) fetch_meta(kb0, meta_a);
      if constexpr (PROM > 0) {
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
          for (int i = 0; i < BN / 2; ++i) acc[ma][i] = 0.f;
      }

      int prev_stage = 0;
      // One k block: its words in `cur`; `prev` holds the previous block's (MMA_DEPTH 1: still in
      // flight until the wait below).
      auto kblock = [&](int kb, MetaSet& cur, MetaSet& prev) {
        if constexpr (META == 2 && CROQ_MMA_DEPTH == 0) fetch_meta(kb + 1, prev);  // prev retired already
        mbar_wait(full_bar(stage), phase);
        const uint32_t sa = base + stage * S::AB_STAGE_BYTES;
        const uint32_t sb = sa + S::A_STAGE_BYTES;
        const uint32_t se = e_base + stage * E_STAGE_BYTES;
        // Shared-memory address of this thread's words of m64 atom ma, chunk c.
        auto meta_addr = [&](int ma, int c) {
          return se + ((((row0 + ma * 64) / 64) * KCHUNKS + c) * META_WORDS + meta_word) * 4;
        };
        if constexpr (META == 1) {
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
            for (int c = 0; c < KCHUNKS; ++c) {
              if constexpr (WIDE) {
                const uint2 v = ld_shared_u64(meta_addr(ma, c));
                cur[ma][2 * c] = v.x;
                cur[ma][2 * c + 1] = v.y;
              } else {
                cur[ma][c] = ld_shared_u32(meta_addr(ma, c));
              }
            }
        }
        if constexpr (SUB) {
          // Sub-tiles: for each m64 atom (one) and half of the columns, this block's WGMMAs into `sub`
          // (starting afresh), waited for, and added into the f32 tile accumulators.
          if constexpr (META == 0) {
#pragma unroll
            for (int ks = 0; ks < S::KSTEPS; ++ks)
#pragma unroll
              for (int ma = 0; ma < M_ATOMS; ++ma) {
                const int c = ks / (S::KSTEPS / KCHUNKS), j = ks % (S::KSTEPS / KCHUNKS);
                cur[ma][ks] = ld_shared_u32(meta_addr(ma, c) + 4 * (consumer_meta_word(tid, S::ES, j) - meta_word));
              }
          }
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
            for (int half = 0; half < 2; ++half) {
              fence_acc(sub);
              wgmma_fence();
#pragma unroll
              for (int ks = 0; ks < S::KSTEPS; ++ks) {
                const int a_off = ks * 32, b_off = ks * 64;
                const uint64_t db = make_desc<S::MODE_B>(
                    sb + ((b_off / S::SWB) * BN + half * (BN / 2)) * S::SWB + (b_off % S::SWB), 16, 8 * S::SWB);
                const uint64_t da = make_desc<S::MODE_A>(
                    sa + ((a_off / S::SWA) * BM + row0 + ma * 64) * S::SWA + (a_off % S::SWA), 16, 8 * S::SWA);
                wgmma_sp<BN / 2, KIND>(sub, da, db, cur[ma][ks], ks != 0 ? 1 : 0);
              }
              wgmma_commit();
              wgmma_wait<0>();
              fence_acc(sub);
#pragma unroll
              for (int i = 0; i < BN / 4; ++i) acc[ma][half * (BN / 4) + i] += sub[i];
            }
        } else {
          // The first WGMMA of a unit, and with promotion of every PROM k blocks, starts afresh.
          const bool fresh = PROM > 0 ? (kb - kb0) % (PROM > 0 ? PROM : 1) == 0 : kb == kb0;
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma) {
            if constexpr (WHOLE) {
              fence_acc(wacc[ma]);
            } else {
              fence_acc(acc[ma]);
            }
          }
          wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < S::KSTEPS; ++ks) {
            // One sparse WGMMA reads 32 bytes of each compressed A row and 64 bytes of each B row.
            const int a_off = ks * 32, b_off = ks * 64;
            const uint64_t db = make_desc<S::MODE_B>(sb + (b_off / S::SWB) * BN * S::SWB + (b_off % S::SWB), 16,
                                                     8 * S::SWB);
            if constexpr (META == 0) {
#pragma unroll
              for (int ma = 0; ma < M_ATOMS; ++ma) {
                const int c = ks / (S::KSTEPS / KCHUNKS), j = ks % (S::KSTEPS / KCHUNKS);
                cur[ma][ks] = ld_shared_u32(meta_addr(ma, c) + 4 * (consumer_meta_word(tid, S::ES, j) - meta_word));
              }
              if (ks > 0) wgmma_fence();
            }
#pragma unroll
            for (int ma = 0; ma < M_ATOMS; ++ma) {
              const uint64_t da = make_desc<S::MODE_A>(
                  sa + ((a_off / S::SWA) * BM + row0 + ma * 64) * S::SWA + (a_off % S::SWA), 16, 8 * S::SWA);
              if constexpr (WHOLE) {
                wgmma_sp<BN, KIND>(wacc[ma], da, db, cur[ma][ks], (!fresh || ks != 0) ? 1 : 0);
              } else {
                wgmma_sp<BN, KIND>(acc[ma], da, db, cur[ma][ks], (!fresh || ks != 0) ? 1 : 0);
              }
            }
          }
          wgmma_commit();
        }
#if CROQ_MMA_DEPTH == 1
        wgmma_wait<1>();  // the previous block's WGMMAs are done: its stage and its words are free
        if (kb > kb0) {
          keep_alive(prev);
          release(prev_stage);
        }
        if constexpr (META == 2) fetch_meta(kb + 1, prev);
#else
        wgmma_wait<0>();
        keep_alive(cur);
        release(stage);
#endif
        if constexpr (WHOLE) {
          // Promotion, every PROM k blocks and after the unit's last: the WGMMAs retired (this
          // block's too), their sums added into acc; the next block starts afresh.
          if ((kb - kb0 + 1) % (WHOLE ? PROM : 1) == 0 || kb + 1 == kb1) {
            if constexpr (CROQ_MMA_DEPTH == 1) wgmma_wait<0>();
#pragma unroll
            for (int ma = 0; ma < M_ATOMS; ++ma) {
              fence_acc(wacc[ma]);
#pragma unroll
              for (int i = 0; i < BN / 2; ++i) acc[ma][i] += wacc[ma][i];
            }
          }
        }
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma) fence_acc(acc[ma]);
        prev_stage = stage;
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      };
      // Unrolled by two so that each register set keeps its name (no copies between the sets).
      int kb = kb0;
      for (; kb + 1 < kb1; kb += 2) {
        kblock(kb, meta_a, meta_b);
        kblock(kb + 1, meta_b, meta_a);
      }
      const bool odd = kb < kb1;
      if (odd) kblock(kb, meta_a, meta_b);
      if constexpr (PINGPONG) {
        if (tid == 0) mbar_arrive_local(order_bar(cw));
      }
#if CROQ_MMA_DEPTH == 1
      wgmma_wait<0>();
      if (kb1 > kb0) {
        if (odd) {
          keep_alive(meta_a);
        } else {
          keep_alive(meta_b);
        }
        release(prev_stage);
      }
#endif
#pragma unroll
      for (int ma = 0; ma < M_ATOMS; ++ma) fence_acc(acc[ma]);
      if (kb1 <= kb0) {
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
          for (int i = 0; i < BN / 2; ++i) acc[ma][i] = 0.f;
      }

      // ------------------------------- split-K reduction -------------------------------
      if constexpr (SPLIT_K > 1) {
        if (wk.split > 1) {
          const long long tile = static_cast<long long>(wk.part) * CS + rank;  // among the split tiles
          const int group = PINGPONG ? 0 : cw;
          auto slot_of = [&](int q) { return p.partials + (tile * (wk.split - 1) + q) * (BM * BN); };
          auto flag_of = [&](int q) { return p.flags + (tile * (wk.split - 1) + q) * FLAG_GROUPS + group; };
          if (wk.slice < wk.split - 1) {
            publish_partial(slot_of(wk.slice), flag_of(wk.slice), row0 / 64);
            continue;  // the tile's last slice writes C
          }
          add_partials(wk.split - 1, slot_of, flag_of, row0 / 64);
        }
      }
      if (p.a_scale || p.b_scale) {
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
          for (int i = 0; i < BN / 2; ++i) acc[ma][i] *= alpha;
      }

      // ------------------------------- epilogue -------------------------------
#if CROQ_EPILOGUE == 0 || CROQ_EPILOGUE == 2
      TOut* c = static_cast<TOut*>(p.c);
      if constexpr (CROQ_EPILOGUE == 2 && sizeof(TOut) == 2) {
        // Two 8-column blocks at a time: a 4 x 4 transpose across the quad of lanes gives each lane
        // all 8 columns of one (row, block), stored as one 16-byte vector.
        const int q = lane & 3;
        const int quad0 = lane & ~3;
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma) {
          const int row = m0 + row0 + ma * 64 + warp * 16 + lane / 4 + (q >> 1) * 8;
#pragma unroll
          for (int jj = 0; jj < BN / 16; ++jj) {
            const int j = 2 * jj;
            const uint32_t x[4] = {pack2<TOut>(acc[ma][4 * j], acc[ma][4 * j + 1]),
                                   pack2<TOut>(acc[ma][4 * j + 4], acc[ma][4 * j + 5]),
                                   pack2<TOut>(acc[ma][4 * j + 2], acc[ma][4 * j + 3]),
                                   pack2<TOut>(acc[ma][4 * j + 6], acc[ma][4 * j + 7])};
            uint32_t got[4];
#pragma unroll
            for (int t = 0; t < 4; ++t) {
              const uint32_t v = select4(x, (q - t) & 3);
              got[t] = t == 0 ? v : __shfl_sync(0xffffffffu, v, quad0 | ((q + t) & 3));
            }
            const uint32_t o0 = select4(got, (0 - q) & 3), o1 = select4(got, (1 - q) & 3);
            const uint32_t o2 = select4(got, (2 - q) & 3), o3 = select4(got, (3 - q) & 3);
            const int col = n0 + (j + (q & 1)) * 8;
            if (row < p.m) {
              TOut* dst = c + static_cast<long long>(row) * p.ldc + col;
              if (col + 8 <= p.n) {
                *reinterpret_cast<uint4*>(dst) = make_uint4(o0, o1, o2, o3);
              } else {
                const uint32_t o[4] = {o0, o1, o2, o3};
#pragma unroll
                for (int e = 0; e < 8; ++e)
                  if (col + e < p.n) reinterpret_cast<uint16_t*>(dst)[e] = static_cast<uint16_t>(o[e / 2] >> (16 * (e % 2)));
              }
            }
          }
        }
      } else {
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma) {
          const int row = m0 + row0 + ma * 64 + warp * 16 + lane / 4;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) {
            const int col = n0 + j * 8 + (lane % 4) * 2;
            store_pair<TOut>(c, p.ldc, row, col, p.m, p.n, acc[ma][4 * j], acc[ma][4 * j + 1]);
            store_pair<TOut>(c, p.ldc, row + 8, col, p.m, p.n, acc[ma][4 * j + 2], acc[ma][4 * j + 3]);
          }
        }
      }
#else
      // Chunks of 64 rows x EPI_COLS columns through two swizzled slots per consumer; thread 0 of
      // the warpgroup issues the TMA store and, before a slot is rewritten, waits until the store
      // that last read it is done reading.
      constexpr int EPI_COLS = sizeof(TOut) == 4 ? 32 : (BN % 64 == 0 ? 64 : 32);
      constexpr int PITCH = EPI_COLS * static_cast<int>(sizeof(TOut));
#pragma unroll
      for (int ma = 0; ma < M_ATOMS; ++ma) {
#pragma unroll
        for (int ch = 0; ch < BN / EPI_COLS; ++ch) {
          const uint32_t buf = epi_base + (cw * 2 + slot) * EPI_SLOT_BYTES;
          if (tid == 0) bulk_wait_read<1>();
          named_barrier(1 + cw, 128);
          if constexpr (sizeof(TOut) == 4) {
#pragma unroll
            for (int jj = 0; jj < EPI_COLS / 8; ++jj) {
              const int j = ch * (EPI_COLS / 8) + jj;
              const int r = warp * 16 + lane / 4;
              const uint32_t cb = (jj * 8 + (lane % 4) * 2) * 4;
              st_shared_v2(buf + swizzled<PITCH>(r * PITCH + cb), acc[ma][4 * j], acc[ma][4 * j + 1]);
              st_shared_v2(buf + swizzled<PITCH>((r + 8) * PITCH + cb), acc[ma][4 * j + 2], acc[ma][4 * j + 3]);
            }
          } else {
#pragma unroll
            for (int jp = 0; jp < EPI_COLS / 16; ++jp) {
              const int j0 = ch * (EPI_COLS / 8) + jp * 2;
              const int q = lane / 8;
              const int r = warp * 16 + (q % 2) * 8 + lane % 8;
              const uint32_t cb = (jp * 2 + q / 2) * 16;
              stmatrix_x4(buf + swizzled<PITCH>(r * PITCH + cb), pack2<TOut>(acc[ma][4 * j0], acc[ma][4 * j0 + 1]),
                          pack2<TOut>(acc[ma][4 * j0 + 2], acc[ma][4 * j0 + 3]),
                          pack2<TOut>(acc[ma][4 * j0 + 4], acc[ma][4 * j0 + 5]),
                          pack2<TOut>(acc[ma][4 * j0 + 6], acc[ma][4 * j0 + 7]));
            }
          }
          fence_proxy_async_smem();
          named_barrier(1 + cw, 128);
          if (tid == 0) {
            tma_store(&tm_c, buf, n0 + ch * EPI_COLS, m0 + row0 + ma * 64);
            bulk_commit();
          }
          slot ^= 1;
        }
      }
#endif
    }
#if CROQ_EPILOGUE == 1
    if (tid == 0) bulk_wait_all();
#endif
  }
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------
inline size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

inline int elem_bytes(croq_dtype t) { return t == CROQ_E4M3 ? 1 : t == CROQ_F32 ? 4 : 2; }

// Where the parts of the prepared A lie.
struct Prepared {
  long long kp = 0, mb = 0;
  size_t off_meta = 0, bytes = 0;
};
inline Prepared prepared_layout(const croq_gemm_desc* d) {
  Prepared pr;
  pr.kp = static_cast<long long>(round_up(static_cast<size_t>(d->k), 64));
  pr.mb = (d->m + 63) / 64;
  const size_t values = static_cast<size_t>(d->m) * static_cast<size_t>(pr.kp / 2) * elem_bytes(d->a_type);
  pr.off_meta = round_up(values, 1024);
  pr.bytes = pr.off_meta + round_up(static_cast<size_t>(pr.mb) * static_cast<size_t>(pr.kp) * 8, 1024);
  return pr;
}

__global__ void copy_rows(const uint8_t* __restrict__ src, long long src_ld, uint8_t* __restrict__ dst,
                          long long dst_ld, long long rows, long long cols) {
  const long long total = rows * cols;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / cols, c = i - r * cols;
    dst[r * dst_ld + c] = src[r * src_ld + c];
  }
}
// Copies rows x cols_bytes bytes between row strides in bytes.
inline bool launch_copy(const void* src, long long src_ld, void* dst, long long dst_ld, long long rows,
                        long long cols_bytes, cudaStream_t stream) {
  const long long total = rows * cols_bytes;
  if (total == 0) return true;
  long long blocks = (total + 255) / 256;
  if (blocks > 8192) blocks = 8192;
  copy_rows<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<const uint8_t*>(src), src_ld,
                                                               static_cast<uint8_t*>(dst), dst_ld, rows, cols_bytes);
  return cudaGetLastError() == cudaSuccess;
}
inline bool aligned16(const void* p, long long ld_bytes) {
  return (reinterpret_cast<uintptr_t>(p) % 16) == 0 && (ld_bytes % 16) == 0;
}

// The current device's SM count (0 when it cannot be read).
inline int device_sms() {
  static const int sms = [] {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return 0;
    return n;
  }();
  return sms;
}

struct Grid {
  int units_m = 0, units_n = 0, num_units = 0, num_kb = 0, split = 1;
  long long tiles = 0;
  long long split_tiles = 0;  // tiles that may be split (partial-sum slots): all, or a tail
};
inline Grid make_grid(const croq_gemm_desc* d) {
  Grid g;
  const long long tiles_m = (d->m + BM - 1) / BM, tiles_n = (d->n + BN - 1) / BN;
  g.units_m = static_cast<int>((tiles_m + CM - 1) / CM);
  g.units_n = static_cast<int>((tiles_n + CN - 1) / CN);
  g.num_units = g.units_m * g.units_n;
  g.num_kb = static_cast<int>((d->k + BK - 1) / BK);
  g.split = SPLIT_K < g.num_kb ? SPLIT_K : g.num_kb;
  g.tiles = static_cast<long long>(g.num_units) * CS;
  g.split_tiles = g.tiles;
  // A split tail is under two waves of resident clusters: fewer than 2 x SMs tiles.
  if (SPLIT_TAIL && device_sms() > 0 && g.split_tiles > 2LL * device_sms()) g.split_tiles = 2LL * device_sms();
  return g;
}
inline size_t split_partial_bytes(const Grid& g) {
  return g.split > 1 ? static_cast<size_t>(g.split_tiles) * (g.split - 1) * BM * BN * sizeof(float) : 0;
}
inline size_t split_flag_bytes(const Grid& g) {
  return g.split > 1 ? round_up(static_cast<size_t>(g.split_tiles) * (g.split - 1) * FLAG_GROUPS * 8, 256) : 0;
}

// Which operands go through padded copies in the workspace (after the split-K partials and flags).
struct Plan {
  bool pad_b = false, pad_c = false;
  long long ldb_p = 0, ldc_p = 0;  // padded leading dimensions (elements)
  size_t off_b = 0, off_c = 0, off_flags = 0, bytes = 0;
};
inline Plan make_plan(const croq_gemm_desc* d, const Grid& g, const void* b, const void* c) {
  Plan pl;
  const int ib = elem_bytes(d->a_type), ob = elem_bytes(d->c_type);
  pl.pad_b = !aligned16(b, d->ldb * ib);
  pl.pad_c = !aligned16(c, d->ldc * ob);
  size_t off = split_partial_bytes(g);
  pl.off_flags = off;
  off += split_flag_bytes(g);
  if (pl.pad_b) {
    pl.ldb_p = static_cast<long long>(round_up(static_cast<size_t>(d->k), 16));
    pl.off_b = off;
    off += round_up(static_cast<size_t>(d->n) * pl.ldb_p * ib, 256);
  }
  if (pl.pad_c) {
    pl.ldc_p = static_cast<long long>(round_up(static_cast<size_t>(d->n), 8));
    pl.off_c = off;
    off += round_up(static_cast<size_t>(d->m) * pl.ldc_p * ob, 256);
  }
  pl.bytes = off;
  return pl;
}

inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      f = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

inline bool encode_2d(CUtensorMap* map, CUtensorMapDataType type, const void* ptr, long long rows, long long cols,
                      long long ld_bytes, int box_cols, int box_rows, CUtensorMapSwizzle swizzle) {
  auto enc = tensor_map_encoder();
  if (!enc) return false;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld_bytes)};
  cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
  cuuint32_t estr[2] = {1, 1};
  return enc(map, type, 2, const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
inline CUtensorMapSwizzle tma_swizzle(int bytes) {
  return bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_32B;
}
template <typename T>
constexpr CUtensorMapDataType tma_type() {
  return sizeof(T) == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
         : sizeof(T) == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
         : std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                          : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

struct MapKey {
  const void* a;
  const void* b;
  const void* c;
  long long m, n, k, ldb, ldc;
  bool operator==(const MapKey& o) const { return memcmp(this, &o, sizeof(MapKey)) == 0; }
};
struct MapEntry {
  bool valid = false;
  MapKey key;
  CUtensorMap a, b, e, c;
};

struct LaunchInfo {
  bool ready = false;
  croq_status status = CROQ_INTERNAL;
  int num_sms = 0;
  int max_clusters = 0;
};

inline unsigned long long next_tag() {
  static const unsigned long long seed =
      static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      reinterpret_cast<uintptr_t>(&seed);
  static std::atomic<unsigned long long> counter{0};
  unsigned long long z = seed + 0x9E3779B97F4A7C15ULL * (counter.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return z | 1;
}

template <typename TIn, typename TOut>
croq_status run(const croq_gemm_desc* d, const croq_gemm_operands* ops, cudaStream_t stream) {
  using S = Shape<TIn>;
  auto kernel = gemm_sp_kernel<TIn, TOut>;
  static LaunchInfo info;
  if (!info.ready) {
    info.ready = true;
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&info.num_sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      info.status = CROQ_LAUNCH_FAILED;
      return info.status;
    }
    if (major != 9) {
      info.status = CROQ_UNSUPPORTED;  // sm_90a code runs on compute capability 9.0 only
      return info.status;
    }
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::SMEM_BYTES) != cudaSuccess) {
      info.status = CROQ_LAUNCH_FAILED;
      return info.status;
    }
    info.max_clusters = info.num_sms / CS;
    if (CS > 1) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(CS * info.max_clusters, 1, 1);
      cfg.blockDim = dim3(THREADS, 1, 1);
      cfg.dynamicSmemBytes = S::SMEM_BYTES;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = CS;
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      int n = 0;
      if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) == cudaSuccess && n > 0) info.max_clusters = n;
    }
    info.status = CROQ_OK;
  }
  if (info.status != CROQ_OK) return info.status;

  const Prepared pr = prepared_layout(d);
  const Grid grid = make_grid(d);
  const Plan pl = make_plan(d, grid, ops->b, ops->c);
  if (pl.bytes > 0 && (ops->workspace == nullptr || ops->workspace_bytes < pl.bytes)) return CROQ_UNSUPPORTED;
  uint8_t* ws = static_cast<uint8_t*>(ops->workspace);
  const void* b_use = ops->b;
  void* c_use = ops->c;
  long long ldb = d->ldb, ldc = d->ldc;
  const int ob = static_cast<int>(sizeof(TOut));
  if (pl.pad_b) {
    if (!launch_copy(ops->b, d->ldb * S::ES, ws + pl.off_b, pl.ldb_p * S::ES, d->n, d->k * S::ES, stream))
      return CROQ_LAUNCH_FAILED;
    b_use = ws + pl.off_b;
    ldb = pl.ldb_p;
  }
  if (pl.pad_c) {
    c_use = ws + pl.off_c;
    ldc = pl.ldc_p;
  }
  const uint8_t* prep = static_cast<const uint8_t*>(ops->a_prepared);

  static MapEntry cache[8];
  static int next_slot = 0;
  MapKey key;
  memset(&key, 0, sizeof(key));
  key.a = prep;
  key.b = b_use;
  key.c = c_use;
  key.m = d->m;
  key.n = d->n;
  key.k = d->k;
  key.ldb = ldb;
  key.ldc = ldc;
  MapEntry* e = nullptr;
  for (auto& x : cache)
    if (x.valid && x.key == key) e = &x;
  if (!e) {
    e = &cache[next_slot];
    next_slot = (next_slot + 1) % 8;
    e->valid = false;
    bool ok = encode_2d(&e->a, tma_type<TIn>(), prep, d->m, pr.kp / 2, pr.kp / 2 * S::ES, S::A_ATOM, BM / CN,
                        tma_swizzle(S::SWA));
    ok = ok && encode_2d(&e->b, tma_type<TIn>(), b_use, d->n, d->k, ldb * S::ES, S::B_ATOM, BN / CM,
                         tma_swizzle(S::SWB));
    if (META != 2) {
      ok = ok && encode_2d(&e->e, CU_TENSOR_MAP_DATA_TYPE_UINT32, prep + pr.off_meta, pr.mb, pr.kp / 64 * META_WORDS,
                           pr.kp * 8, KCHUNKS * META_WORDS, BM / 64, CU_TENSOR_MAP_SWIZZLE_NONE);
    } else {
      memset(&e->e, 0, sizeof(e->e));
    }
    if (CROQ_EPILOGUE == 1) {
      constexpr int epi_cols = sizeof(TOut) == 4 ? 32 : (BN % 64 == 0 ? 64 : 32);
      ok = ok && encode_2d(&e->c, tma_type<TOut>(), c_use, d->m, d->n, ldc * ob, epi_cols, 64,
                           tma_swizzle(epi_cols * ob));
    } else {
      memset(&e->c, 0, sizeof(e->c));
    }
    if (!ok) return CROQ_INTERNAL;
    e->key = key;
    e->valid = true;
  }

  Params prm;
  memset(&prm, 0, sizeof(prm));
  prm.m = static_cast<int>(d->m);
  prm.n = static_cast<int>(d->n);
  prm.k = static_cast<int>(d->k);
  prm.units_m = grid.units_m;
  prm.units_n = grid.units_n;
  prm.num_units = grid.num_units;
  prm.num_kb = grid.num_kb;
  prm.split = grid.split;
  prm.dp_units = tail_dp_units(grid.num_units, grid.split, CROQ_PERSISTENT ? info.max_clusters : 0);
  if (static_cast<long long>(grid.num_units - prm.dp_units) * CS > grid.split_tiles) prm.dp_units = grid.num_units;
  prm.num_work = prm.dp_units + (grid.num_units - prm.dp_units) * grid.split;
  prm.c = c_use;
  prm.ldc = ldc;
  prm.meta = reinterpret_cast<const uint32_t*>(prep + pr.off_meta);
  prm.never = 0;
  prm.meta_blocks = static_cast<int>(pr.mb);
  prm.meta_chunks = static_cast<int>(pr.kp / 64);
  prm.meta_row_words = pr.kp / 64 * META_WORDS;
  prm.a_scale = d->scale_mode == CROQ_SCALE_TENSOR ? ops->a_scale : nullptr;
  prm.b_scale = d->scale_mode == CROQ_SCALE_TENSOR ? ops->b_scale : nullptr;
  const bool reduces = grid.split > 1 && prm.dp_units < grid.num_units;
  prm.partials = reduces ? reinterpret_cast<float*>(ws) : nullptr;
  prm.flags = reduces ? reinterpret_cast<unsigned long long*>(ws + pl.off_flags) : nullptr;
  prm.tag = reduces ? next_tag() : 0;
  int clusters = prm.num_work;
  if (CROQ_PERSISTENT && clusters > info.max_clusters) clusters = info.max_clusters;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * CS), 1, 1);
  cfg.blockDim = dim3(THREADS, 1, 1);
  cfg.dynamicSmemBytes = S::SMEM_BYTES;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  if (CS > 1) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CS;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  if (cudaLaunchKernelEx(&cfg, kernel, e->a, e->b, e->e, e->c, prm) != cudaSuccess) return CROQ_LAUNCH_FAILED;
  if (pl.pad_c) {
    if (!launch_copy(c_use, ldc * ob, ops->c, d->ldc * ob, d->m, d->n * ob, stream)) return CROQ_LAUNCH_FAILED;
  }
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}

// The CROQ_DTYPES bit of a problem's types (0: not computed by this template).
inline int dtype_bit(const croq_gemm_desc* d) {
  if (d->a_type != d->b_type) return 0;
  if (d->a_type == CROQ_F16 && d->c_type == CROQ_F32) return 1;
  if (d->a_type == CROQ_F16 && d->c_type == CROQ_F16) return 2;
  if (d->a_type == CROQ_BF16 && d->c_type == CROQ_F32) return 4;
  if (d->a_type == CROQ_BF16 && d->c_type == CROQ_BF16) return 8;
  if (d->a_type == CROQ_E4M3 && d->c_type == CROQ_F16) return 16;
  if (d->a_type == CROQ_E4M3 && d->c_type == CROQ_BF16) return 32;
  if (d->a_type == CROQ_E4M3 && d->c_type == CROQ_F32) return 64;
  return 0;
}

// CROQ_OK when the descriptor is one this template computes; else why not.
inline croq_status check_desc(const croq_gemm_desc* d) {
  if (d == nullptr || d->abi_version != CROQ_GEMM_ABI_VERSION ||
      d->struct_bytes < offsetof(croq_gemm_desc, scale_block_m))
    return CROQ_INVALID_ARGUMENT;
  if (d->op != CROQ_OP_MATMUL_SPARSE24) return CROQ_UNSUPPORTED;
  if (d->m <= 0 || d->n <= 0 || d->k <= 0 || d->m > (1LL << 30) || d->n > (1LL << 30) || d->k > (1LL << 30))
    return CROQ_UNSUPPORTED;
  if (d->k % 8 != 0) return CROQ_INVALID_ARGUMENT;  // the metadata holds two groups of four per byte
  if (d->b_layout != CROQ_COL_MAJOR) return CROQ_UNSUPPORTED;  // B must be "row.col" (N x K)
  if (d->lda < d->k || d->ldb < d->k || d->ldc < d->n) return CROQ_INVALID_ARGUMENT;
  if (d->compute_type != CROQ_F32) return CROQ_UNSUPPORTED;
  if (d->scale_mode != CROQ_SCALE_NONE && d->scale_mode != CROQ_SCALE_TENSOR) return CROQ_UNSUPPORTED;
  const int bit = dtype_bit(d);
  if (bit == 0 || !(CROQ_DTYPES & bit)) return CROQ_UNSUPPORTED;
  return CROQ_OK;
}

}  // namespace
}  // namespace croq_hopper_sp

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* ops, void* stream_ptr) {
  using namespace croq_hopper_sp;
  const croq_status st = check_desc(d);
  if (st != CROQ_OK) return st;
  if (ops == nullptr || ops->b == nullptr || ops->c == nullptr) return CROQ_INVALID_ARGUMENT;
  if (d->scale_mode == CROQ_SCALE_TENSOR && (ops->a_scale == nullptr || ops->b_scale == nullptr))
    return CROQ_INVALID_ARGUMENT;
  // The timed launch reads A only in the prepared form (croq_gemm_prepare).
  if (ops->a_prepared == nullptr || ops->a_prepared_bytes < prepared_layout(d).bytes ||
      reinterpret_cast<uintptr_t>(ops->a_prepared) % 16 != 0)
    return CROQ_INVALID_ARGUMENT;
  cudaStream_t s = static_cast<cudaStream_t>(stream_ptr);
  const int bit = dtype_bit(d);
#define CROQ_CASE(BIT, TI, TO)                                                 \
  if (bit == BIT) {                                                            \
    if constexpr ((CROQ_DTYPES & BIT) != 0) return run<TI, TO>(d, ops, s);     \
  }
  CROQ_CASE(1, __half, float)
  CROQ_CASE(2, __half, __half)
  CROQ_CASE(4, __nv_bfloat16, float)
  CROQ_CASE(8, __nv_bfloat16, __nv_bfloat16)
  CROQ_CASE(16, e4m3_t, __half)
  CROQ_CASE(32, e4m3_t, __nv_bfloat16)
  CROQ_CASE(64, e4m3_t, float)
#undef CROQ_CASE
  return CROQ_UNSUPPORTED;
}

CROQ_EXPORT size_t croq_gemm_prepared_bytes(const croq_gemm_desc* d) {
  using namespace croq_hopper_sp;
  if (check_desc(d) != CROQ_OK) return 0;
  return prepared_layout(d).bytes;
}

CROQ_EXPORT croq_status croq_gemm_prepare(const croq_gemm_desc* d, const croq_gemm_operands* ops, void* a_prepared,
                                          size_t a_prepared_bytes, void* stream_ptr) {
  using namespace croq_hopper_sp;
  const croq_status st = check_desc(d);
  if (st != CROQ_OK) return st;
  const Prepared pr = prepared_layout(d);
  if (ops == nullptr || ops->a == nullptr || ops->a_meta == nullptr || a_prepared == nullptr ||
      a_prepared_bytes < pr.bytes || reinterpret_cast<uintptr_t>(a_prepared) % 16 != 0)
    return CROQ_INVALID_ARGUMENT;
  cudaStream_t s = static_cast<cudaStream_t>(stream_ptr);
  uint8_t* out = static_cast<uint8_t*>(a_prepared);
  const int m = static_cast<int>(d->m), k = static_cast<int>(d->k), kp = static_cast<int>(pr.kp);
  const uint8_t* src = static_cast<const uint8_t*>(ops->a);
  const long long groups = static_cast<long long>(m) * (kp / 4);
  const long long words = pr.mb * (kp / 64) * META_WORDS;
  const unsigned gblocks = static_cast<unsigned>((groups + 255) / 256 < 65536 ? (groups + 255) / 256 : 65536);
  const unsigned wblocks = static_cast<unsigned>((words + 255) / 256 < 65536 ? (words + 255) / 256 : 65536);
  uint32_t* meta = reinterpret_cast<uint32_t*>(out + pr.off_meta);
  if (d->a_type == CROQ_E4M3) {
    compress_values<1><<<gblocks, 256, 0, s>>>(src, d->lda, ops->a_meta, m, k, kp, out);
    build_meta<1><<<wblocks, 256, 0, s>>>(ops->a_meta, m, k, kp, meta);
  } else {
    compress_values<2><<<gblocks, 256, 0, s>>>(src, d->lda, ops->a_meta, m, k, kp, out);
    build_meta<2><<<wblocks, 256, 0, s>>>(ops->a_meta, m, k, kp, meta);
  }
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}

CROQ_EXPORT size_t croq_gemm_workspace_bytes(const croq_gemm_desc* d) {
  using namespace croq_hopper_sp;
  if (check_desc(d) != CROQ_OK) return 0;
  // Pointers from cudaMalloc are 256-byte aligned; only unaligned leading dimensions need copies.
  // Size for the worst case of the pointers all the same: B and C padded whenever their leading
  // dimension is, plus the split-K partial sums and flags.
  const Grid g = make_grid(d);
  const int ib = elem_bytes(d->a_type), ob = elem_bytes(d->c_type);
  size_t bytes = split_partial_bytes(g) + split_flag_bytes(g);
  bytes += round_up(static_cast<size_t>(d->n) * round_up(static_cast<size_t>(d->k), 16) * ib, 256);
  bytes += round_up(static_cast<size_t>(d->m) * round_up(static_cast<size_t>(d->n), 8) * ob, 256);
  if ((d->ldb * ib) % 16 == 0 && (d->ldc * ob) % 16 == 0) bytes = split_partial_bytes(g) + split_flag_bytes(g);
  return bytes;
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\":\"hopper_gemm_sp\",\"params\":{\"BM\":" CROQ_STR(CROQ_BM) ",\"BN\":" CROQ_STR(
      CROQ_BN) ",\"BK\":" CROQ_STR(CROQ_BK) ",\"STAGES\":" CROQ_STR(CROQ_STAGES) ",\"CONSUMERS\":" CROQ_STR(CROQ_CONSUMERS) ",\"PINGPONG\":" CROQ_STR(CROQ_PINGPONG) ",\"PERSISTENT\":" CROQ_STR(CROQ_PERSISTENT) ",\"RASTER\":" CROQ_STR(CROQ_RASTER) ",\"GROUP\":" CROQ_STR(CROQ_GROUP) ",\"CLUSTER_M\":" CROQ_STR(CROQ_CLUSTER_M) ",\"CLUSTER_N\":" CROQ_STR(CROQ_CLUSTER_N) ",\"EPILOGUE\":" CROQ_STR(CROQ_EPILOGUE) ",\"SWIZZLE_A\":" CROQ_STR(CROQ_SWIZZLE_A) ",\"SWIZZLE_B\":" CROQ_STR(CROQ_SWIZZLE_B) ",\"MMA_DEPTH\":" CROQ_STR(CROQ_MMA_DEPTH) ",\"META\":" CROQ_STR(CROQ_META) ",\"SPLIT_K\":" CROQ_STR(CROQ_SPLIT_K) ",\"SPLIT_TAIL\":" CROQ_STR(CROQ_SPLIT_TAIL) ",\"PROMOTE\":" CROQ_STR(CROQ_PROMOTE) ",\"PROMOTE_SUB\":" CROQ_STR(CROQ_PROMOTE_SUB) ",\"DTYPES\":" CROQ_STR(CROQ_DTYPES) "}}";
}
