/* loader.c - model_load's work: parse a serialized model into per-layer
 * weight blocks on the heap (bias first so it stays 4-aligned, then int8
 * weights).
 *
 * Two paths, the difference of seed case 4.1:
 *  - chunked (default): a LOAD_CHUNK staging buffer is refilled from flash
 *    and the parser copies straight into the weight blocks; load overhead is
 *    the weights plus one chunk.
 *  - compressed (load-peak): the whole compressed file is read into RAM, then
 *    inflated into a second buffer, then parsed into the weight blocks; all
 *    three zones are live at the peak. */
#include <string.h>

#include "engine.h"
#include "mem.h"
#include "rle.h"
#include "scenario.h"

#define LOAD_CHUNK  1024u
#define MODEL_MAGIC 0x574B4C4Du /* "MLKW" */
#define HDR_LEN     16u
#define REC_LEN     20u

typedef struct {
    uint16_t layer;
    uint8_t layout;
    uint32_t w_len, b_len;
    int32_t mult, shift;
} layer_rec_t;

/* A byte source: flash through a chunk buffer, or a RAM buffer directly. */
typedef struct {
    const uint8_t *src;
    uint32_t len, pos;
    uint8_t *chunk; /* NULL: read src directly */
    uint32_t fill, cpos;
} reader_t;

/* Stands in for an SPI-flash / file-system read; noinline so a debugger sees
 * each chunk fetch. */
__attribute__((noinline)) static void flash_read(uint8_t *dst, const uint8_t *src, uint32_t n)
{
    memcpy(dst, src, n);
}

