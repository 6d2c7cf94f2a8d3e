// croq-kernel: {"dtypes": {"matmul": ["f16f32", "bf16f32", "f16", "bf16", "e4m3f16", "e4m3bf16"], "blockscaled": ["e4m3bf16"]}, "rank": 5, "tensor_cores": true, "summary": "the hopper_gemm family's sm_90a template at its default (WGMMA, TMA, warp specialization); croq tune searches its configurations"}
/*
 * croq's Hopper GEMM template (sm_90a): C[M,N] = A[M,K] * B through croq's matmul ABI
 * (include/croq/kernel_abi.h), for f16->f32, bf16->f32, f16->f16 and bf16->bf16, A row-major, B
 * row-major (K x N) or "col" (stored N x K row-major), C row-major, any M, N, K; and, built with
 * CROQ_ELEM_BYTES=1, FP8: e4m3->f16 and e4m3->bf16 with per-tensor scales (kernel ABI v2,
 * croq_gemm, CROQ_SCALE_TENSOR), WGMMA m64nNk32 e4m3 with A and B both K-major (B "col" only, the
 * only layout FP8 WGMMA reads), f32 accumulators multiplied by a_scale * b_scale in the epilogue,
 * K a multiple of 16 (16-byte rows for TMA). Built also with CROQ_BLOCKSCALE=1: the block-scaled
 * operator (CROQ_OP_MATMUL_BLOCKSCALED: f32 scales per 1x128 block of A and 128x128 block of B,
 * bf16 out): each stage is one 128-deep scale block (BK 128); the consumer waits for the stage's
 * WGMMAs and adds their f32 sums, times the rows' A scales and the columns' B scale, into a second
 * set of f32 registers (promotion), so the tensor cores' accumulation never spans more than 128 of K.
 * With CROQ_MMA_DEPTH 1 it keeps two sets of WGMMA sums for alternate k blocks and promotes one block
 * while the next one's WGMMAs run (three sets of registers); with 0 it drains each block first.
 *
 * The configuration is chosen by macros placed in front of this file (the hopper_gemm kernel
 * family writes them; docs/gemm.md explains each technique):
 *
 *   CROQ_BM, CROQ_BN, CROQ_BK   CTA tile (BM multiple of 64*CONSUMERS, BN multiple of 32 up to 256,
 *                               BK a multiple of the swizzle width in elements)
 *   CROQ_STAGES                 depth of the shared-memory ring the producer fills ahead (2..8)
 *   CROQ_CONSUMERS              1, 2 or 3 consumer warpgroups; with 2 the producer warpgroup gives
 *                               its registers to the consumers (setmaxnreg 40 / 232); with 3 every
 *                               warpgroup keeps 128 (cooperative only, BM a multiple of 192)
 *   CROQ_PINGPONG               0: the consumers split each tile's rows (cooperative); 1: each
 *                               consumer computes whole tiles, alternating, so that one's epilogue
 *                               overlaps the other's MMAs (needs CONSUMERS 2)
 *   CROQ_PERSISTENT             1: one CTA (cluster) per SM looping over tiles; 0: one CTA per tile
 *   CROQ_RASTER, CROQ_GROUP     tile order: 0 row by row, 1 bands of GROUP tile-rows walked
 *                               column by column (L2 reuse of B), 2 bands of GROUP tile-columns,
 *                               3 like 1 with every other band walked backwards (snake), so the
 *                               B tiles at a band's end are reused by the next band's start
 *   CROQ_CLUSTER_M, CLUSTER_N   thread-block cluster; CTAs of a cluster that share a B tile
 *                               (CLUSTER_M of them) or an A tile (CLUSTER_N) each load one slice and
 *                               multicast it to the others
 *   CROQ_EPILOGUE               0: stores straight from the accumulator registers (predicated);
 *                               1: through swizzled shared memory (stmatrix for 16-bit outputs)
 *                               and TMA bulk tensor stores (clipped at the matrix edge);
 *                               2: from registers, 16-bit outputs transposed within each quad of
 *                               lanes by shuffles so that every thread stores 16 contiguous bytes
 *                               (f32 outputs: as 0)
 *   CROQ_SPLIT_K                k slices per output tile (1: none). Each slice is its own work
 *                               unit; the slices before the last write their f32 partial sums to
 *                               the workspace and raise a flag, the last one waits for the flags
 *                               and adds the partials in slice order (deterministic), then runs
 *                               the epilogue. Needs CROQ_PERSISTENT=1 (the waits need every CTA
 *                               resident).
 *   CROQ_STREAM_K               1: the tiles of the last partial wave and of CROQ_SK_FULL_WAVES
 *                               full waves before it (all tiles when there are fewer full waves)
 *                               are cut into contiguous k ranges, one equal share
 *                               per CTA (stream-K), so that no CTA idles in a partial last wave. A
 *                               CTA runs the piece of its share that starts a tile first, writes its
 *                               partial sums and raises a flag; the CTA that holds the tile's last
 *                               k block adds the earlier shares in k order (deterministic) and
 *                               writes C. Running those head pieces first keeps the CTAs of the
 *                               region at two or three k ranges at a time, meant to let them share
 *                               A and B panels in L2. Needs CROQ_PERSISTENT=1, cooperative
 *                               consumers and CROQ_SPLIT_K=1. The data-parallel tiles before the
 *                               region run in a loop of their own or, with CROQ_SK_ONE_LOOP, in one
 *                               loop with the region's pieces.
 *   CROQ_SK_ORDER               a stream-K share's pieces: 0 the head, then k order; 1 the head,
 *                               the share's whole tiles, and the piece that starts the share (a
 *                               reduce, which then never waits for another CTA's head) last.
 *                               Default: 1 for the block-scaled operator (2 % faster at 8192^3 on
 *                               an H100), else 0 (as measured for the 16-bit kernels)
 *   CROQ_SK_FULL_WAVES          full waves of tiles the stream-K region takes besides the last
 *                               partial one (1, the default; 0: the partial wave alone, where a
 *                               share is shorter than a tile and a tile may have three pieces)
 *   CROQ_SK_ONE_LOOP            1: the stream-K build's consumers run their data-parallel units and
 *                               the pieces of their share in one counted loop, with one call of the
 *                               unit (one copy of the k loop); 0: the data-parallel units in a loop
 *                               of their own, then the pieces. Default: 1 for the block-scaled
 *                               operator, else 0. In the block-scaled waves the separate loop's k
 *                               loop was scheduled worse by ptxas (its data-parallel tiles took 84.5
 *                               thousand SM cycles on an H100, the default's 81.3; in one loop 82.2;
 *                               docs/fp8.md)
 *   CROQ_TRACE                  1: a diagnostic build. Consumer 0 of each CTA records, and a kernel
 *                               launched after the GEMM prints ("croq-trace"): its SM, its cluster,
 *                               the %globaltimer (ns) at its start, at the end of its data-parallel
 *                               units and at its end, how many data-parallel units it ran, then the
 *                               start time and clock64 of each of its first 40 units; to see how
 *                               unevenly the CTAs of a launch finish and at what SM clock each wave
 *                               ran (bench/gpu/cta_trace.py). Never built by the family.
 *   CROQ_SWIZZLE                128, 64 or 32: the TMA/WGMMA shared-memory swizzle width in bytes
 *   CROQ_MMA_DEPTH              wgmma groups left in flight when a stage is released (0 or 1; the
 *                               block-scaled kernel: 1 overlaps each promotion with the next block)
 *   CROQ_SCALE_STAGE            the block-scaled kernel's scales: 0 read by each consumer thread
 *                               from global memory; 1 staged in shared memory with each stage by a
 *                               producer warp (cp.async), read with LDS
 *   CROQ_BS_GROUP               the overlapped block-scaled kernel with staged scales: k blocks per
 *                               straight-line group (default 8; 2 or less: the pair loop, as with
 *                               scales read from global memory), its WGMMAs drained once per group
 *   CROQ_BS_TURNS               in those groups, with two cooperative consumers: 1 (default) the
 *                               consumers issue their blocks in turns (a named barrier of both), 0
 *                               each issues as soon as it is ready
 *   CROQ_BS_EPI_OVERLAP         in those groups, with the TMA epilogue: a tile's C stored while the
 *                               next tile's first k block runs (the promoted sums kept until then):
 *                               2 (default) wherever it applies, 1 required (refused where it does
 *                               not apply), 0 C stored before the next tile starts
 *   CROQ_BS_WAVES               the drained block-scaled kernel (MMA_DEPTH 0, staged scales): 1 runs
 *                               a consumer's m64 atoms one after the other in each k block, each
 *                               drained and promoted into its own sums before the next is issued,
 *                               so one set of WGMMA sums serves every atom: BM 256 (two atoms a
 *                               consumer) holds 192 accumulators, as the overlapped 128x128 does;
 *                               2: the same, the next k block's stage waited for under the last wave;
 *                               0: every atom at once (one set of sums per atom). Default: 2 where a
 *                               consumer has two atoms or more (the drained kernel cannot hold their
 *                               sums otherwise), else 0
 *   CROQ_BS_SCALES_LATE         in those waves, 1 (default, not searched): a k block's scales read
 *                               after its first atom's WGMMAs are issued, so that no LDS or scale
 *                               product stands before the block's first QGMMA (0.1-0.3 % faster on
 *                               an H100); 0: read before them
 *   CROQ_EPI_SLOTS              CROQ_EPILOGUE 1: chunk slots per consumer, 2 (a chunk is written
 *                               while the previous one is stored) or 1 (each chunk waits until the
 *                               previous store has read the slot; frees 8 KB a consumer). Default:
 *                               2, except 1 for the block-scaled waves (CROQ_BS_WAVES) where two do
 *                               not fit beside the ring (4 stages of 256x128)
 *   CROQ_ACC_UNCHECKED          1: build past the accumulator limit below (ptxas spills there); for
 *                               bench/gpu/spill_sass.sh, which looks where the spills land. The
 *                               family never sets it.
 *   CROQ_DTYPES, CROQ_BLAYOUTS  which instantiations to compile (bit masks; default all):
 *                               dtypes 1 f16->f32, 2 f16->f16, 4 bf16->f32, 8 bf16->bf16,
 *                               16 e4m3->f16, 32 e4m3->bf16 (the last two with CROQ_ELEM_BYTES=1);
 *                               layouts 1 B row-major, 2 B "col"
 *   CROQ_PROMOTE                e4m3: 1 adds the WGMMA sums into a second set of f32 registers
 *                               every CROQ_PROMOTE_EVERY stages (two-level accumulation for long K)
 *   CROQ_PROMOTE_EVERY          with CROQ_PROMOTE: k blocks (stages) between promotions, 1, 2, 4, 8,
 *                               16 or 32
 *                               (default 1; the block-scaled kernel: 1). Each promotion waits for
 *                               every WGMMA in flight; between promotions CROQ_MMA_DEPTH 1 keeps the
 *                               next stage's WGMMAs issued while the last ones run. With 1, MMA_DEPTH
 *                               must be 0 (every stage is a promotion).
 *   CROQ_ELEM_BYTES             bytes per input element: 2 (f16, bf16; the default) or 1 (e4m3).
 *                               BK counts elements, so a stage row of BK elements is BK * ELEM_BYTES
 *                               bytes and one WGMMA step covers 32 bytes of K (k16 or k32)
 *
 * Structure: warpgroup 0 is the producer (one thread issues TMA loads of A and B tiles into a ring
 * of STAGES shared-memory stages, each completing on a "full" mbarrier); warpgroups 1..CONSUMERS
 * wait on "full", issue WGMMA m64nBNk16 from shared-memory descriptors (A K-major; B K-major for
 * "col", N-major through the descriptor's transpose bit for row-major B) and release the stage on
 * its "empty" mbarrier. Edges: TMA fills out-of-bounds elements with zeros (M, N and K tails), the
 * epilogue predicates or clips. TMA needs 16-byte aligned rows: when a leading dimension or a
 * pointer is not, the operand is first copied into the workspace with padded rows (and C is
 * written there and copied out), so every shape is handled.
 *
 * Tensor maps are encoded on the host with cuTensorMapEncodeTiled, fetched through
 * cudaGetDriverEntryPointByVersion (no -lcuda), and cached per (pointers, shapes, strides).
 */
#include <croq/kernel_abi.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <type_traits>

// ---------------------------------------------------------------------------------------------
// Configuration (defaults: the large-square configuration)
// ---------------------------------------------------------------------------------------------
#ifndef CROQ_BM
#define CROQ_BM 128
#endif
#ifndef CROQ_BN
#define CROQ_BN 256
#endif
#ifndef CROQ_ELEM_BYTES
#define CROQ_ELEM_BYTES 2
#endif
#ifndef CROQ_BK
#if CROQ_ELEM_BYTES == 1
#define CROQ_BK 128
#else
#define CROQ_BK 64
#endif
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
#ifndef CROQ_SWIZZLE
#define CROQ_SWIZZLE 128
#endif
#ifndef CROQ_MMA_DEPTH
#define CROQ_MMA_DEPTH 1
#endif
#ifndef CROQ_SPLIT_K
#define CROQ_SPLIT_K 1
#endif
#ifndef CROQ_STREAM_K
#define CROQ_STREAM_K 0
#endif
#ifndef CROQ_SK_ORDER
#define CROQ_SK_ORDER (CROQ_BLOCKSCALE != 0)
#endif
#ifndef CROQ_SK_FULL_WAVES
#define CROQ_SK_FULL_WAVES 1
#endif
#ifndef CROQ_SK_ONE_LOOP
#define CROQ_SK_ONE_LOOP (CROQ_BLOCKSCALE != 0)
#endif
#ifndef CROQ_TRACE
#define CROQ_TRACE 0
#endif
#if CROQ_TRACE
#include <cstdio>
#endif
#ifndef CROQ_BLOCKSCALE
#define CROQ_BLOCKSCALE 0
#endif
#ifndef CROQ_PROMOTE
#define CROQ_PROMOTE 0
#endif
#ifndef CROQ_EPI_SLOTS
#define CROQ_EPI_SLOTS 0
#endif
#ifndef CROQ_SCALE_STAGE
#define CROQ_SCALE_STAGE 0
#endif
#ifndef CROQ_BS_GROUP
#define CROQ_BS_GROUP 8
#endif
#ifndef CROQ_BS_TURNS
#define CROQ_BS_TURNS 1
#endif
#ifndef CROQ_BS_EPI_OVERLAP
#define CROQ_BS_EPI_OVERLAP 2
#endif
#ifndef CROQ_BS_WAVES
#define CROQ_BS_WAVES -1
#endif
#ifndef CROQ_BS_SCALES_LATE
#define CROQ_BS_SCALES_LATE 1
#endif
#ifndef CROQ_PROMOTE_EVERY
#define CROQ_PROMOTE_EVERY 1
#endif
#ifndef CROQ_DTYPES
#if CROQ_ELEM_BYTES == 1
#define CROQ_DTYPES 48
#else
#define CROQ_DTYPES 15
#endif
#endif
#ifndef CROQ_BLAYOUTS
#if CROQ_ELEM_BYTES == 1
#define CROQ_BLAYOUTS 2
#else
#define CROQ_BLAYOUTS 3
#endif
#endif

