/*
 * upper.c - the uppercase transform: ASCII a-z to A-Z.
 *
 * A chunk that holds the only reference to its pool buffer is converted
 * where it lies and passed on, which costs one pass over the bytes and no
 * buffer. A shared chunk (a tee's, or bytes outside any pool) must not
 * change under its other readers, so it is converted while being copied
 * into pool buffers, still one pass.
 */
#include <string.h>

#include "xform_impl.h"

typedef uint8_t xf_v32 __attribute__((vector_size(32)));

/* v - 'a' wraps below 'a', so one unsigned compare tests a-z; the compare
 * gives all-ones lanes, of which 0x20 is the case bit. A macro, not a
 * function: a 32-byte vector passed by value changes the ABI between the
 * AVX2 and baseline builds. */
#define XF_UPPER_V(v) ((v) ^ ((xf_v32)((xf_v32)((v) - 'a') < 26) & 0x20))

/* The loop, inlined into each of the two builds below. */
static inline __attribute__((always_inline)) void
xf_upper_body(uint8_t *dst, const uint8_t *src, size_t n)
{
    size_t i = 0;

    for (; i + 64 <= n; i += 64) {
        xf_v32 a, b;

        memcpy(&a, src + i, 32);
        memcpy(&b, src + i + 32, 32);
        a = XF_UPPER_V(a);
        b = XF_UPPER_V(b);
        memcpy(dst + i, &a, 32);
        memcpy(dst + i + 32, &b, 32);
    }
    for (; i < n; i++) {
        uint8_t c = src[i];

        dst[i] = (uint8_t)(c - 'a') < 26 ? c ^ 0x20 : c;
    }
}

__attribute__((target("avx2"))) static void
xf_upper_avx2(uint8_t *dst, const uint8_t *src, size_t n)
{
    xf_upper_body(dst, src, n);
}

/* The baseline: x86-64's SSE2, two 16-byte halves per vector. */
static void xf_upper_base(uint8_t *dst, const uint8_t *src, size_t n)
{
    xf_upper_body(dst, src, n);
}

/* Picked per call rather than by an ifunc (target_clones): an ifunc
 * resolver runs before the sanitizers' runtimes are up and crashes
 * instrumented builds. The test is one load of libgcc's CPU model. */
void weir__xf_upper(uint8_t *dst, const uint8_t *src, size_t n)
{
    if (__builtin_cpu_supports("avx2"))
        xf_upper_avx2(dst, src, n);
    else
        xf_upper_base(dst, src, n);
}

/* The chunk holds the only reference to a pool buffer. */
static bool xf_unshared(const struct weir_chunk *c)
{
    /* Acquire pairs with the release half of weir_buf_unref's decrement
     * by a holder that just let go: its reads of the bytes happen before
     * we write them. */
    return c->buf &&
           atomic_load_explicit(&c->buf->refs, memory_order_acquire) == 1;
}

static int upper_step(struct weir_xform *x)
{
    if (x->in_off == 0 && x->in.len && xf_unshared(&x->in)) {
        x->has_in = false;
        weir__xf_upper(x->in.data, x->in.data, x->in.len);
        x->st.in_bytes += x->in.len;
        return weir__xf_out_pass(x, x->in);
    }
    while (xf_in_left(x)) {
        uint8_t *p;
        uint32_t avail, n = xf_in_left(x);
        int rc = weir__xf_out_space(x, &p, &avail);

        if (rc)
            return rc;
        if (n > avail)
            n = avail;
        weir__xf_upper(p, xf_in_ptr(x), n);
        x->in_off += n;
        x->st.in_bytes += n;
        rc = weir__xf_out_commit(x, n);
        if (rc)
            return rc;
    }
    return weir__xf_out_emit(x);
}

static int upper_finish(struct weir_xform *x)
{
    return weir__xf_out_emit(x);
}

const struct xf_kind weir__xf_uppercase = {
    .name = "uppercase",
    .step = upper_step,
    .finish = upper_finish,
};
