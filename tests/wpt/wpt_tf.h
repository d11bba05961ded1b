/*
 * wpt_tf.h - the fixture the transform-streams ports share: a recording
 * transform (wpt.h's rtf) with a reader on its readable side and a
 * writer on its writable side.
 */
#ifndef WEIR_WPT_TF_H
#define WEIR_WPT_TF_H

#include "wpt.h"

struct fx {
    struct rtf t;
    struct weir_transform *tf;
    struct weir_readable *rs;
    struct weir_writable *ws;
    struct weir_reader r;
    struct weir_writer w;
};

static inline void fx_open(struct fx *f, size_t rhwm)
{
    f->tf = rtf_make(&f->t, 1, rhwm);
    f->rs = weir_transform_readable(f->tf);
    f->ws = weir_transform_writable(f->tf);
    assert_int_equal(weir_reader_acquire(&f->r, f->rs), 0);
    assert_int_equal(weir_writer_acquire(&f->w, f->ws), 0);
}

static inline void fx_close(struct fx *f)
{
    weir_reader_release(&f->r);
    weir_writer_release(&f->w);
    weir_transform_destroy(f->tf);
}

#endif