#define CROQ_STR_(x) #x
#define CROQ_STR(x) CROQ_STR_(x)

// Everything but the ABI entry points has internal linkage (the unnamed namespace): two kernels of
// this template with different configurations, loaded into one process or linked into one library
// (croq export), never share a function, a launch cache or a tensor-map cache.
namespace croq_hopper {
namespace {

constexpr int BM = CROQ_BM, BN = CROQ_BN, BK = CROQ_BK;
constexpr int STAGES = CROQ_STAGES;
constexpr int CONSUMERS = CROQ_CONSUMERS;
constexpr int CM = CROQ_CLUSTER_M, CN = CROQ_CLUSTER_N, CS = CM * CN;
constexpr int SW = CROQ_SWIZZLE;      // swizzle width in bytes = one shared-memory row of a region
constexpr int EB = CROQ_ELEM_BYTES;   // bytes per input element
constexpr int ATOM = SW / EB;         // input elements per swizzle row
constexpr int KSTEP = 32 / EB;        // K per WGMMA instruction: k16 (16-bit) or k32 (e4m3)
constexpr bool PINGPONG = CROQ_PINGPONG != 0;
constexpr int WG_M = PINGPONG ? BM : BM / CONSUMERS;  // rows of C per consumer warpgroup
constexpr int M_ATOMS = WG_M / 64;    // m64 wgmma per consumer per k16 step
constexpr int THREADS = (CONSUMERS + 1) * 128;
constexpr int A_STAGE_BYTES = BM * BK * EB;
constexpr int B_STAGE_BYTES = BN * BK * EB;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int SPLIT_K = CROQ_SPLIT_K;
constexpr bool STREAM_K = CROQ_STREAM_K != 0;
constexpr bool SK_REDUCE_LAST = CROQ_SK_ORDER == 1;  // the order of a stream-K share's pieces (sk_first)
static_assert(CROQ_SK_ORDER == 0 || CROQ_SK_ORDER == 1, "CROQ_SK_ORDER must be 0 or 1");
constexpr int SK_FULL_WAVES = CROQ_SK_FULL_WAVES;  // full waves in the stream-K region (plan_stream_k)
static_assert(CROQ_SK_FULL_WAVES >= 0 && CROQ_SK_FULL_WAVES <= 4, "CROQ_SK_FULL_WAVES must be 0 to 4");
constexpr int FLAG_GROUPS = PINGPONG ? 1 : CONSUMERS;  // split-K flags per (tile, slice): one per row owner
constexpr int EPI_SLOT_BYTES = 8192;             // one TMA-epilogue chunk: 64 rows x 128 bytes
// Columns of C per TMA-epilogue chunk: 128-byte rows (32 f32 or 64 16-bit values) when BN allows.
template <typename TOut>
__host__ __device__ constexpr int epi_cols() {
  return sizeof(TOut) == 4 ? 32 : (BN % 64 == 0 ? 64 : 32);
}
constexpr int BAR_BYTES = (((2 * STAGES + 2) * 8 + 127) / 128) * 128;  // full, empty, 2 order barriers
// CROQ_SCALE_STAGE 1: the block-scaled kernel's scales of each k block staged in shared memory with
// its stage, as cuBLASLt's kernel has them: the producer warpgroup's second warp copies the BM rows' A scales and the tile's B scales (cp.async, 4 bytes each) into the
// stage's scale slot and arrives on its full barrier when they have landed; the consumers read them
// with LDS after waiting for the stage. Without it each consumer thread reads its rows' scales from
// global memory. A slot: BM A scales, then SCALE_NQ B scales (the 128-wide blocks a tile may touch).
constexpr bool BS_SMEM = CROQ_BLOCKSCALE != 0 && CROQ_SCALE_STAGE != 0;
constexpr int SCALE_NQ = BN / 128 + 2;
constexpr int SCALE_SLOT_BYTES = BS_SMEM ? ((BM + SCALE_NQ) * 4 + 15) / 16 * 16 : 0;
// The drained block-scaled kernel runs a consumer's atoms in waves where it has two or more
// (CROQ_BS_WAVES, below); such a ring of 4 stages of 256x128 leaves room for one epilogue slot per consumer.
constexpr bool BS_WAVES_APPLY = CROQ_BLOCKSCALE != 0 && CROQ_MMA_DEPTH == 0 && CROQ_SCALE_STAGE != 0 && !PINGPONG &&
                                M_ATOMS >= 2 && CROQ_BS_WAVES != 0;
constexpr int smem_with_slots(int slots) {
  return 1024 /* alignment slack */ + STAGES * STAGE_BYTES +
         (CROQ_EPILOGUE == 1 ? CONSUMERS * slots * EPI_SLOT_BYTES : 0) + STAGES * SCALE_SLOT_BYTES + BAR_BYTES;
}
constexpr int EPI_SLOTS = CROQ_EPI_SLOTS != 0 ? CROQ_EPI_SLOTS : BS_WAVES_APPLY && smem_with_slots(2) > 232448 ? 1 : 2;
static_assert(EPI_SLOTS == 1 || EPI_SLOTS == 2, "CROQ_EPI_SLOTS must be 1 or 2");
constexpr int EPI_BYTES = CROQ_EPILOGUE == 1 ? CONSUMERS * EPI_SLOTS * EPI_SLOT_BYTES : 0;
constexpr int SMEM_BYTES = smem_with_slots(EPI_SLOTS);
constexpr int SW_MODE = SW == 128 ? 1 : SW == 64 ? 2 : 3;  // descriptor layout type
// Registers per thread after setmaxnreg with two consumers: the producer gives its share to them
// (128 x 40 + 256 x 232 = 64512), and ptxas allocates up to 232 in the consumer code. With three
// consumers no setmaxnreg: ptxas (CUDA 13.0) compiles a 512-thread kernel for 128 registers in
// every warpgroup whatever setmaxnreg asks, so 128 x 512 already fills the register file and the
// consumers' accumulators are limited to 96 (docs/gemm.md).
constexpr bool REG_SHARING = CONSUMERS == 2;
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;

static_assert(CONSUMERS >= 1 && CONSUMERS <= 3, "CROQ_CONSUMERS must be 1, 2 or 3");
static_assert(!PINGPONG || CONSUMERS == 2, "CROQ_PINGPONG needs two consumer warpgroups");
static_assert(BM % (PINGPONG ? 64 : 64 * CONSUMERS) == 0 && BM <= 256,
              "BM must be a multiple of 64 * CONSUMERS (64 with PINGPONG), at most 256");
static_assert(BN % 32 == 0 && BN >= 32 && BN <= 256, "BN must be a multiple of 32 in [32, 256]");
static_assert(SW == 128 || SW == 64 || SW == 32, "CROQ_SWIZZLE must be 128, 64 or 32");
static_assert(EB == 1 || EB == 2, "CROQ_ELEM_BYTES must be 1 (e4m3) or 2 (f16, bf16)");
static_assert(BK % ATOM == 0 && BK % KSTEP == 0 && BK * EB <= 512, "BK must be a multiple of the swizzle width");
static_assert(EB == 2 || ((CROQ_BLAYOUTS & 1) == 0 && (CROQ_DTYPES & 15) == 0),
              "e4m3 (CROQ_ELEM_BYTES=1): FP8 WGMMA reads B K-major only (CROQ_BLAYOUTS=2), dtypes 16 and 32");
static_assert(EB == 1 || (CROQ_DTYPES & 48) == 0, "the e4m3 dtypes (16, 32) need CROQ_ELEM_BYTES=1");
constexpr bool BLOCKSCALE = CROQ_BLOCKSCALE != 0;
// Two-level accumulation (e4m3): every PROMOTE_EVERY stages the WGMMA sums are added into f32
// registers, so the tensor cores' reduced-precision accumulation never spans more than
// PROMOTE_EVERY * BK of K (long K). BLOCKSCALE implies it, every stage (one scale block each).
constexpr bool PROMOTE = BLOCKSCALE || CROQ_PROMOTE != 0;
constexpr int PROMOTE_EVERY = CROQ_PROMOTE_EVERY;
static_assert(PROMOTE_EVERY == 1 || PROMOTE_EVERY == 2 || PROMOTE_EVERY == 4 || PROMOTE_EVERY == 8 ||
                  PROMOTE_EVERY == 16 || PROMOTE_EVERY == 32,
              "CROQ_PROMOTE_EVERY must be 1, 2, 4, 8, 16 or 32");
static_assert(!PROMOTE || EB == 1, "CROQ_PROMOTE: e4m3 only");
static_assert(PROMOTE || PROMOTE_EVERY == 1, "CROQ_PROMOTE_EVERY applies with CROQ_PROMOTE: 1 without it");
static_assert(!PROMOTE || BLOCKSCALE || PROMOTE_EVERY > 1 || CROQ_MMA_DEPTH == 0,
              "CROQ_PROMOTE with CROQ_PROMOTE_EVERY 1 promotes after every stage, waiting for its WGMMAs: "
              "CROQ_MMA_DEPTH 0");
static_assert(!BLOCKSCALE || PROMOTE_EVERY == 1, "CROQ_BLOCKSCALE promotes every stage (one scale block each)");
static_assert(CROQ_SCALE_STAGE == 0 || BLOCKSCALE, "CROQ_SCALE_STAGE stages the block-scaled operator's scales: 0 here");
static_assert(!BLOCKSCALE || (EB == 1 && BK == 128 && (CROQ_DTYPES & 16) == 0),
              "CROQ_BLOCKSCALE: e4m3 -> bf16, BK 128 (one scale block per stage)");
// CROQ_BLOCKSCALE with CROQ_MMA_DEPTH 1: two sets of WGMMA accumulators, used by alternate k blocks,
// so the tensor cores run one k block's WGMMAs while the consumer promotes the block before (scales
// applied, added into the f32 sums); with 0 each stage's WGMMAs are drained before the promotion.
constexpr bool BS_OVERLAP = BLOCKSCALE && CROQ_MMA_DEPTH == 1;
// CROQ_BS_TURNS: in the groups of k blocks (CROQ_BS_GROUP) the two cooperative consumers issue each
// block in turns, the first arriving at a named barrier of both warpgroups before it issues, the
// second after, so the tensor cores take the two consumers' blocks alternately rather than two
// blocks of one consumer back to back. Both consumers work on the same units, so their arrivals match.
constexpr bool BS_TURNS = CROQ_BS_TURNS != 0 && CROQ_CONSUMERS == 2 && CROQ_PINGPONG == 0;
constexpr int BS_TURNS_BAR = CROQ_CONSUMERS + 1;  // after the consumers' own barriers (1 + cw)
// CROQ_BS_WAVES: the drained block-scaled kernel runs a consumer's m64 atoms in waves (each atom's
// WGMMAs issued, drained and promoted before the next atom's), one set of WGMMA sums for all of them;
// the two consumers' waves alternate on the tensor cores.
constexpr int BS_WAVES_MODE = CROQ_BS_WAVES >= 0 ? CROQ_BS_WAVES : BS_WAVES_APPLY ? 2 : 0;
constexpr bool BS_WAVES = BS_WAVES_MODE != 0;
// CROQ_BS_SCALES_LATE: the waves read a k block's scales after issuing its first atom's WGMMAs (and after
// the turn's barrier); read before them, as until 2026-12-07, ptxas puts the scales' LDS and products before
// the block's first QGMMA, behind an S2R of the thread index.
constexpr bool BS_SCALES_LATE = CROQ_BS_SCALES_LATE != 0 && BS_WAVES;
static_assert(BS_WAVES_MODE >= 0 && BS_WAVES_MODE <= 2, "CROQ_BS_WAVES must be 0, 1 or 2");
static_assert(!BS_WAVES || (BLOCKSCALE && CROQ_MMA_DEPTH == 0 && CROQ_SCALE_STAGE != 0 && CROQ_PINGPONG == 0),
              "CROQ_BS_WAVES: the drained block-scaled kernel (MMA_DEPTH 0) with staged scales (SCALE_STAGE 1), "
              "cooperative consumers");
// CROQ_BS_EPI_OVERLAP: the groups' consumers store a tile's C from its promoted sums after issuing the
// next tile's first k block, so that the tensor cores run that block during the epilogue. Nothing is in
// flight across the tile loop's back-edge: the last group of a tile drains, and the promoted sums (not
// WGMMA registers) wait for the next tile's first group, or for the end of the CTA's work. The default
// wherever it applies: +0.4 % at 4096x7168x7168, +0.7 % at 8192^3 and +1.5 % at 8192x8192x2048 (docs/fp8.md).
// (In the waves of CROQ_BS_WAVES the same, C stored after the next tile's first wave was issued, spilled
// 164 bytes and ran 4 % slower: docs/fp8.md.)
constexpr bool BS_EPI_OVERLAP = CROQ_BS_EPI_OVERLAP != 0 && BS_OVERLAP && CROQ_BS_GROUP > 2 &&
                                CROQ_SCALE_STAGE != 0 && CROQ_EPILOGUE == 1 && CROQ_SPLIT_K == 1 &&
                                CROQ_STREAM_K == 0 && CROQ_PINGPONG == 0;
static_assert(CROQ_BS_EPI_OVERLAP != 1 || BS_EPI_OVERLAP,
              "CROQ_BS_EPI_OVERLAP: the overlapped block-scaled groups (MMA_DEPTH 1, SCALE_STAGE 1, BS_GROUP > 2) "
              "with the TMA epilogue, no split-K, stream-K or ping-pong");
constexpr int ACC_SETS = BS_OVERLAP ? 3 : PROMOTE ? 2 : 1;  // WGMMA sums (one or two sets), promoted sums
// f32 accumulators a consumer thread may hold without spilling (ptxas of CUDA 13.0, every variant
// of the template; the split-K reduction needs a few registers more, stream-K's work cursor more,
// except in the block-scaled waves, whose one set of WGMMA sums leaves room for it).
constexpr int MAX_ACC = CONSUMERS == 3 ? (SPLIT_K > 1 || STREAM_K ? 64 : 96)
                        : STREAM_K      ? (BS_WAVES ? 192 : 128)
                        : SPLIT_K > 1   ? 160
                                        : 192;
#if !defined(CROQ_ACC_UNCHECKED) || CROQ_ACC_UNCHECKED == 0
static_assert((BS_WAVES ? (M_ATOMS + 1) * BN / 2 : ACC_SETS * M_ATOMS * BN / 2) <= MAX_ACC,
              "too many accumulators per consumer thread: at most 192 (160 with split-K, 128 with stream-K except in the "
              "block-scaled waves), with three "
              "consumers 96 (64); promotion keeps a second set, the overlapped block-scaled kernel a third");
#endif
static_assert(STAGES >= 2 && STAGES <= 8, "CROQ_STAGES must be in [2, 8]");
static_assert(CS >= 1 && CS <= 8, "cluster size must be in [1, 8]");
static_assert((BM / CN) % 8 == 0, "A slices of a multicast must be multiples of 8 rows");
static_assert((BN / CM) % 8 == 0 && (BK / CM) % 8 == 0, "B slices of a multicast must be multiples of 8 rows");
static_assert(SMEM_BYTES <= 232448, "the configuration needs more than 227 KB of shared memory");
static_assert(CROQ_EPILOGUE >= 0 && CROQ_EPILOGUE <= 2, "CROQ_EPILOGUE must be 0, 1 or 2");
static_assert(CROQ_RASTER >= 0 && CROQ_RASTER <= 3, "CROQ_RASTER must be in [0, 3]");
static_assert(SPLIT_K >= 1 && SPLIT_K <= 16, "CROQ_SPLIT_K must be in [1, 16]");
static_assert(SPLIT_K == 1 || CROQ_PERSISTENT == 1,
              "split-K waits for other CTAs' partial sums, which needs every CTA resident: CROQ_PERSISTENT=1");
static_assert(!STREAM_K || (CROQ_PERSISTENT == 1 && !PINGPONG && SPLIT_K == 1),
              "CROQ_STREAM_K needs CROQ_PERSISTENT=1 (every CTA resident), cooperative consumers and CROQ_SPLIT_K=1");

struct Params {
  int m, n, k;
  int units_m, units_n, num_units;  // cluster tiles
  int num_kb;                       // k blocks
  int split;                        // k slices per tile (split-K; 1: none)
  int num_work;                     // work units: num_units * split
  int dp_work;                      // work units before the stream-K region (num_work without it)
  long long sk_iters;               // stream-K: k blocks of the tiles from unit dp_work on (0: none)
  void* c;                          // register epilogue target (row-major, ldc elements)
  long long ldc;
  float* partials;                  // split-K: per (tile, slice < split-1) a BM x BN f32 slot;
                                    // stream-K: one per CTA (blockIdx.x)
  unsigned long long* flags;        // split-K: per (tile, slice < split-1, row owner) a ready flag;
                                    // stream-K: per (CTA, row owner)
  unsigned long long tag;           // the value this launch writes into a ready flag (never 0)
  const float* a_scale;             // per-tensor scales (e4m3; device pointers) or nullptr;
  const float* b_scale;             // CROQ_BLOCKSCALE: [scale_kb, M] and [ceil(N/128), scale_kb]
  int scale_kb;                     // CROQ_BLOCKSCALE: scale blocks along K, ceil(K/128)
};

// ---------------------------------------------------------------------------------------------
// PTX wrappers
// ---------------------------------------------------------------------------------------------
// The block-scaled promotion indexes its B scales (one per 128 columns) by the tile's column offset
// in its scale block, n0 % 128: f(offset) is called with it as a compile-time constant, so the scale
// of each accumulator column is a register chosen at compile time. Indexed at run time (tiles whose
// width is not a multiple of 128: 192, 160, 64) the scales went to local memory. The offset is a
// multiple of G = gcd(BN, 128); one copy of f per possible offset.
__host__ __device__ constexpr int gcd_int(int a, int b) { return b == 0 ? a : gcd_int(b, a % b); }
template <int G, int O = 0, class F>
__device__ __forceinline__ void with_column_offset(int offset, F&& f) {
  if constexpr (O + G >= 128) {
    f(std::integral_constant<int, O>{});
  } else if (offset == O) {
    f(std::integral_constant<int, O>{});
  } else {
    with_column_offset<G, O + G>(offset, f);
  }
}

// f(integral_constant<int, J>) for J in [J0, U), at compile time.
template <int J0, int U, class F>
__device__ __forceinline__ void static_for(F&& f) {
  if constexpr (J0 < U) {
    f(std::integral_constant<int, J0>{});
    static_for<J0 + 1, U>(f);
  }
}

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
// Arrive on the barrier at the same offset in CTA `cta` of the cluster. Default semantics
// (release at CTA scope): the arrive only tells a peer's producer that this CTA's WGMMAs, already
// complete, no longer read the stage. A cluster-scope release would compile to MEMBAR.ALL.GPU
// before every arrive, a full memory fence per stage per consumer that stalls the mainloop.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
// Split-K ready flags in global memory (release after the partial sums, acquire before reading).
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
// A TMA load into this CTA, or with MULTICAST into every CTA of `mask` (the same shared-memory
// offset and barrier in each).
template <bool MULTICAST>
__device__ __forceinline__ void tma_load_to(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            uint16_t mask) {
  if constexpr (MULTICAST) {
    tma_load_multicast(dst, map, bar, c0, c1, mask);
  } else {
    tma_load(dst, map, bar, c0, c1);
  }
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
// CROQ_SCALE_STAGE: one f32 from global into shared memory, zero-filled when !valid (nothing read).
__device__ __forceinline__ void cp_async_f32(uint32_t dst, const float* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0) : "memory");
}
// Arrive on the barrier once this thread's earlier cp.async copies have landed (counted in its init).
__device__ __forceinline__ void cp_async_mbar_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ float lds_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
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
// Keeps the compiler from moving accumulator reads or writes across wgmma fences and waits.
template <int N>
__device__ __forceinline__ void fence_acc(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
__device__ __forceinline__ void st_shared_v2(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

// Shared-memory matrix descriptor: start address, leading and stride byte offsets (16-byte
// units, 14 bits each) and the swizzle mode in bits 62-63. The stride is 8 rows of SW bytes. A
// stage's descriptors come from its base once: the low word (address / 16 and the leading offset)
// plus each operand's offset / 16 (a shared address is below 2^18, so the address field never
// carries into the leading offset's), the high word (stride, swizzle) a constant. Computing each
// WGMMA's descriptor from its address instead (mask, shifts and ors every time) took 38 more
// instructions per two k blocks in the block-scaled k loop and was 2.5-5 % slower there on the H200.
constexpr uint32_t DESC_HI = ((8u * SW >> 4) & 0x3FFF) | (static_cast<uint32_t>(SW_MODE) << 30);
__device__ __forceinline__ uint32_t desc_lo(uint32_t addr, uint32_t lbo) {
  return ((addr & 0x3FFFF) >> 4) | (((lbo >> 4) & 0x3FFF) << 16);
}
__device__ __forceinline__ uint64_t desc_at(uint32_t lo, uint32_t offset_bytes) {
  return (static_cast<uint64_t>(DESC_HI) << 32) | (lo + (offset_bytes >> 4));
}

// wgmma.mma_async m64nNk16, f32 accumulators, A and B from shared memory. TB: B is N-major.
// The register lists are spelled out by these macros (inline PTX needs literal operand numbers).
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
// N: instruction N; TY: "f16" or "bf16"; REGS: the placeholder list; IA..IT: operand numbers of
// the A descriptor, B descriptor, scale-d flag and B transpose immediate; then the outputs.
#define CROQ_WGMMA(N, TY, REGS, IA, IB, IS, IT, ...)                                                          \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" CROQ_STR(IS) ", 0;\n"                                     \
               "wgmma.mma_async.sync.aligned.m64n" CROQ_STR(N) "k16.f32." TY "." TY " {" REGS "}, %" CROQ_STR( \
                   IA) ", %" CROQ_STR(IB) ", p, 1, 1, 0, %" CROQ_STR(IT) ";\n}\n"                              \
               : __VA_ARGS__                                                                                  \
               : "l"(da), "l"(db), "r"(scale_d), "n"(TB))
// e4m3: k32, no transpose immediates (FP8 WGMMA reads A and B K-major only).
#define CROQ_WGMMA8(N, REGS, IA, IB, IS, ...)                                                               \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" CROQ_STR(IS) ", 0;\n"                                 \
               "wgmma.mma_async.sync.aligned.m64n" CROQ_STR(N) "k32.f32.e4m3.e4m3 {" REGS "}, %" CROQ_STR( \
                   IA) ", %" CROQ_STR(IB) ", p, 1, 1;\n}\n"                                                  \
               : __VA_ARGS__                                                                                \
               : "l"(da), "l"(db), "r"(scale_d))
#define CROQ_WGMMA_BOTH(N, REGS, IA, IB, IS, IT, ...)         \
  if constexpr (KIND == 1) {                                  \
    CROQ_WGMMA(N, "bf16", REGS, IA, IB, IS, IT, __VA_ARGS__); \
  } else if constexpr (KIND == 2) {                           \
    CROQ_WGMMA8(N, REGS, IA, IB, IS, __VA_ARGS__);            \
  } else {                                                    \
    CROQ_WGMMA(N, "f16", REGS, IA, IB, IS, IT, __VA_ARGS__);  \
  }

// KIND: 0 f16, 1 bf16, 2 e4m3 (k32; TB must be 0).
template <int N, int KIND, int TB>
__device__ __forceinline__ void wgmma_m64(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d) {
  if constexpr (N == 32) {
    CROQ_WGMMA_BOTH(32, CROQ_P16_0, 16, 17, 18, 19, CROQ_R16(0))
  } else if constexpr (N == 64) {
    CROQ_WGMMA_BOTH(64, CROQ_P16_0 CROQ_P16_1, 32, 33, 34, 35, CROQ_R16(0), CROQ_R16(16))
  } else if constexpr (N == 96) {
    CROQ_WGMMA_BOTH(96, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2, 48, 49, 50, 51, CROQ_R16(0), CROQ_R16(16), CROQ_R16(32))
  } else if constexpr (N == 128) {
    CROQ_WGMMA_BOTH(128, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3, 64, 65, 66, 67, CROQ_R16(0), CROQ_R16(16),
                    CROQ_R16(32), CROQ_R16(48))
  } else if constexpr (N == 160) {
    CROQ_WGMMA_BOTH(160, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3 CROQ_P16_4, 80, 81, 82, 83, CROQ_R16(0),
                    CROQ_R16(16), CROQ_R16(32), CROQ_R16(48), CROQ_R16(64))
  } else if constexpr (N == 192) {
    CROQ_WGMMA_BOTH(192, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3 CROQ_P16_4 CROQ_P16_5, 96, 97, 98, 99,
                    CROQ_R16(0), CROQ_R16(16), CROQ_R16(32), CROQ_R16(48), CROQ_R16(64), CROQ_R16(80))
  } else if constexpr (N == 224) {
    CROQ_WGMMA_BOTH(224, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3 CROQ_P16_4 CROQ_P16_5 CROQ_P16_6, 112, 113,
                    114, 115, CROQ_R16(0), CROQ_R16(16), CROQ_R16(32), CROQ_R16(48), CROQ_R16(64), CROQ_R16(80),
                    CROQ_R16(96))
  } else {
    static_assert(N == 256, "unsupported wgmma N");
    CROQ_WGMMA_BOTH(256, CROQ_P16_0 CROQ_P16_1 CROQ_P16_2 CROQ_P16_3 CROQ_P16_4 CROQ_P16_5 CROQ_P16_6 CROQ_P16_7,
                    128, 129, 130, 131, CROQ_R16(0), CROQ_R16(16), CROQ_R16(32), CROQ_R16(48), CROQ_R16(64),
                    CROQ_R16(80), CROQ_R16(96), CROQ_R16(112))
  }
}

// ---------------------------------------------------------------------------------------------
// Tile order
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void unit_coords(int u, const Params& p, int& um, int& un) {
#if CROQ_RASTER == 0
  um = u / p.units_n;
  un = u - um * p.units_n;
#elif CROQ_RASTER == 1
  const int per_group = CROQ_GROUP * p.units_n;
  const int g = u / per_group;
  const int first = g * CROQ_GROUP;
  const int size = min(p.units_m - first, CROQ_GROUP);
  const int r = u - g * per_group;
  um = first + r % size;
  un = r / size;
#elif CROQ_RASTER == 2
  const int per_group = CROQ_GROUP * p.units_m;
  const int g = u / per_group;
  const int first = g * CROQ_GROUP;
  const int size = min(p.units_n - first, CROQ_GROUP);
  const int r = u - g * per_group;
  un = first + r % size;
  um = r / size;
#else
  // Snake: bands of GROUP tile-rows, odd bands walked from the last column back to the first.
  const int per_group = CROQ_GROUP * p.units_n;
  const int g = u / per_group;
  const int first = g * CROQ_GROUP;
  const int size = min(p.units_m - first, CROQ_GROUP);
  const int r = u - g * per_group;
  um = first + r % size;
  un = r / size;
  if (g & 1) un = p.units_n - 1 - un;
#endif
}

// ---------------------------------------------------------------------------------------------
// A CTA's work (host and device: tests/nvcc checks the schedule on the host)
// ---------------------------------------------------------------------------------------------
enum WorkRole { WORK_FULL = 0, WORK_PARTIAL = 1, WORK_REDUCE = 2 };
struct Work {
  int unit, slice, kb0, kb1;  // cluster tile, split-K slice, k blocks [kb0, kb1)
  int role;                   // WORK_FULL: writes C; WORK_PARTIAL: partial sums for another CTA;
                              // WORK_REDUCE: adds the others' partial sums, then writes C
  int peer_first;             // stream-K reduce: the first cluster whose partial sums it adds
  long long next;             // cursor of the next piece of work
};

// The work schedule divides in 32 bits (a 64-bit division is a called subroutine in SASS): plan_stream_k
// keeps sk_iters * (clusters + 1) below 2^31, and split-K's slice * num_kb is below 16 * 2^26.
__host__ __device__ inline long long div32(long long a, long long b) {
  return static_cast<long long>(static_cast<uint32_t>(a) / static_cast<uint32_t>(b));
}
constexpr long long SK_MAX_PRODUCT = 1LL << 31;  // sk_iters * (clusters + 1) stays below this
// First k block of cluster c's share of the stream-K region: c * sk_iters / P.
__host__ __device__ inline long long sk_bound(long long c, int clusters, const Params& p) {
  return div32(c * p.sk_iters, clusters);
}
// The cluster whose share holds stream-K iteration g: the largest c with sk_bound(c) <= g.
__host__ __device__ inline int sk_owner(long long g, int clusters, const Params& p) {
  return static_cast<int>(div32((g + 1) * clusters + p.sk_iters - 1, p.sk_iters) - 1);
}
// Where cluster c's stream-K share [s, e) starts being worked on. Its pieces, one per tile it
// touches, are taken in k order except that a last piece which starts a tile and ends inside it
// (a head: partial sums for the CTA holding the rest of that tile) goes first. In k order the
// CTAs of the region would work at k offsets spread over the whole of K; head first, every CTA
// runs k = 0.. of one tile, then the rest of its share, so at any time they stand at two or three
// k ranges, which is meant to let them share the A and B panels in L2 (in k order the L2 hit rate
// fell from 79 to 73 %, docs/results/stream-k-probe.md; head first did not win the loss back,
// docs/results/gemm-configs-sk-h200.md). And each partial is published before its CTA waits for
// anything.
__host__ __device__ inline long long sk_head(int c, int clusters, const Params& p) {
  const long long s = sk_bound(c, clusters, p), e = sk_bound(c + 1, clusters, p);
  const long long head = div32(e - 1, p.num_kb) * p.num_kb;  // first k block of the share's last tile
  return head > s && e != div32(e, p.num_kb) * p.num_kb ? head : -1;
}
// CROQ_SK_ORDER 1: after the head, the share's whole tiles, and the piece that starts the share (the
// reduce of a tile begun by the cluster before) last. Head first and then k order, that reduce comes
// second and waits for the previous cluster's head, which can be the longer one (up to 40 % of a share
// idle on 256x128 block-scaled tiles, docs/fp8.md); last, every head it could wait for is long done.
// The first tile boundary at or after the share's start s:
__host__ __device__ inline long long sk_boundary(int c, int clusters, const Params& p) {
  const long long s = sk_bound(c, clusters, p);
  return div32(s + p.num_kb - 1, p.num_kb) * p.num_kb;
}
__host__ __device__ inline long long sk_first(int c, int clusters, const Params& p) {
  const long long head = sk_head(c, clusters, p);
  if (head >= 0) return head;
  if constexpr (SK_REDUCE_LAST) {
    const long long b = sk_boundary(c, clusters, p);
    if (b < sk_bound(c + 1, clusters, p)) return b;
  }
  return sk_bound(c, clusters, p);
}
// Where cluster c starts: its first data-parallel unit, or its stream-K share.
__host__ __device__ inline long long work_start(int c, int clusters, const Params& p) {
  if (!STREAM_K || c < p.dp_work) return c;
  return p.dp_work + sk_first(c, clusters, p);
}
// The work at cursor `cur` of cluster c (false when its work is done). A cursor below p.dp_work is a
// data-parallel unit, stepping by the number of clusters (split-K: unit w is slice w % split of
// tile w / split, so the slices of a tile run at the same time on neighbouring CTAs); from
// p.dp_work on it is p.dp_work + g for stream-K iteration g (tile g / num_kb of the region, k block
// g % num_kb), within [sk_bound(c), sk_bound(c + 1)) and cut at tile ends. Every CTA has at most
// one partial piece (the first of its share) and one reduce piece (the last).
__host__ __device__ inline bool work_at(long long cur, int c, int clusters, const Params& p, Work& w) {
  if (cur < p.dp_work) {
    const int u = static_cast<int>(cur);
    if (SPLIT_K == 1) {
      w.unit = u;
      w.slice = 0;
      w.kb0 = 0;
      w.kb1 = p.num_kb;
      w.role = WORK_FULL;
    } else {
      w.unit = u / p.split;
      w.slice = u - w.unit * p.split;
      w.kb0 = static_cast<int>(div32(static_cast<long long>(w.slice) * p.num_kb, p.split));
      w.kb1 = static_cast<int>(div32(static_cast<long long>(w.slice + 1) * p.num_kb, p.split));
      w.role = p.split == 1 ? WORK_FULL : w.slice < p.split - 1 ? WORK_PARTIAL : WORK_REDUCE;
    }
    w.peer_first = -1;
    if constexpr (STREAM_K) {
      w.next = cur + clusters < p.dp_work ? cur + clusters : p.dp_work + sk_first(c, clusters, p);
    } else {
      w.next = cur + clusters;  // no 64-bit division in the loop: it costs registers
    }
    return true;
  }
  if constexpr (!STREAM_K) {
    return false;
  } else {
    if (p.sk_iters == 0) return false;
    const long long g = cur - p.dp_work;
    const long long end = sk_bound(c + 1, clusters, p);
    if (g >= end) return false;
    const long long j = div32(g, p.num_kb);
    w.unit = p.dp_work + static_cast<int>(j);
    w.slice = 0;
    w.kb0 = static_cast<int>(g - j * p.num_kb);
    const long long left = end - g;
    w.kb1 = left < p.num_kb - w.kb0 ? w.kb0 + static_cast<int>(left) : p.num_kb;
    w.peer_first = -1;
    if (w.kb1 < p.num_kb) {
      w.role = WORK_PARTIAL;  // a head, or the middle of a tile longer than a share
    } else if (w.kb0 > 0) {
      w.role = WORK_REDUCE;  // the tile's end: adds the earlier shares' partial sums
      w.peer_first = sk_owner(j * p.num_kb, clusters, p);
    } else {
      w.role = WORK_FULL;
    }
    const long long head = sk_head(c, clusters, p);
    const long long piece_end = g + (w.kb1 - w.kb0);
    if constexpr (SK_REDUCE_LAST) {
      // head, then the whole tiles [b, stop), then the share's start [s, b) (none when s == b)
      const long long s = sk_bound(c, clusters, p), b = sk_boundary(c, clusters, p);
      const long long stop = head >= 0 ? head : end;
      const long long last = s < b ? s : end;  // after the whole tiles: the start piece, or the end
      if (g == head) {
        w.next = p.dp_work + (b < stop ? b : last);
      } else if (g >= b && g < stop) {
        w.next = p.dp_work + (piece_end < stop ? piece_end : last);
      } else {
        w.next = p.dp_work + end;  // the start piece ends the share
      }
    } else {
      // The head (taken first) is followed by the share's start; the piece before the head ends it.
      w.next = p.dp_work + (g == head ? sk_bound(c, clusters, p) : piece_end == head ? end : piece_end);
    }
    return true;
  }
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

// Stores two horizontally adjacent results (row, col) and (row, col + 1), predicated on the edge.
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

// Byte offset inside a 1024-byte aligned buffer of rows of `PITCH` bytes, as TMA swizzles it.
template <int PITCH>
__device__ __forceinline__ uint32_t swizzled(uint32_t off) {
  return off ^ (((off >> 7) & ((PITCH >> 4) - 1)) << 4);
}

// ---------------------------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ uint32_t select4(const T (&v)[4], int i) {
  return i == 0 ? v[0] : i == 1 ? v[1] : i == 2 ? v[2] : v[3];
}

#if CROQ_TRACE
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
// The trace of a launch, per CTA, in global memory: the gemm kernel only stores (a printf in it made
// ptxas serialize every WGMMA), a one-thread kernel after it prints.
constexpr int TRACE_CTAS = 1024, TRACE_UNITS = 40;
struct TraceCta {
  unsigned sm;
  int cluster, units, dp_units;
  unsigned long long t0, dp, end;
  unsigned long long at[TRACE_UNITS];
  long long clk[TRACE_UNITS];  // the SM's clock64 beside each start: cycles over nanoseconds is its clock
  int unit[TRACE_UNITS];
};
__device__ TraceCta trace_buf[TRACE_CTAS];
__global__ void trace_print(int ctas) {
  for (int b = 0; b < ctas && b < TRACE_CTAS; ++b) {
    const TraceCta& t = trace_buf[b];
    printf("croq-trace sm=%u cta=%d cluster=%d t0=%llu dp=%llu end=%llu units=%d\n", t.sm, b, t.cluster, t.t0,
           t.dp ? t.dp : t.end, t.end, t.dp_units >= 0 ? t.dp_units : t.units);
    for (int i = 0; i < t.units && i < TRACE_UNITS; ++i)
      printf("croq-trace-unit cta=%d i=%d unit=%d t=%llu clk=%lld\n", b, i, t.unit[i], t.at[i], t.clk[i]);
  }
}
#endif

template <typename TIn, typename TOut, bool B_KMAJOR>
__global__ void __launch_bounds__(THREADS, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                const __grid_constant__ CUtensorMap tm_c, const Params p) {
  constexpr int KIND = std::is_same<TIn, __nv_bfloat16>::value ? 1 : std::is_same<TIn, __nv_fp8_e4m3>::value ? 2 : 0;
  static_assert(KIND != 2 || B_KMAJOR, "FP8 WGMMA reads B K-major only");
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;  // swizzled regions need 1024-byte alignment
  const uint32_t epi_base = base + STAGES * STAGE_BYTES;
  [[maybe_unused]] const uint32_t scale_base = epi_base + EPI_BYTES;  // BS_SMEM: a slot per stage
  const uint32_t bar_base = epi_base + EPI_BYTES + STAGES * SCALE_SLOT_BYTES;
  auto full_bar = [&](int s) { return bar_base + 8u * s; };
  auto empty_bar = [&](int s) { return bar_base + 8u * (STAGES + s); };
  // PINGPONG: order_bar(c) completes a phase each time consumer c has finished waiting for the
  // stages of one of its tiles; the other consumer starts its next tile only after that.
  auto order_bar = [&](int c) { return bar_base + 8u * (2 * STAGES + c); };

  // The warpgroup index broadcast from lane 0, so that the compiler knows it is the same in every
  // lane and keeps what derives from it (the consumers' rows, their WGMMA descriptors) in uniform
  // registers (block-scaled 8192^3 on the H200: +5 %, dense e4m3 +0.7 %).
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  const int tid = threadIdx.x % 128;
  const uint32_t rank = CS > 1 ? cluster_ctarank() : 0;
  const int cm = static_cast<int>(rank % CM);
  const int cn = static_cast<int>(rank / CM);

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar(s), BS_SMEM ? 1 + 32 : 1);  // the TMA thread (and the scale warp's lanes)
      mbar_init(empty_bar(s), (PINGPONG ? 1 : CONSUMERS) * CS);  // releasing warpgroups per stage
    }
    mbar_init(order_bar(0), 1);
    mbar_init(order_bar(1), 1);
    fence_barrier_init();
    prefetch_tmap(&tm_a);
    prefetch_tmap(&tm_b);
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
    // The same work, in the same order, as the consumers (work_at): load(m0, n0, kb) for each k
    // block, stage and phase its place in the ring (left at the place after the last block).
    int stage = 0;
    uint32_t phase = 0;
    auto for_each_block = [&](auto&& load) {
      Work wk;
      for (long long cur = work_start(cluster_id, num_clusters, p); work_at(cur, cluster_id, num_clusters, p, wk);
           cur = wk.next) {
        int um, un;
        unit_coords(wk.unit, p, um, un);
        const int m0 = (um * CM + cm) * BM;
        const int n0 = (un * CN + cn) * BN;
        for (int kb = wk.kb0; kb < wk.kb1; ++kb) {
          load(m0, n0, kb);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    };
    if (tid == 0) {
      // Multicast groups: CTAs with the same cm share A (CN of them), the same cn share B (CM).
      uint16_t mask_a = 0, mask_b = 0;
      for (int j = 0; j < CN; ++j) mask_a |= static_cast<uint16_t>(1u << (cm + j * CM));
      for (int i = 0; i < CM; ++i) mask_b |= static_cast<uint16_t>(1u << (i + cn * CM));
      constexpr int A_ROWS = BM / CN;                         // A rows this CTA loads per region
      constexpr int B_ROWS = B_KMAJOR ? BN / CM : BK / CM;    // B rows (N or K) per region
      // This CTA's first row of each region: its slice of a multicast, else the region's first.
      const int a_off = CN > 1 ? cn * A_ROWS : 0, b_off = CM > 1 ? cm * B_ROWS : 0;
      // For each k block: wait until its stage is free, then load it.
      for_each_block([&](int m0, int n0, int kb) {
        mbar_wait(empty_bar(stage), phase ^ 1);
        const uint32_t fb = full_bar(stage);
        mbar_expect_tx(fb, STAGE_BYTES);
        const uint32_t sa = base + stage * STAGE_BYTES;
        const uint32_t sb = sa + A_STAGE_BYTES;
        const int k0 = kb * BK;
        // A: regions of ATOM columns (K) x BM rows; this CTA loads rows [a_off, +A_ROWS).
#pragma unroll
        for (int r = 0; r < BK / ATOM; ++r)
          tma_load_to<(CN > 1)>(sa + (r * BM + a_off) * SW, &tm_a, fb, k0 + r * ATOM, m0 + a_off, mask_a);
        if constexpr (B_KMAJOR) {
          // B stored N x K: regions of ATOM columns (K) x BN rows (N).
#pragma unroll
          for (int r = 0; r < BK / ATOM; ++r)
            tma_load_to<(CM > 1)>(sb + (r * BN + b_off) * SW, &tm_b, fb, k0 + r * ATOM, n0 + b_off, mask_b);
        } else {
          // B stored K x N: regions of ATOM columns (N) x BK rows (K).
#pragma unroll
          for (int r = 0; r < BN / ATOM; ++r)
            tma_load_to<(CM > 1)>(sb + (r * BK + b_off) * SW, &tm_b, fb, n0 + r * ATOM, k0 + b_off, mask_b);
        }
      });
      // Tail: wait until every stage has been released by all consumers of the cluster, so that no
      // CTA arrives on this CTA's barriers after it has exited.
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
    if constexpr (BS_SMEM) {
      // The scale warp: the same work in the same order as the TMA thread; each k block's scales
      // into its stage's slot once every consumer of the cluster has released the stage.
      if (tid / 32 == 1) {
        const int lane = tid % 32;
        for_each_block([&](int m0, int n0, int kb) {
          mbar_wait(empty_bar(stage), phase ^ 1);
          const uint32_t slot = scale_base + stage * SCALE_SLOT_BYTES;
          const float* col = p.a_scale + static_cast<long long>(kb) * p.m;  // A's scales: [scale_kb, M]
#pragma unroll
          for (int r = lane; r < BM; r += 32) {
            const bool in = m0 + r < p.m;
            cp_async_f32(slot + 4u * r, in ? col + m0 + r : col, in);
          }
          if (lane < SCALE_NQ) {
            const int nb = n0 / 128 + lane;
            const bool in = nb * 128 < p.n;
            cp_async_f32(slot + 4u * (BM + lane), p.b_scale + (in ? static_cast<long long>(nb) * p.scale_kb + kb : 0),
                         in);
          }
          cp_async_mbar_arrive(full_bar(stage));
        });
      }
    }
  } else {
    // ------------------------------- consumers -------------------------------
    if constexpr (REG_SHARING) setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;
#if CROQ_TRACE
    TraceCta& trace = trace_buf[blockIdx.x < TRACE_CTAS ? blockIdx.x : TRACE_CTAS - 1];
    const unsigned long long trace_t0 = globaltimer_ns();
    unsigned long long trace_dp = 0;
    int trace_dp_units = -1;
    auto trace_start = [&](int i, int unit) {
      if (cw == 0 && tid == 0 && i < TRACE_UNITS) {
        trace.at[i] = globaltimer_ns();
        trace.clk[i] = clock64();
        trace.unit[i] = unit;
      }
    };
    auto trace_dp_end = [&](int units) {  // the end of the CTA's data-parallel units, after `units` units
      trace_dp = globaltimer_ns();
      trace_dp_units = units;
    };
#else
    auto trace_start = [](int, int) {};
    auto trace_dp_end = [](int) {};
#endif
    const int warp = tid / 32, lane = tid % 32;
    float acc[M_ATOMS][BN / 2];
    // CROQ_BLOCKSCALE: the promoted sums (f32 registers), one k block's WGMMA sums added per stage.
    [[maybe_unused]] float pacc[PROMOTE ? M_ATOMS : 1][PROMOTE ? BN / 2 : 1];
    // BS_OVERLAP: the second set of WGMMA sums (odd k blocks of a unit; acc holds the even ones).
    [[maybe_unused]] float acc2[BS_OVERLAP ? M_ATOMS : 1][BS_OVERLAP ? BN / 2 : 1];
    // Partial sums of a piece of a tile for another CTA (split-K slices, stream-K shares): stored in
    // the accumulator layout itself (float4 i of thread t of row block rb at (rb * BN/8 + i) * 128
    // + t, every access a coalesced 16 bytes), then a flag is released with this launch's tag. The
    // reader waits for each flag in [first, last) (clearing it for the next launch) and adds the
    // sums in that order, so the result does not depend on which CTA finished first.
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
    [[maybe_unused]] auto add_partials = [&](int first, int last, auto slot_of, auto flag_of, int rb0) {
      if (tid == 0) {
        for (int q = first; q < last; ++q) {
          unsigned long long* f = flag_of(q);
          while (flag_acquire(f) != p.tag) __nanosleep(32);
          flag_clear(f);
        }
      }
      named_barrier(1 + cw, 128);
      for (int q = first; q < last; ++q) {
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
    int local = 0;                  // index of the work unit among this CTA's units
    [[maybe_unused]] long long pos = 0;  // PINGPONG: ring position of the next unit's first k block
    [[maybe_unused]] int slot = 0;  // epilogue slot, alternating across chunks and tiles (EPILOGUE 1)
    // CROQ_EPILOGUE 1: chunks of 64 rows x EPI_COLS columns (128-byte rows when BN allows) through two swizzled
    // slots per consumer; thread 0 of the warpgroup issues the TMA store of a chunk and, before a
    // slot is rewritten, waits until the store that last read it is done reading. src: this
    // consumer's sums of the tile at (tm0, tn0).
    auto store_c = [&](auto& src, int tm0, int tn0, int r0) {
      constexpr int EPI_COLS = epi_cols<TOut>();
      constexpr int PITCH = EPI_COLS * static_cast<int>(sizeof(TOut));  // 128 or 64 bytes
#pragma unroll
      for (int ma = 0; ma < M_ATOMS; ++ma) {
#pragma unroll
        for (int ch = 0; ch < BN / EPI_COLS; ++ch) {
          const uint32_t buf = epi_base + (cw * EPI_SLOTS + slot) * EPI_SLOT_BYTES;
          if (tid == 0) bulk_wait_read<EPI_SLOTS - 1>();
          named_barrier(1 + cw, 128);
          if constexpr (sizeof(TOut) == 4) {
#pragma unroll
            for (int jj = 0; jj < EPI_COLS / 8; ++jj) {
              const int j = ch * (EPI_COLS / 8) + jj;
              const int r = warp * 16 + lane / 4;
              const uint32_t cb = (jj * 8 + (lane % 4) * 2) * 4;
              st_shared_v2(buf + swizzled<PITCH>(r * PITCH + cb), src[ma][4 * j], src[ma][4 * j + 1]);
              st_shared_v2(buf + swizzled<PITCH>((r + 8) * PITCH + cb), src[ma][4 * j + 2], src[ma][4 * j + 3]);
            }
          } else {
#pragma unroll
            for (int jp = 0; jp < EPI_COLS / 16; ++jp) {
              const int j0 = ch * (EPI_COLS / 8) + jp * 2;
              const int q = lane / 8;
              const int r = warp * 16 + (q % 2) * 8 + lane % 8;
              const uint32_t cb = (jp * 2 + q / 2) * 16;
              stmatrix_x4(buf + swizzled<PITCH>(r * PITCH + cb),
                          pack2<TOut>(src[ma][4 * j0], src[ma][4 * j0 + 1]),
                          pack2<TOut>(src[ma][4 * j0 + 2], src[ma][4 * j0 + 3]),
                          pack2<TOut>(src[ma][4 * j0 + 4], src[ma][4 * j0 + 5]),
                          pack2<TOut>(src[ma][4 * j0 + 6], src[ma][4 * j0 + 7]));
            }
          }
          fence_proxy_async_smem();
          named_barrier(1 + cw, 128);
          if (tid == 0) {
            tma_store(&tm_c, buf, tn0 + ch * EPI_COLS, tm0 + r0 + ma * 64);
            bulk_commit();
          }
          slot = EPI_SLOTS == 2 ? slot ^ 1 : 0;
        }
      }
    };
    // BS_EPI_OVERLAP: the tile whose C is still to be stored from pacc (m0 < 0: none).
    [[maybe_unused]] int pend_m0 = -1, pend_n0 = 0;
    // The body of the persistent loop, once per unit of work (a tile, a split-K slice or a stream-K piece).
    auto run_unit = [&](const Work& wk) {
      const int unit = wk.unit, slice = wk.slice, kb0 = wk.kb0, kb1 = wk.kb1;
      if constexpr (PINGPONG) {
        // Units alternate between the two consumers; the ring position of this unit's first k
        // block follows from the units before it (the producer loads every unit in order).
        const long long first = pos;
        pos += kb1 - kb0;
        if ((local & 1) != cw) return;
        stage = static_cast<int>(first % STAGES);
        phase = static_cast<uint32_t>((first / STAGES) & 1);
        // Start only when the other consumer has waited for every stage of the previous unit:
        // then no stage of this unit can be a whole phase behind the parity waited for below
        // (TMA loads complete in any order), and the two mainloops alternate, each epilogue
        // overlapping the other consumer's MMAs.
        if (local > 0) mbar_wait(order_bar(1 - cw), static_cast<uint32_t>(((local - 1) >> 1) & 1));
      }
      int um, un;
      unit_coords(unit, p, um, un);
      const int m0 = (um * CM + cm) * BM;
      const int n0 = (un * CN + cn) * BN;
      const int row0 = PINGPONG ? 0 : cw * WG_M;  // this consumer's first row in the tile
      int prev_stage = 0;
      // CROQ_BLOCKSCALE: the scales of k block kb for this thread, read while its stage is still
      // loading: the A scales of its two rows per m64 atom, the B scales of the tile's N blocks.
      constexpr int NQ = SCALE_NQ;
      // BS_SMEM: read from the slot of stage s (waited for), in the layout the scale warp wrote.
      [[maybe_unused]] auto load_block_scales = [&](int kb, int s, float (&lo)[M_ATOMS], float (&hi)[M_ATOMS],
                                                    float (&b)[NQ]) {
        if constexpr (BS_SMEM) {
          const uint32_t slot = scale_base + s * SCALE_SLOT_BYTES;
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma) {
            const int r = row0 + ma * 64 + warp * 16 + lane / 4;
            lo[ma] = lds_f32(slot + 4u * r);
            hi[ma] = lds_f32(slot + 4u * (r + 8));
          }
#pragma unroll
          for (int q = 0; q < NQ; ++q) b[q] = lds_f32(slot + 4u * (BM + q));
        } else {
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma) {
            const int r = m0 + row0 + ma * 64 + warp * 16 + lane / 4;
            // A's scales are [scale_kb, M]: a warp's 16 rows are 64 contiguous bytes of k block kb.
            const float* col = p.a_scale + static_cast<long long>(kb) * p.m;
            lo[ma] = r < p.m ? __ldg(col + r) : 0.f;
            hi[ma] = r + 8 < p.m ? __ldg(col + r + 8) : 0.f;
          }
#pragma unroll
          for (int q = 0; q < NQ; ++q) {
            const int nb = n0 / 128 + q;
            b[q] = nb * 128 < p.n ? __ldg(p.b_scale + static_cast<long long>(nb) * p.scale_kb + kb) : 0.f;
          }
        }
      };
      if constexpr (BS_OVERLAP) {
        // Even k blocks of the unit accumulate in acc, odd ones in acc2. A block's sums are promoted
        // while the tensor cores run the next block: after issuing a block the consumer waits only
        // for the one before (wgmma_wait<1>) and promotes it. With staged scales the unit runs in
        // straight-line groups of CROQ_BS_GROUP blocks, drained at each group's end: one promotion
        // in eight runs with no WGMMA of its consumer in flight, against one in two for pairs
        // (0.7 to 1.2 % faster), and the two consumers issue in turns (CROQ_BS_TURNS, 1 % more;
        // docs/fp8.md).
        // Otherwise it runs in pairs: the odd block is waited for at the end of the pair and
        // promoted after the next even block's WGMMAs are issued. No WGMMA is in flight across the
        // loop's back-edge: ptxas of CUDA 13.0 serializes every WGMMA of a function (warning C7514)
        // where sums are read after a partial wait with a WGMMA group carried around a loop. The
        // scales of a block are read before its WGMMAs are issued and kept in the set of that
        // parity until its promotion.
        float s_lo[2][M_ATOMS], s_hi[2][M_ATOMS], s_b[2][NQ];
        auto load_scales = [&](auto set, int kb, int s) {  // s: kb's stage (read only with BS_SMEM)
          constexpr int W = decltype(set)::value;
          load_block_scales(kb, s, s_lo[W], s_hi[W], s_b[W]);
        };
        // Waits for the stage of the block ahead (offset 0 or 1). The pair loop waits for both of
        // its stages before its first WGMMA (waiting for the odd one after issuing the even block
        // compiles apart from the WGMMAs with CUDA 13.0 but was no faster; docs/fp8.md).
        auto wait_full = [&](int ahead) {
          const int s = stage + ahead;
          mbar_wait(full_bar(s < STAGES ? s : s - STAGES), s < STAGES ? phase : phase ^ 1);
        };
        auto issue = [&](auto& d) {  // this stage's WGMMAs into d, started afresh; returns the stage
          const uint32_t sa = base + stage * STAGE_BYTES;
          const uint32_t sb = sa + A_STAGE_BYTES;
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma) fence_acc(d[ma]);
          wgmma_fence();
          const uint32_t la = desc_lo(sa, 16), lb = desc_lo(sb, 16);
#pragma unroll
          for (int kk = 0; kk < BK / KSTEP; ++kk) {
            const int region = (kk * KSTEP) / ATOM;
            const uint32_t koff = ((kk * KSTEP) % ATOM) * EB;
            const uint64_t db = desc_at(lb, region * BN * SW + koff);  // e4m3: B K-major
#pragma unroll
            for (int ma = 0; ma < M_ATOMS; ++ma) {
              const uint32_t aoff = (region * BM + row0 + ma * 64) * SW + koff;
              const uint64_t da = desc_at(la, aoff);
              wgmma_m64<BN, KIND, 0>(d[ma], da, db, kk != 0 ? 1 : 0);
            }
          }
          wgmma_commit();
          const int s = stage;
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
          return s;
        };
        // d's sums (retired) times the rows' A scales and the columns' B scale, added into pacc.
        // Accumulator d[4j + e] is row (e < 2 ? r : r + 8), column n0 + 8j + 2(lane % 4) + e % 2.
        auto promote = [&](auto set, auto& d) {
          constexpr int W = decltype(set)::value;
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma) fence_acc(d[ma]);
          with_column_offset<gcd_int(BN, 128)>(n0 % 128, [&](auto off) {
            constexpr int OFF = decltype(off)::value;
#pragma unroll
            for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
              for (int i = 0; i < BN / 2; ++i) {
                const float sc = ((i % 4) < 2 ? s_lo[W][ma] : s_hi[W][ma]) * s_b[W][(OFF + 8 * (i / 4)) / 128];
                pacc[ma][i] = fmaf(d[ma][i], sc, pacc[ma][i]);
              }
          });
        };
        constexpr std::integral_constant<int, 0> even{};
        constexpr std::integral_constant<int, 1> odd{};
        // The promoted sums start at zero; with BS_EPI_OVERLAP once the tile before is stored.
        auto start_sums = [&] {
          if constexpr (BS_EPI_OVERLAP) {
            if (pend_m0 >= 0) store_c(pacc, pend_m0, pend_n0, row0);
          }
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) pacc[ma][i] = 0.f;
        };
        if constexpr (!BS_EPI_OVERLAP) start_sums();
        // The scales of an even block are read a pair ahead, those of an odd block when its set is
        // free (after the promotion of the odd block before).
        // BS_SMEM: a block's scales are read from its stage's slot once the stage is waited for.
        int kb = kb0;
#if CROQ_BS_GROUP > 2 && CROQ_SCALE_STAGE != 0
        // Groups of CROQ_BS_GROUP k blocks in straight-line code: each block's stage is waited for
        // (with the block before still running: ptxas keeps that spinning wait apart from the
        // WGMMAs in straight-line code), its scales read and its WGMMAs issued, then the block before
        // is promoted while they run; the group drains only at its end (no WGMMA across the loop's
        // back-edge). The rest of the unit: pairs, then one block.
        // first: the tile's first group, which (BS_EPI_OVERLAP) stores the tile before once its first
        // block is issued.
        auto group = [&](auto n, auto first) {
          constexpr int U = decltype(n)::value;
          int s_prev = 0;
          static_for<0, U>([&](auto jc) {
            constexpr int j = decltype(jc)::value;
            wait_full(0);
            int s;
            if constexpr (BS_TURNS) {
              if (cw == 0) named_barrier(BS_TURNS_BAR, 256);
            }
            if constexpr (j % 2 == 0) {
              load_scales(even, kb + j, stage);
              s = issue(acc);
            } else {
              load_scales(odd, kb + j, stage);
              s = issue(acc2);
            }
            if constexpr (BS_TURNS) {
              if (cw == 1) named_barrier(BS_TURNS_BAR, 256);
            }
            if constexpr (BS_EPI_OVERLAP && decltype(first)::value && j == 0) start_sums();
            if constexpr (j > 0) {
              wgmma_wait<1>();
              release(s_prev);
              if constexpr (j % 2 == 0) {
                promote(odd, acc2);
              } else {
                promote(even, acc);
              }
            }
            s_prev = s;
          });
          wgmma_wait<0>();
          release(s_prev);
          if constexpr ((U - 1) % 2 == 0) {
            promote(even, acc);
          } else {
            promote(odd, acc2);
          }
        };
        constexpr std::true_type tile_first{};
        constexpr std::false_type later{};
        if constexpr (BS_EPI_OVERLAP) {  // the tile's first group peeled
          if (kb + CROQ_BS_GROUP <= kb1) {
            group(std::integral_constant<int, CROQ_BS_GROUP>{}, tile_first);
            kb += CROQ_BS_GROUP;
          } else if (kb + 2 <= kb1) {
            group(std::integral_constant<int, 2>{}, tile_first);
            kb += 2;
          } else if (kb < kb1) {
            group(std::integral_constant<int, 1>{}, tile_first);
            kb += 1;
          } else {
            start_sums();  // no k block: the tile's sums are zero
          }
        }
        for (; kb + CROQ_BS_GROUP <= kb1; kb += CROQ_BS_GROUP) group(std::integral_constant<int, CROQ_BS_GROUP>{}, later);
        for (; kb + 2 <= kb1; kb += 2) group(std::integral_constant<int, 2>{}, later);
        if (kb < kb1) group(std::integral_constant<int, 1>{}, later);
        if constexpr (BS_EPI_OVERLAP) {  // C is stored from pacc during the next tile's first block
          pend_m0 = m0;
          pend_n0 = n0;
        }
#else
        if constexpr (!BS_SMEM) {
          if (kb < kb1) load_scales(even, kb, 0);
        }
        for (; kb + 1 < kb1; kb += 2) {  // whole pairs
          wait_full(0);
          wait_full(1);
          if constexpr (BS_SMEM) load_scales(even, kb, stage);
          // The odd block before (kb - 1, retired at the end of the last pair) is promoted before
          // the even block's WGMMAs are issued: promoted after them, ptxas of CUDA 13.0 waits for
          // them first anyway (warning C7517: the odd block's sums come from the loop's previous
          // iteration).
          if (kb > kb0) promote(odd, acc2);
          const int s_even = issue(acc);
          load_scales(odd, kb + 1, stage);  // issue advanced stage to kb + 1's
          const int s_odd = issue(acc2);
          wgmma_wait<1>();
          release(s_even);
          promote(even, acc);
          if constexpr (!BS_SMEM) load_scales(even, min(kb + 2, kb1 - 1), 0);  // the next pair's (or the last block's)
          wgmma_wait<0>();
          release(s_odd);
        }
        if (kb > kb0) promote(odd, acc2);  // the last pair's odd block
        if (kb < kb1) {                    // an odd count of blocks: the last one drained
          wait_full(0);
          if constexpr (BS_SMEM) load_scales(even, kb, stage);
          const int s_last = issue(acc);
          wgmma_wait<0>();
          release(s_last);
          promote(even, acc);
        }
#endif
      } else if constexpr (BS_WAVES) {
        // Each k block: its stage waited for and its scales read, then per m64 atom the WGMMAs
        // issued into acc[0], drained and promoted into pacc[ma]; the stage is released once the
        // last atom's WGMMAs have retired. With CROQ_BS_TURNS the two consumers issue their waves
        // in turns (as in the groups).
        auto start_sums = [&] {
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) pacc[ma][i] = 0.f;
        };
        start_sums();
        // CROQ_BS_WAVES 2: the next block's stage is waited for while this block's last wave runs.
        constexpr bool EARLY_WAIT = BS_WAVES_MODE == 2;
        if constexpr (EARLY_WAIT) {
          if (kb0 < kb1) mbar_wait(full_bar(stage), phase);
        }
        auto block = [&](int kb) {
          float w_lo[M_ATOMS], w_hi[M_ATOMS], w_b[NQ];
          if constexpr (!EARLY_WAIT) mbar_wait(full_bar(stage), phase);
          if constexpr (!BS_SCALES_LATE) load_block_scales(kb, stage, w_lo, w_hi, w_b);
          const uint32_t sa = base + stage * STAGE_BYTES;
          const uint32_t la = desc_lo(sa, 16), lb = desc_lo(sa + A_STAGE_BYTES, 16);
          static_for<0, M_ATOMS>([&](auto mc) {
            constexpr int ma = decltype(mc)::value;
            if constexpr (BS_TURNS) {
              if (cw == 0) named_barrier(BS_TURNS_BAR, 256);
            }
            fence_acc(acc[0]);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / KSTEP; ++kk) {
              const int region = (kk * KSTEP) / ATOM;
              const uint32_t koff = ((kk * KSTEP) % ATOM) * EB;
              const uint64_t db = desc_at(lb, region * BN * SW + koff);  // e4m3: B K-major
              const uint64_t da = desc_at(la, (region * BM + row0 + ma * 64) * SW + koff);
              wgmma_m64<BN, KIND, 0>(acc[0], da, db, kk != 0 ? 1 : 0);
            }
            wgmma_commit();
            if constexpr (BS_TURNS) {
              if (cw == 1) named_barrier(BS_TURNS_BAR, 256);
            }
            if constexpr (BS_SCALES_LATE && ma == 0) load_block_scales(kb, stage, w_lo, w_hi, w_b);
            if constexpr (EARLY_WAIT && ma == M_ATOMS - 1) {
              if (kb + 1 < kb1) {
                const int s1 = stage + 1 < STAGES ? stage + 1 : 0;
                mbar_wait(full_bar(s1), s1 != 0 ? phase : phase ^ 1);
              }
            }
            wgmma_wait<0>();
            fence_acc(acc[0]);
            if constexpr (ma == M_ATOMS - 1) release(stage);
            with_column_offset<gcd_int(BN, 128)>(n0 % 128, [&](auto off) {
              constexpr int OFF = decltype(off)::value;
#pragma unroll
              for (int i = 0; i < BN / 2; ++i) {
                const float sc = ((i % 4) < 2 ? w_lo[ma] : w_hi[ma]) * w_b[(OFF + 8 * (i / 4)) / 128];
                pacc[ma][i] = fmaf(acc[0][i], sc, pacc[ma][i]);
              }
            });
          });
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        };
        for (int kb = kb0; kb < kb1; ++kb) block(kb);
      } else {
        if constexpr (BLOCKSCALE) {  // the drained kernel adds every block's scaled sums into pacc
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) pacc[ma][i] = 0.f;
        }
        // The block-scaled scales of the next k block are read while this block's WGMMAs run (read
        // at the block's start, their latency showed: 0.825 -> 0.863 x cuBLASLt at 8192^3, 128x192).
        [[maybe_unused]] float na_lo[M_ATOMS], na_hi[M_ATOMS], nbk[NQ];
        if constexpr (BLOCKSCALE && !BS_SMEM) {
          if (kb1 > kb0) load_block_scales(kb0, 0, na_lo, na_hi, nbk);
        }
        for (int kb = kb0; kb < kb1; ++kb) {
          [[maybe_unused]] float sa_lo[M_ATOMS], sa_hi[M_ATOMS], sbk[NQ];
          if constexpr (BLOCKSCALE && !BS_SMEM) {
#pragma unroll
            for (int ma = 0; ma < M_ATOMS; ++ma) {
              sa_lo[ma] = na_lo[ma];
              sa_hi[ma] = na_hi[ma];
            }
#pragma unroll
            for (int q = 0; q < NQ; ++q) sbk[q] = nbk[q];
          }
          mbar_wait(full_bar(stage), phase);
          if constexpr (BS_SMEM) load_block_scales(kb, stage, sa_lo, sa_hi, sbk);
          const uint32_t sa = base + stage * STAGE_BYTES;
          const uint32_t sb = sa + A_STAGE_BYTES;
          const uint32_t la = desc_lo(sa, 16), lb = desc_lo(sb, B_KMAJOR ? 16 : BK * SW);
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma) fence_acc(acc[ma]);
          wgmma_fence();