static int rd(reader_t *r, void *dst, uint32_t n)
{
    uint8_t *d = dst;

    if (r->chunk == NULL) {
        if (n > r->len - r->pos) {
            return -1;
        }
        memcpy(d, r->src + r->pos, n);
        r->pos += n;
        return 0;
    }
    while (n > 0u) {
        if (r->cpos == r->fill) {
            uint32_t m = r->len - r->pos;
            if (m == 0u) {
                return -1;
            }
            m = m < LOAD_CHUNK ? m : LOAD_CHUNK;
            flash_read(r->chunk, r->src + r->pos, m);
            r->pos += m;
            r->fill = m;
            r->cpos = 0;
        }
        uint32_t m = r->fill - r->cpos;
        m = m < n ? m : n;
        memcpy(d, r->chunk + r->cpos, m);
        r->cpos += m;
        d += m;
        n -= m;
    }
    return 0;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* ---- fragmentation scenario: long-lived records ------------------------- */

typedef struct {
    const char *what; /* "weights" manifest or "result" */
    uint32_t a, b;
    uint32_t seq;
} frag_record_t;

#define MAX_FRAG_RECORDS 32
/* Kept from one lifecycle to the next (freed at the next model_load): these
 * small blocks pin the holes between the weight blocks after release. */
frag_record_t *g_frag_records[MAX_FRAG_RECORDS];
uint32_t g_frag_record_count;

#if SCEN_DEFERRED_RELEASE
/* deferred-release: the last cycle's summary, kept by model_release and freed
 * by the next model_load (a global only here: one more in every build would
 * move the other builds' heaps). */
void *g_release_summary;
#endif

void frag_records_free(void)
{
    for (uint32_t i = 0; i < g_frag_record_count; i++) {
        mem_free(g_frag_records[i]);
        g_frag_records[i] = NULL;
    }
    g_frag_record_count = 0;
#if SCEN_DEFERRED_RELEASE
    mem_free(g_release_summary); /* the previous cycle's: a late free */
    g_release_summary = NULL;
#endif
}

void release_summary_keep(const engine_t *e)
{
#if SCEN_DEFERRED_RELEASE
    /* For the next cycle to look at (and free): output CRC, inference count. */
    uint32_t *summary = mem_alloc(64u, "release:summary");
    memset(summary, 0, 64u);
    summary[0] = e->output_crc;
    summary[1] = e->inferences;
    g_release_summary = summary;
#else
    (void)e;
#endif
}

void frag_record_add(const char *what, uint32_t a, uint32_t b, uint32_t payload)
{
    if (!SCEN_FRAGMENTATION || g_frag_record_count >= MAX_FRAG_RECORDS) {
        return;
    }
    /* payload: a per-layer result log follows the record (inference only). */
    frag_record_t *r = mem_alloc(sizeof(*r) + payload, "frag:record");
    memset(r + 1, 0, payload);
    r->what = what;
    r->a = a;
    r->b = b;
    r->seq = g_frag_record_count;
    g_frag_records[g_frag_record_count++] = r;
}

/* ---- parser ------------------------------------------------------------- */

uint32_t layer_weight_len(int layer); /* ops.c */
uint32_t layer_out_channels(int layer);

static int parse_model(engine_t *e, reader_t *r, uint32_t expect_len)
{
    uint8_t hdr[HDR_LEN], raw[REC_LEN];
    layer_rec_t recs[N_LAYERS];
    uint32_t n;

    if (rd(r, hdr, HDR_LEN) != 0 || le32(hdr) != MODEL_MAGIC || le32(&hdr[8]) != expect_len) {
        return -1;
    }
    n = (uint32_t)hdr[6] | ((uint32_t)hdr[7] << 8);
    if (n == 0u || n > N_LAYERS) {
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (rd(r, raw, REC_LEN) != 0) {
            return -1;
        }
        recs[i].layer = (uint16_t)(raw[0] | (raw[1] << 8));
        recs[i].layout = raw[2];
        recs[i].w_len = le32(&raw[4]);
        recs[i].b_len = le32(&raw[8]);
        recs[i].mult = (int32_t)le32(&raw[12]);
        recs[i].shift = (int32_t)le32(&raw[16]);
        /* The graph is fixed; a model whose sizes disagree is rejected
         * before anything is allocated. */
        if (recs[i].layer >= N_LAYERS || recs[i].w_len != layer_weight_len(recs[i].layer) ||
            recs[i].b_len != 4u * layer_out_channels(recs[i].layer) || recs[i].w_len == 0u ||
            recs[i].shift < 1 || recs[i].shift > 62 || recs[i].layout > 1u) {
            return -1;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        const layer_rec_t *lr = &recs[i];
        uint32_t size = lr->b_len + lr->w_len;
        uint8_t pad[4];
        uint8_t *blk = mem_try_alloc(size, "load:weights");

        if (blk == NULL) return LOAD_ENOMEM; /* loader_load frees the blocks so far */
        e->weight_blocks[lr->layer] = blk;
        e->weight_block_size[lr->layer] = size;
        e->layer_mult[lr->layer] = lr->mult;
        e->layer_shift[lr->layer] = (int8_t)lr->shift;
        e->layer_layout[lr->layer] = lr->layout;
        if (rd(r, blk, size) != 0 || rd(r, pad, (0u - size) & 3u) != 0) {
            return -1;
        }
        /* fragmentation: a small manifest entry after every weight block. */
        frag_record_add("weights", lr->layer, size, 0);
    }
    return 0;
}

int loader_load(engine_t *e, const model_desc_t *m)
{
    reader_t r = {0};
    int rc;

    if (m->compressed) {
        uint8_t *file = mem_try_alloc(m->image_len, "load:file");
        if (file == NULL) return LOAD_ENOMEM;
        flash_read(file, m->image, m->image_len);
        uint8_t *inflated = mem_try_alloc(m->raw_len, "load:inflate");
        if (inflated == NULL) {
            mem_free(file);
            return LOAD_ENOMEM;
        }
        rc = rle_decode(file, m->image_len, inflated, m->raw_len) == (int32_t)m->raw_len ? 0 : -1;
        if (rc == 0) {
            r.src = inflated;
            r.len = m->raw_len;
            rc = parse_model(e, &r, m->raw_len);
        }
        mem_free(inflated);
        mem_free(file);
    } else {
        r.src = m->image;
        r.len = m->image_len;
        r.chunk = mem_try_alloc(LOAD_CHUNK, "load:chunk");
        if (r.chunk == NULL) return LOAD_ENOMEM;
        rc = parse_model(e, &r, m->raw_len);
        mem_free(r.chunk);
    }
    if (rc != 0) {
        loader_unload(e);
        return rc;
    }
    e->model = m;
    e->model_name = m->name;
    return 0;
}

void loader_unload(engine_t *e)
{
    for (int i = 0; i < N_LAYERS; i++) {
        mem_free(e->weight_blocks[i]);
        e->weight_blocks[i] = NULL;
        e->weight_block_size[i] = 0;
    }
    e->model = NULL;
    e->model_name = NULL;
}
