/*
 * weir/util.h - the two helpers every layer of weir and its embedders
 * reach for: the object that embeds a member (weir_container_of), and an
 * intrusive doubly linked list (struct weir_list).
 *
 * Both are header-only and thread-agnostic: a list is owned by whoever
 * owns its head, and only that thread touches it.
 */
#ifndef WEIR_UTIL_H
#define WEIR_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The object of type `type` whose member `member` is at `ptr`. */
#define weir_container_of(ptr, type, member)                                   \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/*
 * A circular doubly linked list. The head is a struct weir_list of its
 * own; each element embeds one. An empty list's head points to itself, so
 * insertion and removal never test for the ends. A removed element points
 * to itself again, so removing it twice is harmless.
 */
struct weir_list {
    struct weir_list *next, *prev;
};

static inline void weir_list_init(struct weir_list *head)
{
    head->next = head;
    head->prev = head;
}

static inline bool weir_list_empty(const struct weir_list *head)
{
    return head->next == head;
}

/* Links n in before `at` (at the head: at the end of the list). */
static inline void weir_list_insert_before(struct weir_list *at,
                                           struct weir_list *n)
{
    n->next = at;
    n->prev = at->prev;
    at->prev->next = n;
    at->prev = n;
}

static inline void weir_list_push_tail(struct weir_list *head,
                                       struct weir_list *n)
{
    weir_list_insert_before(head, n);
}

static inline void weir_list_push_head(struct weir_list *head,
                                       struct weir_list *n)
{
    weir_list_insert_before(head->next, n);
}

/* Unlinks n (a list element, not a head) and leaves it pointing to itself. */
static inline void weir_list_remove(struct weir_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    weir_list_init(n);
}

/* The first element, or NULL when the list is empty. */
static inline struct weir_list *weir_list_first(const struct weir_list *head)
{
    return weir_list_empty(head) ? NULL : head->next;
}

#define weir_list_entry(node, type, member)                                    \
    weir_container_of(node, type, member)

/* Walks the list; `pos` may be removed (and freed) in the body, not the
 * element after it. */
#define weir_list_for_each(pos, tmp, head)                                     \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);           \
         (pos) = (tmp), (tmp) = (pos)->next)

#ifdef __cplusplus
}
#endif

#endif /* WEIR_UTIL_H */