#pragma unroll
          for (int kk = 0; kk < BK / KSTEP; ++kk) {
            const int region = (kk * KSTEP) / ATOM;
            const uint32_t koff = ((kk * KSTEP) % ATOM) * EB;
            uint64_t db;
            if constexpr (B_KMAJOR) {
              db = desc_at(lb, region * BN * SW + koff);
            } else {
              db = desc_at(lb, kk * 16 * SW);
            }
#pragma unroll
            for (int ma = 0; ma < M_ATOMS; ++ma) {
              const uint32_t aoff = (region * BM + row0 + ma * 64) * SW + koff;
              const uint64_t da = desc_at(la, aoff);
              // The first WGMMA of a unit, and with promotion the first after each, starts afresh.
              wgmma_m64<BN, KIND, B_KMAJOR ? 0 : 1>(
                  acc[ma], da, db, PROMOTE ? ((kk != 0 || (kb - kb0) % PROMOTE_EVERY != 0) ? 1 : 0)
                                           : ((kb != kb0 || kk != 0) ? 1 : 0));
            }
          }
          wgmma_commit();
          if constexpr (BLOCKSCALE && !BS_SMEM) {
            if (kb + 1 < kb1) load_block_scales(kb + 1, 0, na_lo, na_hi, nbk);
          }
