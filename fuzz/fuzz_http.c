/*
 * fuzz_http.c - libFuzzer target: the bytes an http-listen client sends,
 * through the request parser (http_req_parse), then its target through
 * the path mapping (http_path_map), then the answer's status and head
 * (http_reply_status, http_reply_head) for a made-up file.
 *
 * A request must be taken whole or not at all: its size inside the bytes
 * given, every span inside them. A mapped path must stay beneath the
 * root whatever the target said: relative, no ".." or "." segment, no
 * empty one, no backslash, no byte below 0x20, no dotfile unless asked
 * for. The input is copied to a buffer of its own size, so ASan sees a
 * read past the bytes given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "httpd/http_path.h"
#include "httpd/http_reply.h"
#include "httpd/http_req.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void span_inside(const struct http_span *s, const char *buf, size_t len)
{
    if (s->len && (s->p < buf || s->p + s->len > buf + len))
        abort();
}

/* What http_path.h promises of a mapped path. */
static void path_beneath(const char *rel, bool dotfiles)
{
    const char *seg = rel;
    size_t n = strlen(rel);

    if (n >= HTTP_PATH_MAX || (n && (rel[0] == '/' || rel[n - 1] == '/')))
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)rel[i] < 0x20 || rel[i] == '\\' || rel[i] == 0x7f)
            abort();
    while (n && seg) {
        const char *end = strchr(seg, '/');
        size_t len = end ? (size_t)(end - seg) : strlen(seg);

        if (len == 0 || (seg[0] == '.' && !dotfiles))
            abort();
        if ((len == 1 && seg[0] == '.') ||
            (len == 2 && seg[0] == '.' && seg[1] == '.'))
            abort();
        seg = end ? end + 1 : NULL;
    }
}

static void answer(const struct http_req *r)
{
    struct stat st;
    char head[HTTP_HEAD_MAX];
    uint64_t off, len;
    struct http_head h = {.type = "text/plain", .st = &st, .server = true};

    memset(&st, 0, sizeof(st));
    st.st_size = 1000;
    st.st_ino = 42;
    st.st_mtim.tv_sec = 1700000000;
    h.status = http_reply_status(r, &st, &off, &len);
    if (h.status != 200 && h.status != 206 && h.status != 304 &&
        h.status != 412 && h.status != 416)
        abort();
    if ((h.status == 200 || h.status == 206) &&
        (off + len > (uint64_t)st.st_size || (h.status == 206 && len == 0)))
        abort();
    h.off = off;
    h.len = len;
    if (http_reply_head(head, &h) >= HTTP_HEAD_MAX)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, rel[HTTP_PATH_MAX];
    struct http_req r;
    size_t len = size < HTTP_REQ_MAX ? size : HTTP_REQ_MAX;
    int rc;

    buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, len);
    if (http_req_parse(buf, len, &r) == HTTP_REQ_DONE) {
        if (r.size == 0 || r.size > len)
            abort();
        span_inside(&r.target, buf, len);
        span_inside(&r.range, buf, len);
        span_inside(&r.if_range, buf, len);
        span_inside(&r.if_none_match, buf, len);
        span_inside(&r.if_modified_since, buf, len);
        span_inside(&r.if_match, buf, len);
        span_inside(&r.if_unmodified_since, buf, len);
        for (int dot = 0; dot < 2; dot++) {
            rc = http_path_map(r.target.p, r.target.len, dot, rel);
            if (rc == 0)
                path_beneath(rel, dot);
            else if (rc != 400 && rc != 404 && rc != 414)
                abort();
        }
        answer(&r);
    }
    /* The mapping alone, on the raw bytes, as a target of any shape. */
    rc = http_path_map(buf, len, false, rel);
    if (rc == 0)
        path_beneath(rel, false);
    free(buf);
    return 0;
}
