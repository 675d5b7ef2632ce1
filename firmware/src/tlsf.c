/* tlsf.c - two-level segregated fit allocator, written from the layout facts
 * in docs/allocators/esp-idf-tlsf.md (ESP-IDF's TLSF), not from any TLSF source.
 *
 * Free blocks are kept in lists indexed by (fl, sl): fl = the power of two
 * below the size, sl = which of sl_index_count equal slices of that power the
 * size falls in; sizes below small_block_size all share fl 0 in slices of the
 * word size. Two bitmaps say which lists are non-empty, so a search is two
 * find-first-set operations. Physically adjacent free blocks are always
 * merged, so a free block's neighbours are used blocks (or the sentinel). */
#include "tlsf.h"

#include <stdint.h>

#include "tlsf_control.h"

#include <string.h>

#define BLOCK_FLAGS (TLSF_BLOCK_FREE_BIT | TLSF_BLOCK_PREV_FREE_BIT)
/* A block can be split if the rest is a whole minimal block. */
#define BLOCK_SPLIT_MIN sizeof(block_header_t)

/* ---- geometry: the same questions for both control layouts ---- */

#ifdef TLSF_FIXED_CONTROL
static unsigned fl_count(const control_t *c) { (void)c; return FL_INDEX_COUNT; }
static unsigned sl_count(const control_t *c) { (void)c; return SL_INDEX_COUNT; }
static unsigned sl_log2(const control_t *c) { (void)c; return SL_INDEX_COUNT_LOG2; }
static unsigned fl_shift(const control_t *c) { (void)c; return FL_INDEX_SHIFT; }
static size_t small_size(const control_t *c) { (void)c; return SMALL_BLOCK_SIZE; }
static block_header_t **list_head(control_t *c, unsigned fl, unsigned sl)
{
    return &c->blocks[fl][sl];
}
#else
static unsigned fl_count(const control_t *c) { return c->fl_index_count; }
static unsigned sl_count(const control_t *c) { return c->sl_index_count; }
static unsigned sl_log2(const control_t *c) { return c->sl_index_count_log2; }
static unsigned fl_shift(const control_t *c) { return c->fl_index_shift; }
static size_t small_size(const control_t *c) { return c->small_block_size; }
static block_header_t **list_head(control_t *c, unsigned fl, unsigned sl)
{
    return &c->blocks[fl * c->sl_index_count + sl];
}
#endif

/* Index of the highest set bit; x != 0. */
static unsigned fls_size(size_t x)
{
    return (unsigned)(sizeof(unsigned long) * 8u - 1u) - (unsigned)__builtin_clzl((unsigned long)x);
}

/* Index of the lowest set bit; x != 0. */
static unsigned ffs_bits(unsigned x)
{
    return (unsigned)__builtin_ctz(x);
}

/* The list a free block of `size` payload bytes belongs to. */
static void mapping_insert(const control_t *c, size_t size, unsigned *fl, unsigned *sl)
{
    if (size < small_size(c)) {
        *fl = 0;
        *sl = (unsigned)(size / (small_size(c) / sl_count(c)));
    } else {
        unsigned t = fls_size(size);
        *sl = (unsigned)(size >> (t - sl_log2(c))) ^ (1u << sl_log2(c));
        *fl = t - (fl_shift(c) - 1u);
    }
}

/* The first list whose every block can hold `size`: round the request up to
 * the next list boundary, then map it. */
static void mapping_search(const control_t *c, size_t size, unsigned *fl, unsigned *sl)
{
    if (size >= small_size(c)) {
        size += ((size_t)1 << (fls_size(size) - sl_log2(c))) - 1u;
    }
    mapping_insert(c, size, fl, sl);
}

/* ---- blocks ---- */

static size_t block_size(const block_header_t *b)
{
    return b->size & ~BLOCK_FLAGS;
}

/* The next block's header "starts" one word before its size word, which is
 * right after this block's payload. */
static block_header_t *block_next(const block_header_t *b)
{
    return (block_header_t *)((uintptr_t)b + TLSF_BLOCK_OVERHEAD + block_size(b));
}

