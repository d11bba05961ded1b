/*
 * http_req.c - see http_req.h. http-parser is given the whole buffer and
 * paused at the end of the first message, so that what follows it (a
 * pipelined request) is left for the next call.
 */
#include "httpd/http_req.h"

#include <http_parser.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

struct parse {
    struct http_req *req;
    struct http_span *field; /* the header whose value comes next */
    bool in_heads;           /* a header's name has begun */
    bool complete;
};

static struct parse *parse_of(http_parser *hp)
{
    return hp->data;
}

/* One callback per field, since the buffer is given in one piece; a
 * value given in pieces anyway is kept whole from its first byte. */
static void span_take(struct http_span *s, const char *at, size_t len)
{
    if (s->len == 0)
        s->p = at;
    s->len = (size_t)(at + len - s->p);
}

static int on_url(http_parser *hp, const char *at, size_t len)
{
    span_take(&parse_of(hp)->req->target, at, len);
    return 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
    struct parse *ps = parse_of(hp);
    struct http_req *r = ps->req;
    static const struct {
        const char *name;
        size_t off;
    } wanted[] = {
        {"range", offsetof(struct http_req, range)},
        {"if-range", offsetof(struct http_req, if_range)},
        {"if-none-match", offsetof(struct http_req, if_none_match)},
        {"if-modified-since", offsetof(struct http_req, if_modified_since)},
        {"if-match", offsetof(struct http_req, if_match)},
        {"if-unmodified-since", offsetof(struct http_req, if_unmodified_since)},
        {"user-agent", offsetof(struct http_req, user_agent)},
    };

    ps->in_heads = true;
    ps->field = NULL;
    if (len == 4 && strncasecmp(at, "host", 4) == 0)
        r->hosts++;
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
        if (strlen(wanted[i].name) == len &&
            strncasecmp(at, wanted[i].name, len) == 0)
            ps->field = (struct http_span *)(void *)((char *)r + wanted[i].off);
    return 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
    struct parse *ps = parse_of(hp);

    if (ps->field)
        span_take(ps->field, at, len);
    return 0;
}

static int on_headers_complete(http_parser *hp)
{
    struct http_req *r = parse_of(hp)->req;

    parse_of(hp)->in_heads = true;
    r->method = hp->method == HTTP_GET    ? HTTP_M_GET
                : hp->method == HTTP_HEAD ? HTTP_M_HEAD
                                          : HTTP_M_OTHER;
    r->major = hp->http_major;
    r->minor = hp->http_minor;
    r->keep_alive = http_should_keep_alive(hp) != 0;
    r->has_body = (hp->flags & F_CHUNKED) ||
                  (hp->content_length > 0 && hp->content_length != ULLONG_MAX);
    /* A body is never read: the connection closes after the answer
     * (http_conn.c), so the parser need not walk it. */
    return 1;
}

static int on_message_complete(http_parser *hp)
{
    parse_of(hp)->complete = true;
    http_parser_pause(hp, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

enum http_req_result http_req_parse(const char *buf, size_t len,
                                    struct http_req *req)
{
    struct parse ps = {.req = req};
    http_parser hp;
    size_t n;

    memset(req, 0, sizeof(*req));
    req->method = HTTP_M_OTHER;
    http_parser_init(&hp, HTTP_REQUEST);
    hp.data = &ps;
    n = http_parser_execute(&hp, &settings, buf, len);
    if (ps.complete) {
        /* Paused in on_message_complete: n counts the message's last
         * byte. */
        req->size = n;
        return HTTP_REQ_DONE;
    }
    if (HTTP_PARSER_ERRNO(&hp) != HPE_OK)
        return HTTP_REQ_BAD;
    if (len < HTTP_REQ_MAX)
        return HTTP_REQ_MORE;
    return ps.in_heads ? HTTP_REQ_HEADS_LONG : HTTP_REQ_LINE_LONG;
}
