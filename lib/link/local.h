/*
 * The local path (local.c): what the rest of the engine calls.
 */
#ifndef RMQ_PATHS_LOCAL_H
#define RMQ_PATHS_LOCAL_H

#include <stdbool.h>
#include <stddef.h>

struct rmq_peer;
struct rmq_socket;
struct rmq_waiter;

/*
 * Put a message of na + nb bytes (a: its header, or all of it) into p's
 * ring (p->local), waiting for room as w allows: 0, or -error.  tx.c
 * sends every two-sided message to a local peer so, in order.
 */
int rmq_local_put(struct rmq_socket *s, struct rmq_peer *p,
                  struct rmq_waiter *w, const void *a, size_t na,
                  const void *b, size_t nb);

/* Messages past a local peer's ring go by the local path too (read out of
 * the sender's memory): the socket's domain can serve the fallback. */
bool rmq_local_big(const struct rmq_socket *s);

/* Publish what p's ring holds unpublished (coalesced records): the
 * reader sees them now. */
void rmq_local_flush(struct rmq_socket *s, struct rmq_peer *p);

/* A small message to a local peer with credit and room, at once: 0, or
 * 1 when the general path must take it (nothing was written). */
int rmq_local_send_now(struct rmq_socket *s, struct rmq_peer *p,
                       const void *buf, size_t len, uint32_t msgid);

#endif /* RMQ_PATHS_LOCAL_H */