static block_header_t *block_from_ptr(void *ptr)
{
    return (block_header_t *)((uintptr_t)ptr - TLSF_BLOCK_START_OFFSET);
}

static void *block_to_ptr(block_header_t *b)
{
    return (void *)((uintptr_t)b + TLSF_BLOCK_START_OFFSET);
}

/* ---- free lists ---- */

static void insert_free(control_t *c, block_header_t *b)
{
    unsigned fl, sl;
    mapping_insert(c, block_size(b), &fl, &sl);
    block_header_t **head = list_head(c, fl, sl);
    b->next_free = *head;
    b->prev_free = &c->block_null;
    if (*head != &c->block_null) {
        (*head)->prev_free = b;
    }
    *head = b;
    c->fl_bitmap |= 1u << fl;
    c->sl_bitmap[fl] |= 1u << sl;
}

/* block_null's own links are never written: they keep pointing at itself. */
static void remove_free(control_t *c, block_header_t *b)
{
    unsigned fl, sl;
    mapping_insert(c, block_size(b), &fl, &sl);
    block_header_t *prev = b->prev_free, *next = b->next_free;
    if (next != &c->block_null) {
        next->prev_free = prev;
    }
    if (prev != &c->block_null) {
        prev->next_free = next;
    }
    block_header_t **head = list_head(c, fl, sl);
    if (*head == b) {
        *head = next;
        if (next == &c->block_null) {
            c->sl_bitmap[fl] &= ~(1u << sl);
            if (c->sl_bitmap[fl] == 0u) {
                c->fl_bitmap &= ~(1u << fl);
            }
        }
    }
}

/* Head of the first non-empty list at or after (fl, sl), NULL if none. */
static block_header_t *search_suitable(control_t *c, unsigned fl, unsigned sl)
{
    unsigned sl_map = c->sl_bitmap[fl] & (~0u << sl);
    if (sl_map == 0u) {
        unsigned fl_map = fl + 1u < 32u ? c->fl_bitmap & (~0u << (fl + 1u)) : 0u;
        if (fl_map == 0u) {
            return NULL;
        }
        fl = ffs_bits(fl_map);
        sl_map = c->sl_bitmap[fl];
    }
    return *list_head(c, fl, ffs_bits(sl_map));
}

/* ---- control construction ---- */

#ifdef TLSF_FIXED_CONTROL
static size_t control_bytes(size_t bytes)
{
    /* Every block must map below FL_INDEX_COUNT. */
    return bytes < ((size_t)1 << FL_INDEX_MAX) ? sizeof(control_t) : 0u;
}

static void control_construct(control_t *c, size_t bytes)
{
    (void)bytes;
    for (unsigned fl = 0; fl < FL_INDEX_COUNT; fl++) {
        c->sl_bitmap[fl] = 0u;
    }
}
#else
struct geometry {
    unsigned fl_max, sl_log2, fl_shift, fl_count;
    size_t size;
};

/* The geometry ESP-IDF derives from the region size (docs/allocators/esp-idf-tlsf.md):
 * more second-level lists for larger regions, fl up to the region's bit. */
static struct geometry geometry_for(size_t bytes)
{
    struct geometry g = {0u, 0u, 0u, 0u, 0u};
    if (bytes == 0u) {
        return g;
    }
    g.fl_max = fls_size(bytes) + 1u;
    g.sl_log2 = bytes <= 16u * 1024u ? 3u : bytes <= 256u * 1024u ? 4u : 5u;
    g.fl_shift = g.sl_log2 + TLSF_ALIGN_SIZE_LOG2;
    if (g.fl_max < g.fl_shift || g.fl_max - g.fl_shift + 1u > 31u) {
        return g; /* too small for one list, or beyond the 5-bit field */
    }
    g.fl_count = g.fl_max - g.fl_shift + 1u;
    size_t arrays = sizeof(control_t) + g.fl_count * sizeof(unsigned int);
    arrays = (arrays + sizeof(void *) - 1u) & ~(sizeof(void *) - 1u);
    g.size = arrays + g.fl_count * ((size_t)1 << g.sl_log2) * sizeof(block_header_t *);
    return g;
}