#if CROQ_MMA_DEPTH == 1
          wgmma_wait<1>();
          if (kb > kb0) release(prev_stage);
#else
          wgmma_wait<0>();
          release(stage);
#endif
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma) fence_acc(acc[ma]);
          if constexpr (BLOCKSCALE) {
            // Promotion: accumulator d[4j + e] is row (e < 2 ? r : r + 8), column n0 + 8j + 2(lane % 4) + e % 2.
            // One FFMA per sum, the scale product shared by the row's columns of one B block (a
            // select of the first block's product instead made ptxas emit FMUL, FMUL, FADD and
            // register moves per sum, and spill 128x192; docs/fp8.md).
            with_column_offset<gcd_int(BN, 128)>(n0 % 128, [&](auto off) {
              constexpr int OFF = decltype(off)::value;
#pragma unroll
              for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
                for (int i = 0; i < BN / 2; ++i) {
                  const float sc = ((i % 4) < 2 ? sa_lo[ma] : sa_hi[ma]) * sbk[(OFF + 8 * (i / 4)) / 128];
                  pacc[ma][i] = fmaf(acc[ma][i], sc, pacc[ma][i]);
                }
            });
          } else if constexpr (PROMOTE) {
            // Every PROMOTE_EVERY stages and after the unit's last: the WGMMAs retired (with MMA_DEPTH
            // 1 this stage's are still running; the stage itself is released as usual, after the
            // next stage's wait), their sums added; the next stage's WGMMAs start afresh.
            if ((kb - kb0 + 1) % PROMOTE_EVERY == 0 || kb + 1 == kb1) {
              if constexpr (CROQ_MMA_DEPTH == 1) {
                wgmma_wait<0>();
#pragma unroll
                for (int ma = 0; ma < M_ATOMS; ++ma) fence_acc(acc[ma]);
              }
              const bool first = kb - kb0 < PROMOTE_EVERY;
#pragma unroll
              for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
                for (int i = 0; i < BN / 2; ++i) pacc[ma][i] = first ? acc[ma][i] : pacc[ma][i] + acc[ma][i];
            }
          }
          prev_stage = stage;
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
      if constexpr (PINGPONG) {
        if (tid == 0) mbar_arrive_local(order_bar(cw));
      }
