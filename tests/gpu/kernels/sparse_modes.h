/* The 2:4 sparse test candidates' modes (sparse_kernels.cu explains each). */
#ifndef CROQ_SPARSE_TEST_MODES_H
#define CROQ_SPARSE_TEST_MODES_H
enum {
  SK_OK = 0,
  SK_PREPARED,
  SK_DENSE,
  SK_FIXED_PATTERN,
  SK_SWAPPED_NIBBLES,
  SK_MAGNITUDE,
  SK_PREPARE_ONCE
};
#endif