static size_t control_bytes(size_t bytes)
{
    return geometry_for(bytes).size;
}

static void control_construct(control_t *c, size_t bytes)
{
    struct geometry g = geometry_for(bytes);
    c->fl_index_max = g.fl_max;
    c->sl_index_count_log2 = g.sl_log2;
    c->sl_index_count = 1u << g.sl_log2;
    c->fl_index_shift = g.fl_shift;
    c->fl_index_count = g.fl_count;
    c->small_block_size = 1u << g.fl_shift;
    c->size = g.size;
    c->sl_bitmap = (unsigned int *)(c + 1);
    uintptr_t blocks = (uintptr_t)(c->sl_bitmap + g.fl_count);
    blocks = (blocks + sizeof(void *) - 1u) & ~(uintptr_t)(sizeof(void *) - 1u);
    c->blocks = (block_header_t **)blocks;
    for (unsigned fl = 0; fl < g.fl_count; fl++) {
        c->sl_bitmap[fl] = 0u;
    }
}
#endif

/* ---- public API ---- */

size_t tlsf_alloc_overhead(void)
{
    return TLSF_BLOCK_OVERHEAD;
}

size_t tlsf_pool_overhead(void)
{
    return TLSF_POOL_OVERHEAD;
}

size_t tlsf_size(tlsf_t tlsf)
{
#ifdef TLSF_FIXED_CONTROL
    (void)tlsf;
    return sizeof(control_t);
#else
    return tlsf != NULL ? ((const control_t *)tlsf)->size : 0u;
#endif
}

void *tlsf_get_pool(tlsf_t tlsf)
{
    return (void *)((uintptr_t)tlsf + tlsf_size(tlsf));
}

#ifdef TLSF_FREE_FILL
/* Comprehensive poisoning: every byte of a free block's payload that TLSF
 * does not use itself holds TLSF_FREE_FILL, i.e. all but the first two words
 * (next_free, prev_free) and the last word (the next block's
 * prev_phys_block). Called on every block that becomes free, after merging,
 * so stale headers of merged neighbours are overwritten too. */
static void fill_free(block_header_t *b)
{
    size_t size = block_size(b);
    size_t skip = 2u * sizeof(block_header_t *), tail = sizeof(block_header_t *);
    if (size > skip + tail) {
        memset((uint8_t *)block_to_ptr(b) + skip, TLSF_FREE_FILL, size - skip - tail);
    }
}
#else
static inline void fill_free(block_header_t *b) { (void)b; }
#endif

tlsf_t tlsf_create_with_pool(void *mem, size_t bytes)
{
    size_t cbytes = control_bytes(bytes);
    if (mem == NULL || (uintptr_t)mem % TLSF_ALIGN_SIZE != 0u || cbytes == 0u ||
        bytes < cbytes + TLSF_POOL_OVERHEAD + TLSF_BLOCK_SIZE_MIN) {
        return NULL;
    }
    control_t *c = mem;
    c->block_null.prev_phys_block = NULL;
    c->block_null.size = 0u;
    c->block_null.next_free = &c->block_null;
    c->block_null.prev_free = &c->block_null;
    c->fl_bitmap = 0u;
    control_construct(c, bytes);
    for (unsigned fl = 0; fl < fl_count(c); fl++) {
        for (unsigned sl = 0; sl < sl_count(c); sl++) {
            *list_head(c, fl, sl) = &c->block_null;
        }
    }

    /* The pool: one free block whose (never read) prev_phys_block word lies
     * just before the pool, then a used zero-size sentinel in the last word. */
    uintptr_t pool = (uintptr_t)mem + cbytes;
    size_t first = (bytes - cbytes - TLSF_POOL_OVERHEAD) & ~(TLSF_ALIGN_SIZE - 1u);
    block_header_t *b = (block_header_t *)(pool - offsetof(block_header_t, size));
    b->size = first | TLSF_BLOCK_FREE_BIT;
    insert_free(c, b);
    block_header_t *sentinel = block_next(b);
    sentinel->prev_phys_block = b;
    sentinel->size = TLSF_BLOCK_PREV_FREE_BIT;
    fill_free(b);
    return c;
}