#if CROQ_MMA_DEPTH == 1
      if constexpr (!BS_OVERLAP) {  // BS_OVERLAP released every stage in its loop
        wgmma_wait<0>();
        if (kb1 > kb0) release(prev_stage);
      }
#endif
      if constexpr (!BS_EPI_OVERLAP) {  // BS_EPI_OVERLAP stores pacc during the next tile
#pragma unroll
        for (int ma = 0; ma < M_ATOMS; ++ma) fence_acc(acc[ma]);
        if constexpr (PROMOTE) {
          if (kb1 > kb0) {
#pragma unroll
            for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
              for (int i = 0; i < BN / 2; ++i) acc[ma][i] = pacc[ma][i];
          }
        }
        if (kb1 <= kb0) {
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[ma][i] = 0.f;
        }
      }

      // ------------------------------- split-K reduction -------------------------------
      if constexpr (SPLIT_K > 1) {
        if (p.split > 1) {
          const long long tile = static_cast<long long>(unit) * CS + rank;
          const int group = PINGPONG ? 0 : cw;
          auto slot = [&](int q) { return p.partials + (tile * (p.split - 1) + q) * (BM * BN); };
          auto flag = [&](int q) { return p.flags + (tile * (p.split - 1) + q) * FLAG_GROUPS + group; };
          if (slice < p.split - 1) {
            publish_partial(slot(slice), flag(slice), row0 / 64);
            return;  // the tile's last slice writes C
          }
          add_partials(0, p.split - 1, slot, flag, row0 / 64);  // the other slices, in slice order
        }
      }

      // ------------------------------- stream-K reduction -------------------------------
      if constexpr (STREAM_K) {
        // One slot of partial sums per CTA (at most one piece of its share ends inside a tile) and
        // a flag per (CTA, row owner). The CTA holding a tile's last k blocks adds the earlier
        // shares (the previous clusters, the same rank in each) in k order, each published by the
        // first piece its CTA works on.
        auto slot = [&](int q) { return p.partials + (static_cast<long long>(q) * CS + rank) * (BM * BN); };
        auto flag = [&](int q) { return p.flags + (static_cast<long long>(q) * CS + rank) * FLAG_GROUPS + cw; };
        if (wk.role == WORK_PARTIAL) {
          publish_partial(slot(cluster_id), flag(cluster_id), row0 / 64);
          return;  // the CTA holding the tile's last k block writes C
        }
        if (wk.role == WORK_REDUCE) add_partials(wk.peer_first, cluster_id, slot, flag, row0 / 64);
      }

      // ------------------------------- epilogue -------------------------------
      if constexpr (KIND == 2 && !BLOCKSCALE) {
        // Per-tensor scales (e4m3): the f32 sums, reduced across slices or shares, times a_scale * b_scale.
        if (p.a_scale != nullptr) {
          const float sc = __ldg(p.a_scale) * __ldg(p.b_scale);
#pragma unroll
          for (int ma = 0; ma < M_ATOMS; ++ma)
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[ma][i] *= sc;
        }
      }
