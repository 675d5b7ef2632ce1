/* tlsf_control.h - the TLSF data layout as ESP-IDF's heap has it in target RAM.
 *
 * A debugger (memlife) walks these structures through DWARF exactly as it
 * would walk an ESP-IDF v5.x heap, so the type names, member names, member
 * order and the bit encoding below matter more than the code in tlsf.c
 * (docs/allocators/esp-idf-tlsf.md). Shared by tlsf.c and the host test.
 *
 * Two control_t layouts, chosen at build time:
 *  - default: the "dynamic" control of ESP-IDF v5.0.1+ (bitfields describe
 *    the geometry, `size` = bytes of control_t + sl_bitmap[] + blocks[], both
 *    arrays follow the struct and are reached through pointers);
 *  - -DTLSF_FIXED_CONTROL: the fixed-array control of ESP-IDF v4.3..v5.0
 *    (compile-time geometry, tlsf_size() == sizeof(control_t)). */
#ifndef TLSF_CONTROL_H
#define TLSF_CONTROL_H

#include <stddef.h>
#include <stdint.h>

/* One block. prev_phys_block is the last word of the previous block and is
 * valid only if this block's size has the prev-free bit; next_free and
 * prev_free exist only while the block is free (they are its first payload
 * words). size excludes the size word itself; bits 0 and 1 are flags. */
typedef struct block_header_t {
    struct block_header_t *prev_phys_block;
    size_t size;
    struct block_header_t *next_free;
    struct block_header_t *prev_free;
} block_header_t;

#define TLSF_BLOCK_FREE_BIT      ((size_t)1) /* this block is free */
#define TLSF_BLOCK_PREV_FREE_BIT ((size_t)2) /* the previous physical block is free */
/* Bytes of a block that are not payload: its size word. */
#define TLSF_BLOCK_OVERHEAD sizeof(size_t)
/* user pointer = block + this (8 on 32-bit) */
#define TLSF_BLOCK_START_OFFSET (offsetof(block_header_t, size) + sizeof(size_t))
/* Smallest payload: a free block must hold next_free, prev_free and the next
 * block's prev_phys_block (12 on 32-bit). */
#define TLSF_BLOCK_SIZE_MIN (sizeof(block_header_t) - sizeof(block_header_t *))
/* Sizes and addresses are multiples of the word size (4 on the target). */
#define TLSF_ALIGN_SIZE_LOG2 (sizeof(size_t) == 8 ? 3 : 2)
#define TLSF_ALIGN_SIZE      ((size_t)1 << TLSF_ALIGN_SIZE_LOG2)
/* A pool loses its first block's size word and the zero-size sentinel. */
#define TLSF_POOL_OVERHEAD (2 * TLSF_BLOCK_OVERHEAD)

#ifdef TLSF_FIXED_CONTROL
/* Fixed geometry for regions below 64 KiB (1 << FL_INDEX_MAX): 32 second-level
 * lists, first level starting at 128 B (512 B on a 64-bit host). */
enum tlsf_fixed_geometry {
    SL_INDEX_COUNT_LOG2 = 5,
    SL_INDEX_COUNT = 1 << SL_INDEX_COUNT_LOG2,
    FL_INDEX_MAX = 16,
    FL_INDEX_SHIFT = SL_INDEX_COUNT_LOG2 + (sizeof(size_t) == 8 ? 3 : 2),
    FL_INDEX_COUNT = FL_INDEX_MAX - FL_INDEX_SHIFT + 1,
    SMALL_BLOCK_SIZE = 1 << FL_INDEX_SHIFT,
};

typedef struct control_t {
    block_header_t block_null; /* every free list ends here */
    unsigned int fl_bitmap;
    unsigned int sl_bitmap[FL_INDEX_COUNT];
    block_header_t *blocks[FL_INDEX_COUNT][SL_INDEX_COUNT];
} control_t;
#else
typedef struct control_t {
    block_header_t block_null; /* every free list ends here */
    unsigned int fl_index_count : 5;
    unsigned int fl_index_shift : 3;
    unsigned int fl_index_max : 6;
    unsigned int sl_index_count : 6;
    unsigned int sl_index_count_log2 : 3;
    unsigned int small_block_size : 8;
    size_t size;            /* control_t + sl_bitmap[] + blocks[] in bytes */
    unsigned int fl_bitmap; /* bit fl set <=> sl_bitmap[fl] != 0 */
    unsigned int *sl_bitmap;  /* [fl_index_count], right after control_t */
    block_header_t **blocks;  /* [fl * sl_index_count + sl], after sl_bitmap */
} control_t;
#endif

#endif