void *tlsf_malloc(tlsf_t tlsf, size_t size)
{
    control_t *c = tlsf;
    if (c == NULL || size == 0u || size > SIZE_MAX / 2u) {
        return NULL;
    }
    size_t n = (size + TLSF_ALIGN_SIZE - 1u) & ~(TLSF_ALIGN_SIZE - 1u);
    if (n < TLSF_BLOCK_SIZE_MIN) {
        n = TLSF_BLOCK_SIZE_MIN;
    }
    unsigned fl, sl;
    mapping_search(c, n, &fl, &sl);
    if (fl >= fl_count(c)) {
        return NULL;
    }
    block_header_t *b = search_suitable(c, fl, sl);
    if (b == NULL) {
        return NULL;
    }
    remove_free(c, b);

    size_t have = block_size(b);
    if (have >= n + BLOCK_SPLIT_MIN) {
        /* The tail becomes a free block; its prev (b) will be used. */
        block_header_t *rest = (block_header_t *)((uintptr_t)b + TLSF_BLOCK_OVERHEAD + n);
        rest->size = (have - n - TLSF_BLOCK_OVERHEAD) | TLSF_BLOCK_FREE_BIT;
        b->size = n | (b->size & BLOCK_FLAGS);
        block_next(rest)->prev_phys_block = rest;
        insert_free(c, rest);
    } else {
        block_next(b)->size &= ~TLSF_BLOCK_PREV_FREE_BIT;
    }
    b->size &= ~TLSF_BLOCK_FREE_BIT;
    return block_to_ptr(b);
}

bool tlsf_free(tlsf_t tlsf, void *ptr)
{
    control_t *c = tlsf;
    if (c == NULL || ptr == NULL) {
        return false;
    }
    block_header_t *b = block_from_ptr(ptr);
    if (b->size & TLSF_BLOCK_FREE_BIT) {
        return false; /* already free: a double free must not corrupt the lists */
    }
    b->size |= TLSF_BLOCK_FREE_BIT;
    if (b->size & TLSF_BLOCK_PREV_FREE_BIT) {
        block_header_t *prev = b->prev_phys_block;
        remove_free(c, prev);
        prev->size += TLSF_BLOCK_OVERHEAD + block_size(b);
        b = prev;
    }
    block_header_t *next = block_next(b);
    if (next->size & TLSF_BLOCK_FREE_BIT) {
        remove_free(c, next);
        b->size += TLSF_BLOCK_OVERHEAD + block_size(next);
        next = block_next(b);
    }
    next->prev_phys_block = b;
    next->size |= TLSF_BLOCK_PREV_FREE_BIT;
    insert_free(c, b);
    fill_free(b);
    return true;
}

size_t tlsf_block_size(void *ptr)
{
    return ptr != NULL ? block_size(block_from_ptr(ptr)) : 0u;
}

size_t tlsf_fit_size(tlsf_t tlsf, size_t size)
{
    const control_t *c = tlsf;
    size &= ~(TLSF_ALIGN_SIZE - 1u);
    if (c == NULL || size < small_size(c)) {
        return size; /* below small_block_size every list is exact */
    }
    size_t slice = (size_t)1 << (fls_size(size) - sl_log2(c));
    return size & ~(slice - 1u);
}

void tlsf_walk_pool(tlsf_t tlsf, tlsf_walker walker, void *user)
{
    if (tlsf == NULL || walker == NULL) {
        return;
    }
    block_header_t *b =
        (block_header_t *)((uintptr_t)tlsf_get_pool(tlsf) - offsetof(block_header_t, size));
    while (block_size(b) != 0u) {
        if (!walker(block_to_ptr(b), block_size(b), (b->size & TLSF_BLOCK_FREE_BIT) == 0u, user)) {
            return;
        }
        b = block_next(b);
    }
}