#if CROQ_EPILOGUE == 0 || CROQ_EPILOGUE == 2
      TOut* c = static_cast<TOut*>(p.c);
      if constexpr (CROQ_EPILOGUE == 2 && sizeof(TOut) == 2) {
        // Two 8-column blocks (j, j+1) at a time: a quad of lanes holds rows r and r+8 of both,
        // 2 columns per lane per row and block. A 4 x 4 transpose across the quad gives lane q
        // all 8 columns of one (row, block): q = 0 (r, j), 1 (r, j+1), 2 (r+8, j), 3 (r+8, j+1),
        // stored as one 16-byte vector; two lanes fill a 32-byte sector of a row.
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
            // Round t: lane s sends x[(s - t) & 3] to lane (s - t) & 3, which reads lane (q + t) & 3.
            uint32_t got[4];
#pragma unroll
            for (int t = 0; t < 4; ++t) {
              const uint32_t v = select4(x, (q - t) & 3);
              got[t] = t == 0 ? v : __shfl_sync(0xffffffffu, v, quad0 | ((q + t) & 3));
            }
            // got[t] came from lane (q + t) & 3: columns 2s, 2s + 1 of the block for s = (q + t) & 3.
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
                  if (col + e < p.n) {
                    const uint16_t bits = static_cast<uint16_t>(o[e / 2] >> (16 * (e % 2)));
                    reinterpret_cast<uint16_t*>(dst)[e] = bits;
                  }
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
      if constexpr (!BS_EPI_OVERLAP) store_c(acc, m0, n0, row0);
#endif
    };
    if constexpr (STREAM_K) {
      // The data-parallel units (each a whole tile) and the pieces of the stream-K share, counted
      // first: in one counted loop (CROQ_SK_ONE_LOOP) or in two. In a loop whose condition is work_at,
      // ptxas of CUDA 13.0 kept the k loop's stage and descriptors in vector registers rather than
      // uniform ones (15 % more instructions, 8 % slower with no stream-K region at all: docs/fp8.md).
      Work dw;
      dw.slice = 0;
      dw.kb0 = 0;
      dw.kb1 = p.num_kb;
      dw.role = WORK_FULL;
      dw.peer_first = -1;
      dw.next = 0;
#if CROQ_SK_ONE_LOOP
      // One call of run_unit, one copy of the k loop: the cluster's data-parallel units, then its share's pieces.
      const int dp_units = cluster_id < p.dp_work ? (p.dp_work - 1 - cluster_id) / num_clusters + 1 : 0;
      int pieces = 0;
      long long cur = 0;
      if (p.sk_iters > 0) {
        const long long first = p.dp_work + sk_first(cluster_id, num_clusters, p);
        Work wk;
        for (long long at = first; work_at(at, cluster_id, num_clusters, p, wk); at = wk.next) ++pieces;
        cur = first;
      }
      for (int i = 0; i < dp_units + pieces; ++i, ++local) {
        Work wk = dw;
        if (i < dp_units) {
          wk.unit = cluster_id + i * num_clusters;
        } else {
          if (i == dp_units) trace_dp_end(local);
          work_at(cur, cluster_id, num_clusters, p, wk);
          cur = wk.next;
        }
        trace_start(local, wk.unit);
        run_unit(wk);
      }
      if (pieces == 0) trace_dp_end(local);
#else
      for (int u = cluster_id; u < p.dp_work; u += num_clusters, ++local) {
        dw.unit = u;
        trace_start(local, u);
        run_unit(dw);
      }
      trace_dp_end(local);
      Work wk;
      if (p.sk_iters > 0) {
        // The share's pieces (at most a head, the whole tiles and a start piece) counted first
        const long long first = p.dp_work + sk_first(cluster_id, num_clusters, p);
        int pieces = 0;
        for (long long cur = first; work_at(cur, cluster_id, num_clusters, p, wk); cur = wk.next) ++pieces;
        long long cur = first;
        for (int i = 0; i < pieces; ++i, ++local) {
          work_at(cur, cluster_id, num_clusters, p, wk);
          cur = wk.next;
          trace_start(local, wk.unit);
          run_unit(wk);
        }
      }
#endif
    } else {
      Work wk;
      for (long long cur = work_start(cluster_id, num_clusters, p); work_at(cur, cluster_id, num_clusters, p, wk);
           cur = wk.next, ++local) {
        trace_start(local, wk.unit);
        run_unit(wk);
      }
    }
