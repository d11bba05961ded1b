/*
 * ctlreq.c - see ctlreq.h.
 */
#include "sys/ctlreq.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* The word at [w, w+n) is `lit`. */
static bool word_is(const char *w, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(w, lit, n) == 0;
}

/* A word shown in an error: printable ASCII only, and short. */
static void word_show(char *out, size_t cap, const char *w, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < n && k + 1 < cap && i < 32; i++)
        out[k++] = w[i] >= 0x20 && w[i] < 0x7f ? w[i] : '?';
    out[k] = '\0';
}

static int bad(struct ctlreq *req, const char *what, const char *w, size_t n)
{
    char shown[40];

    word_show(shown, sizeof(shown), w, n);
    snprintf(req->err, sizeof(req->err), "%s '%s'", what, shown);
    return -EINVAL;
}

static int parse_line(const char *p, size_t n, struct ctlreq *req)
{
    size_t i = 0, nwords = 0;
    bool want_width = false;

    while (i < n) {
        size_t start;

        while (i < n && is_space(p[i]))
            i++;
        if (i == n)
            break;
        start = i;
        while (i < n && !is_space(p[i]))
            i++;
        const char *w = p + start;
        size_t wn = i - start;

        if (nwords++ == 0) {
            if (!word_is(w, wn, "status"))
                return bad(req, "unknown request", w, wn);
            req->verb = CTLREQ_STATUS;
        } else if (word_is(w, wn, "json")) {
            req->json = true;
        } else if (word_is(w, wn, "worst")) {
            req->worst = true;
        } else if (word_is(w, wn, "width") && !want_width) {
            want_width = true;
        } else if (want_width && !req->width) {
            size_t v = 0;

            for (size_t k = 0; k < wn && v <= CTLREQ_MAX_WIDTH; k++)
                v = w[k] >= '0' && w[k] <= '9' ? v * 10 + (size_t)(w[k] - '0')
                                               : CTLREQ_MAX_WIDTH + 1;
            if (v < CTLREQ_MIN_WIDTH || v > CTLREQ_MAX_WIDTH)
                return bad(req, "width out of range", w, wn);
            req->width = v;
        } else {
            return bad(req, "unknown option", w, wn);
        }
    }
    if (nwords == 0) {
        snprintf(req->err, sizeof(req->err), "empty request");
        return -EINVAL;
    }
    if (want_width && !req->width) {
        snprintf(req->err, sizeof(req->err), "width without a number");
        return -EINVAL;
    }
    return 0;
}

int ctlreq_parse(const char *buf, size_t len, struct ctlreq *req)
{
    const char *nl = memchr(buf, '\n', len < CTLREQ_MAX ? len : CTLREQ_MAX);
    size_t n;
    int rc;

    *req = (struct ctlreq){0};
    if (!nl)
        return len < CTLREQ_MAX ? -EAGAIN : -E2BIG;
    n = (size_t)(nl - buf);
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] < 0x20 && buf[i] != '\t') {
            snprintf(req->err, sizeof(req->err),
                     "a control character in the request");
            return -EINVAL;
        }
    rc = parse_line(buf, n, req);
    return rc ? rc : (int)(nl - buf) + 1;
}