#if CROQ_EPILOGUE == 1
    if constexpr (BS_EPI_OVERLAP) {
      if (pend_m0 >= 0) store_c(pacc, pend_m0, pend_n0, cw * WG_M);
    }
    if (tid == 0) bulk_wait_all();
#endif
#if CROQ_TRACE
    if (cw == 0 && tid == 0) {
      trace.sm = smid();
      trace.cluster = cluster_id;
      trace.units = local;
      trace.dp_units = trace_dp_units;
      trace.t0 = trace_t0;
      trace.dp = trace_dp;
      trace.end = globaltimer_ns();
    }
#endif
  }
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

// Copies a rows x cols matrix of 2-byte units between row strides (in units): used to give TMA
// 16-byte aligned rows when the caller's are not.
__global__ void copy_rows(const uint16_t* __restrict__ src, long long src_ld, uint16_t* __restrict__ dst,
                          long long dst_ld, long long rows, long long cols) {
  const long long total = rows * cols;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / cols, c = i - r * cols;
    dst[r * dst_ld + c] = src[r * src_ld + c];
  }
}

inline bool launch_copy(const void* src, long long src_ld, void* dst, long long dst_ld, long long rows,
                        long long cols_units, cudaStream_t stream) {
  const long long total = rows * cols_units;
  if (total == 0) return true;
  long long blocks = (total + 255) / 256;
  if (blocks > 8192) blocks = 8192;
  copy_rows<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<const uint16_t*>(src), src_ld,
                                                               static_cast<uint16_t*>(dst), dst_ld, rows, cols_units);
  return cudaGetLastError() == cudaSuccess;
}

inline size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }
inline bool aligned16(const void* p, long long ld_bytes) {
  return (reinterpret_cast<uintptr_t>(p) % 16) == 0 && (ld_bytes % 16) == 0;
}

// The tile grid of a problem: cluster tiles, k blocks and the split-K slices actually used
// (at most one slice per k block, so that no slice is empty).
struct Grid {
  int units_m = 0, units_n = 0, num_units = 0, num_kb = 0, split = 1;
  long long tiles = 0;  // CTA tiles, cluster padding included
  int sk_slots = 0;     // stream-K: partial-sum slots, one per SM (at most one CTA per SM)
};

// SMs of the current device (0 when it cannot be asked).
inline int device_sms() {
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return 0;
  return n;
}

inline Grid make_grid(const croq_matmul_problem* p) {
  Grid g;
  const long long tiles_m = (p->m + BM - 1) / BM, tiles_n = (p->n + BN - 1) / BN;
  g.units_m = static_cast<int>((tiles_m + CM - 1) / CM);
  g.units_n = static_cast<int>((tiles_n + CN - 1) / CN);
  g.num_units = g.units_m * g.units_n;
  g.num_kb = static_cast<int>((p->k + BK - 1) / BK);
  g.split = SPLIT_K < g.num_kb ? SPLIT_K : g.num_kb;
  g.tiles = static_cast<long long>(g.num_units) * CS;
  g.sk_slots = STREAM_K ? device_sms() : 0;
  return g;
}

// Workspace bytes of the split-K or stream-K partial sums and flags (0 without either).
inline size_t split_partial_bytes(const Grid& g) {
  if (STREAM_K) return static_cast<size_t>(g.sk_slots) * BM * BN * sizeof(float);
  return g.split > 1 ? static_cast<size_t>(g.tiles) * (g.split - 1) * BM * BN * sizeof(float) : 0;
}
inline size_t split_flag_bytes(const Grid& g) {
  if (STREAM_K) return round_up(static_cast<size_t>(g.sk_slots) * FLAG_GROUPS * 8, 256);
  return g.split > 1 ? round_up(static_cast<size_t>(g.tiles) * (g.split - 1) * FLAG_GROUPS * 8, 256) : 0;
}

// The stream-K region for `clusters` resident clusters: none when the units fill whole waves,
// else the last partial wave and the SK_FULL_WAVES full waves before it (all units when there are
// fewer full waves), provided every cluster gets at least one k block and has a slot of partial sums.
inline void plan_stream_k(Params& prm, const Grid& g, int clusters) {
  prm.dp_work = prm.num_work;
  prm.sk_iters = 0;
  if (!STREAM_K || clusters <= 0) return;
  const int units = g.num_units;
  if (units % clusters == 0) return;
  const int full = units / clusters;
  const int dp = (full >= SK_FULL_WAVES ? full - SK_FULL_WAVES : 0) * clusters;
  const long long iters = static_cast<long long>(units - dp) * g.num_kb;
  if (iters < clusters || static_cast<long long>(clusters) * CS > g.sk_slots) return;
  if (iters * (clusters + 1) >= SK_MAX_PRODUCT) return;  // beyond the schedule's 32-bit divisions
  prm.dp_work = dp;
  prm.sk_iters = iters;
}

// Which operands must go through padded copies in the workspace, and where they go; the split-K
// partial sums and flags come first.
struct Plan {
  bool pad_a = false, pad_b = false, pad_c = false;
  long long lda_p = 0, ldb_p = 0, ldc_p = 0;  // padded leading dimensions (elements)
  size_t off_a = 0, off_b = 0, off_c = 0, off_flags = 0, bytes = 0;
};

inline Plan make_plan(const croq_matmul_problem* p, const Grid& g, const void* a, const void* b, const void* c,
                      int out_bytes) {
  Plan pl;
  const long long b_rows = p->b_layout == CROQ_ROW_MAJOR ? p->k : p->n;
  const long long b_cols = p->b_layout == CROQ_ROW_MAJOR ? p->n : p->k;
  pl.pad_a = !aligned16(a, p->lda * EB);
  pl.pad_b = !aligned16(b, p->ldb * EB);
  pl.pad_c = !aligned16(c, p->ldc * out_bytes);
  size_t off = split_partial_bytes(g);
  pl.off_flags = off;
  off += split_flag_bytes(g);
  if (pl.pad_a) {
    pl.lda_p = static_cast<long long>(round_up(p->k, 8));
    pl.off_a = off;
    off += round_up(static_cast<size_t>(p->m) * pl.lda_p * 2, 256);
  }
  if (pl.pad_b) {
    pl.ldb_p = static_cast<long long>(round_up(b_cols, 8));
    pl.off_b = off;
    off += round_up(static_cast<size_t>(b_rows) * pl.ldb_p * 2, 256);
  }
  if (pl.pad_c) {
    pl.ldc_p = static_cast<long long>(round_up(p->n, 8));
    pl.off_c = off;
    off += round_up(static_cast<size_t>(p->m) * pl.ldc_p * out_bytes, 256);
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

// A 2-D row-major tensor of `rows` x `cols` elements with rows `ld_bytes` apart, read or written
// in boxes of box_cols x box_rows.
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
  return sizeof(T) == 4                       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
         : sizeof(T) == 1                     ? CU_TENSOR_MAP_DATA_TYPE_UINT8
         : std::is_same<T, __half>::value     ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                              : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

// The three tensor maps of one call, cached by everything they encode.
struct MapKey {
  const void* a;
  const void* b;
  const void* c;
  long long m, n, k, lda, ldb, ldc;
  bool operator==(const MapKey& o) const { return memcmp(this, &o, sizeof(MapKey)) == 0; }
};
struct MapEntry {
  bool valid = false;
  MapKey key;
  CUtensorMap a, b, c;
};

struct LaunchInfo {
  bool ready = false;
  croq_status status = CROQ_INTERNAL;  // of the one-time setup
  int num_sms = 0;
  int max_clusters = 0;  // co-resident clusters of this kernel (persistent grid size)
};

// A value no earlier launch of this library has written into a split-K flag, and that leftover
// workspace contents match only by a 2^-64 chance: a counter mixed with a per-process seed.
inline unsigned long long next_tag() {
  static const unsigned long long seed =
      static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
      reinterpret_cast<uintptr_t>(&seed);
  static std::atomic<unsigned long long> counter{0};
  unsigned long long z = seed + 0x9E3779B97F4A7C15ULL * (counter.fetch_add(1) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return z | 1;  // 0 means "not ready"
}

template <typename TIn, typename TOut, bool B_KMAJOR>
croq_status run(const croq_matmul_problem* p, const void* a, const void* b, void* c, void* workspace,
                size_t workspace_bytes, cudaStream_t stream, const float* a_scale = nullptr,
                const float* b_scale = nullptr) {
  auto kernel = gemm_kernel<TIn, TOut, B_KMAJOR>;
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
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES) != cudaSuccess) {
      info.status = CROQ_LAUNCH_FAILED;
      return info.status;
    }
    info.max_clusters = info.num_sms / CS;
    if (CS > 1) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(CS * info.max_clusters, 1, 1);
      cfg.blockDim = dim3(THREADS, 1, 1);
      cfg.dynamicSmemBytes = SMEM_BYTES;
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

  const int out_bytes = static_cast<int>(sizeof(TOut));
  const Grid grid = make_grid(p);
  const Plan pl = make_plan(p, grid, a, b, c, out_bytes);
  if (pl.bytes > 0 && (workspace == nullptr || workspace_bytes < pl.bytes)) return CROQ_UNSUPPORTED;
  // The padded copies move 16-bit elements: an e4m3 operand needs 16-byte rows of its own (K a
  // multiple of 16) and a 16-byte aligned pointer.
  if (EB == 1 && (pl.pad_a || pl.pad_b)) return CROQ_UNSUPPORTED;
  uint8_t* ws = static_cast<uint8_t*>(workspace);
  const void* a_use = a;
  const void* b_use = b;
  void* c_use = c;
  long long lda = p->lda, ldb = p->ldb, ldc = p->ldc;
  const long long b_rows = B_KMAJOR ? p->n : p->k;
  const long long b_cols = B_KMAJOR ? p->k : p->n;
  if (pl.pad_a) {
    if (!launch_copy(a, p->lda, ws + pl.off_a, pl.lda_p, p->m, p->k, stream)) return CROQ_LAUNCH_FAILED;
    a_use = ws + pl.off_a;
    lda = pl.lda_p;
  }
  if (pl.pad_b) {
    if (!launch_copy(b, p->ldb, ws + pl.off_b, pl.ldb_p, b_rows, b_cols, stream)) return CROQ_LAUNCH_FAILED;
    b_use = ws + pl.off_b;
    ldb = pl.ldb_p;
  }
  if (pl.pad_c) {
    c_use = ws + pl.off_c;
    ldc = pl.ldc_p;
  }

  // Tensor maps, cached by what they encode (the harness calls again and again with the same
  // buffers; a different pointer or shape simply encodes new ones).
  static MapEntry cache[8];
  static int next_slot = 0;
  MapKey key;
  memset(&key, 0, sizeof(key));
  key.a = a_use;
  key.b = b_use;
  key.c = c_use;
  key.m = p->m;
  key.n = p->n;
  key.k = p->k;
  key.lda = lda;
  key.ldb = ldb;
  key.ldc = ldc;
  MapEntry* e = nullptr;
  for (auto& x : cache)
    if (x.valid && x.key == key) e = &x;
  if (!e) {
    e = &cache[next_slot];
    next_slot = (next_slot + 1) % 8;
    e->valid = false;
    const CUtensorMapDataType tin = tma_type<TIn>();
    bool ok = encode_2d(&e->a, tin, a_use, p->m, p->k, lda * EB, ATOM, BM / CN, tma_swizzle(SW));
    if (B_KMAJOR) {
      ok = ok && encode_2d(&e->b, tin, b_use, p->n, p->k, ldb * EB, ATOM, BN / CM, tma_swizzle(SW));
    } else {
      ok = ok && encode_2d(&e->b, tin, b_use, p->k, p->n, ldb * EB, ATOM, BK / CM, tma_swizzle(SW));
    }
    if (CROQ_EPILOGUE == 1) {
      ok = ok && encode_2d(&e->c, tma_type<TOut>(), c_use, p->m, p->n, ldc * out_bytes, epi_cols<TOut>(), 64,
                           tma_swizzle(epi_cols<TOut>() * out_bytes));
    } else {
      memset(&e->c, 0, sizeof(e->c));
    }
    if (!ok) return CROQ_INTERNAL;
    e->key = key;
    e->valid = true;
  }

  Params prm;
  prm.m = static_cast<int>(p->m);
  prm.n = static_cast<int>(p->n);
  prm.k = static_cast<int>(p->k);
  prm.units_m = grid.units_m;
  prm.units_n = grid.units_n;
  prm.num_units = grid.num_units;
  prm.num_kb = grid.num_kb;
  prm.split = grid.split;
  prm.num_work = grid.num_units * grid.split;
  prm.c = c_use;
  prm.ldc = ldc;
  int clusters = prm.num_work;
  if (CROQ_PERSISTENT && clusters > info.max_clusters) clusters = info.max_clusters;
  plan_stream_k(prm, grid, info.max_clusters);
  if (prm.sk_iters > 0) clusters = info.max_clusters;  // every resident cluster takes a share
  const bool reduces = grid.split > 1 || prm.sk_iters > 0;
  prm.partials = reduces ? reinterpret_cast<float*>(ws) : nullptr;
  prm.flags = reduces ? reinterpret_cast<unsigned long long*>(ws + pl.off_flags) : nullptr;
  prm.tag = reduces ? next_tag() : 0;
  prm.a_scale = a_scale;
  prm.b_scale = b_scale;
  prm.scale_kb = static_cast<int>((p->k + 127) / 128);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * CS), 1, 1);
  cfg.blockDim = dim3(THREADS, 1, 1);
  cfg.dynamicSmemBytes = SMEM_BYTES;
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
  if (cudaLaunchKernelEx(&cfg, kernel, e->a, e->b, e->c, prm) != cudaSuccess) return CROQ_LAUNCH_FAILED;
#if CROQ_TRACE
  trace_print<<<1, 1, 0, stream>>>(static_cast<int>(cfg.gridDim.x));
#endif
  if (pl.pad_c) {
    if (!launch_copy(c_use, ldc * out_bytes / 2, c, p->ldc * out_bytes / 2, p->m, p->n * out_bytes / 2, stream))
      return CROQ_LAUNCH_FAILED;
  }
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}

inline int dtype_bit(const croq_matmul_problem* p) {
  if (p->a_type != p->b_type) return 0;
  if (p->a_type == CROQ_F16 && p->c_type == CROQ_F32) return 1;
  if (p->a_type == CROQ_F16 && p->c_type == CROQ_F16) return 2;
  if (p->a_type == CROQ_BF16 && p->c_type == CROQ_F32) return 4;
  if (p->a_type == CROQ_BF16 && p->c_type == CROQ_BF16) return 8;
  if (p->a_type == CROQ_E4M3 && p->c_type == CROQ_F16) return 16;
  if (p->a_type == CROQ_E4M3 && p->c_type == CROQ_BF16) return 32;
  return 0;
}

}  // namespace
}  // namespace croq_hopper

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                    void* workspace, size_t workspace_bytes, void* stream_ptr) {
  using namespace croq_hopper;
  if (p == nullptr || p->abi_version != CROQ_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (p->m <= 0 || p->n <= 0 || p->k <= 0 || p->m > (1LL << 30) || p->n > (1LL << 30) || p->k > (1LL << 30))
    return CROQ_UNSUPPORTED;
  const long long b_cols = p->b_layout == CROQ_ROW_MAJOR ? p->n : p->k;
  if (p->lda < p->k || p->ldb < b_cols || p->ldc < p->n) return CROQ_INVALID_ARGUMENT;
  if (p->compute_type != CROQ_F32) return CROQ_UNSUPPORTED;
  const int dt = dtype_bit(p);
  const int lay = p->b_layout == CROQ_ROW_MAJOR ? 1 : p->b_layout == CROQ_COL_MAJOR ? 2 : 0;
  if (dt == 0 || lay == 0 || !(CROQ_DTYPES & dt) || !(CROQ_BLAYOUTS & lay)) return CROQ_UNSUPPORTED;
  cudaStream_t s = static_cast<cudaStream_t>(stream_ptr);
#define CROQ_CASE(BIT, TI, TO)                                                                                    \
  if (dt == BIT) {                                                                                                \
    if constexpr ((CROQ_DTYPES & BIT) != 0) {                                                                     \
      if (lay == 1) {                                                                                             \
        if constexpr ((CROQ_BLAYOUTS & 1) != 0) return run<TI, TO, false>(p, a, b, c, workspace, workspace_bytes, s); \
      } else {                                                                                                    \
        if constexpr ((CROQ_BLAYOUTS & 2) != 0) return run<TI, TO, true>(p, a, b, c, workspace, workspace_bytes, s);  \
      }                                                                                                           \
    }                                                                                                             \
  }
  CROQ_CASE(1, __half, float)
  CROQ_CASE(2, __half, __half)
  CROQ_CASE(4, __nv_bfloat16, float)
  CROQ_CASE(8, __nv_bfloat16, __nv_bfloat16)
  CROQ_CASE(16, __nv_fp8_e4m3, __half)
  CROQ_CASE(32, __nv_fp8_e4m3, __nv_bfloat16)
#undef CROQ_CASE
  return CROQ_UNSUPPORTED;
}

#if CROQ_ELEM_BYTES == 1
// Kernel ABI v2 (e4m3 carries per-tensor scales): the same kernel, the scales applied in the epilogue.
namespace croq_hopper {
namespace {
inline croq_matmul_problem v1_problem(const croq_gemm_desc* d) {
  croq_matmul_problem p{};
  p.abi_version = CROQ_ABI_VERSION;
  p.m = d->m;
  p.n = d->n;
  p.k = d->k;
  p.a_type = d->a_type;
  p.b_type = d->b_type;
  p.c_type = d->c_type;
  p.compute_type = d->compute_type;
  p.b_layout = d->b_layout;
  p.lda = d->lda;
  p.ldb = d->ldb;
  p.ldc = d->ldc;
  return p;
}
}  // namespace
}  // namespace croq_hopper

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* stream_ptr) {
  using namespace croq_hopper;
  if (d == nullptr || o == nullptr || d->abi_version != CROQ_GEMM_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (BLOCKSCALE) {
    // Built for the block-scaled operator: A per 1 x 128, B per 128 x 128 (N x K), bf16 out.
    if (d->op != CROQ_OP_MATMUL_BLOCKSCALED || d->scale_mode != CROQ_SCALE_BLOCK || d->scale_block_m != 1 ||
        d->scale_block_n != 128 || d->scale_block_k != 128)
      return CROQ_UNSUPPORTED;
  } else if (d->op != CROQ_OP_MATMUL || d->scale_mode != CROQ_SCALE_TENSOR) {
    return CROQ_UNSUPPORTED;
  }
  if (o->a_scale == nullptr || o->b_scale == nullptr) return CROQ_INVALID_ARGUMENT;
  const croq_matmul_problem p = v1_problem(d);
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.m > (1LL << 30) || p.n > (1LL << 30) || p.k > (1LL << 30))
    return CROQ_UNSUPPORTED;
  if (p.b_layout != CROQ_COL_MAJOR || p.compute_type != CROQ_F32) return CROQ_UNSUPPORTED;
  if (p.lda < p.k || p.ldb < p.k || p.ldc < p.n) return CROQ_INVALID_ARGUMENT;
  const int dt = dtype_bit(&p);
  if (dt == 0 || !(CROQ_DTYPES & dt)) return CROQ_UNSUPPORTED;
  cudaStream_t s = static_cast<cudaStream_t>(stream_ptr);
  if (dt == 16) {
    if constexpr ((CROQ_DTYPES & 16) != 0)
      return run<__nv_fp8_e4m3, __half, true>(&p, o->a, o->b, o->c, o->workspace, o->workspace_bytes, s, o->a_scale,
                                              o->b_scale);
  } else if (dt == 32) {
    if constexpr ((CROQ_DTYPES & 32) != 0)
      return run<__nv_fp8_e4m3, __nv_bfloat16, true>(&p, o->a, o->b, o->c, o->workspace, o->workspace_bytes, s,
                                                     o->a_scale, o->b_scale);
  }
  return CROQ_UNSUPPORTED;
}
#endif

CROQ_EXPORT size_t croq_matmul_workspace_bytes(const croq_matmul_problem* p) {
  // The workspace depends on the pointers' alignment, which is unknown here: size it for the
  // worst case of the leading dimensions (an unaligned pointer with aligned strides is padded too).
  if (p == nullptr) return 0;
  const int out_bytes = p->c_type == CROQ_F32 ? 4 : 2;
  const long long b_rows = p->b_layout == CROQ_ROW_MAJOR ? p->k : p->n;
  const long long b_cols = p->b_layout == CROQ_ROW_MAJOR ? p->n : p->k;
  using croq_hopper::round_up;
  size_t bytes = round_up(static_cast<size_t>(p->m) * round_up(p->k, 8) * 2, 256) +
                 round_up(static_cast<size_t>(b_rows) * round_up(b_cols, 8) * 2, 256) +
                 round_up(static_cast<size_t>(p->m) * round_up(p->n, 8) * out_bytes, 256);
  // Aligned leading dimensions (the common case) need no copies when the pointers are aligned too;
  // croq's harness allocates with cudaMalloc (256-byte aligned), so only unaligned strides count.
  const bool a_ok = (p->lda * 2) % 16 == 0, b_ok = (p->ldb * 2) % 16 == 0, c_ok = (p->ldc * out_bytes) % 16 == 0;
  if (a_ok && b_ok && c_ok) bytes = 0;
  // Split-K partial sums and flags, in front of the copies.
  if (p->m > 0 && p->n > 0 && p->k > 0) {
    const croq_hopper::Grid g = croq_hopper::make_grid(p);
    bytes += croq_hopper::split_partial_bytes(g) + croq_hopper::split_flag_bytes(g);
  }
  return bytes;
}

#if CROQ_ELEM_BYTES == 1
CROQ_EXPORT size_t croq_gemm_workspace_bytes(const croq_gemm_desc* d) {
  if (d == nullptr) return 0;
  const croq_matmul_problem p = croq_hopper::v1_problem(d);
  return croq_matmul_workspace_bytes(&p);
}
#endif

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\":\"hopper_gemm\",\"params\":{\"BM\":" CROQ_STR(CROQ_BM) ",\"BN\":" CROQ_STR(
      CROQ_BN) ",\"BK\":" CROQ_STR(CROQ_BK) ",\"STAGES\":" CROQ_STR(CROQ_STAGES) ",\"CONSUMERS\":" CROQ_STR(CROQ_CONSUMERS) ",\"PINGPONG\":" CROQ_STR(CROQ_PINGPONG) ",\"PERSISTENT\":" CROQ_STR(CROQ_PERSISTENT) ",\"RASTER\":" CROQ_STR(CROQ_RASTER) ",\"GROUP\":" CROQ_STR(CROQ_GROUP) ",\"CLUSTER_M\":" CROQ_STR(CROQ_CLUSTER_M) ",\"CLUSTER_N\":" CROQ_STR(CROQ_CLUSTER_N) ",\"EPILOGUE\":" CROQ_STR(CROQ_EPILOGUE) ",\"SWIZZLE\":" CROQ_STR(CROQ_SWIZZLE) ",\"MMA_DEPTH\":" CROQ_STR(CROQ_MMA_DEPTH) ",\"PROMOTE\":" CROQ_STR(CROQ_PROMOTE) ",\"PROMOTE_EVERY\":" CROQ_STR(CROQ_PROMOTE_EVERY) ",\"SPLIT_K\":" CROQ_STR(CROQ_SPLIT_K) ",\"STREAM_K\":" CROQ_STR(CROQ_STREAM_K) ",\"DTYPES\":" CROQ_STR(CROQ_DTYPES) ",\"ELEM_BYTES\":" CROQ_STR(CROQ_ELEM_BYTES) ",\"BLAYOUTS\":" CROQ_STR(CROQ_BLAYOUTS) "}}";
}
