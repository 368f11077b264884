/*
 * Coalescing (batch.c): small messages sent back to back to one peer
 * travel together, in one BATCH fabric message (wire.h), with one header,
 * one provider operation and one completion on each side.
 *
 * A message joins a batch only when another one to the same peer left
 * within coalesce.window_us and nothing came back from that peer since
 * (a request/reply exchange never waits), or when a batch to the peer is
 * already open.  Nothing waits to fill a batch: it leaves when it is
 * full, before any other message to the peer (order holds), at every
 * progress pass of its socket (any rmq_send, rmq_recv, rmq_poll or wait),
 * and, when the application makes no call, from the context's flusher
 * thread within about coalesce.flush_us.  Each message keeps its own
 * credit, so RMQ_SNDHWM/RMQ_RCVHWM and backpressure are unchanged.
 */
#ifndef RMQ_BATCH_H
#define RMQ_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

struct rmq_out;
struct rmq_peer;
struct rmq_rx;
struct rmq_socket;
struct rmq_waiter;


/* The socket's endpoint opened: its after-pass hook. 0 or -error. */
int  rmq_batch_sock_init(struct rmq_socket *s);
/* Should a len-byte message to p (the table's path: path) be coalesced?
 * Inject, eager and ring messages may (ring by size only where the
 * domain orders writes with sends, so a batch sent before a ring write
 * still lands first).
 * *now: the clock, read here when needed (0: not read). */
bool rmq_batch_takes(struct rmq_socket *s, struct rmq_peer *p, int path,
                     size_t len, int64_t *now);
/*
 * Add o to p's batch, opening one (or sending a full one first, waiting
 * per w, also for a free tx slot unless path, its path alone, is
 * inject).  0: it is in, counted as sent; 1: no tx slot free (by w's
 * deadline), or too big for p's batches: send it alone; < 0 an error (the message is not in; what was before is kept).
 */
int  rmq_batch_add(struct rmq_socket *s, struct rmq_peer *p, int path,
                   const struct rmq_out *o, uint32_t msgid, int64_t now,
                   struct rmq_waiter *w);
/* Send p's open batch, if any: waiting per w, or once (w NULL: then
 * -FI_EAGAIN leaves it open).  0 or -error. */
int  rmq_batch_flush(struct rmq_socket *s, struct rmq_peer *p,
                     struct rmq_waiter *w);
/* A message went to p alone (at now, 0: unknown), or came from p. */
void rmq_batch_sent_alone(struct rmq_peer *p, int64_t now);
/* p holds local records written but not yet published, or no longer. */
void rmq_batch_hold(struct rmq_socket *s, struct rmq_peer *p, bool held);
/* p is dead or freed: its open batch is lost with it. */
void rmq_batch_drop(struct rmq_socket *s, struct rmq_peer *p);
/* A BATCH from p landed: queue each of its messages in order. */
void rmq_batch_rx(struct rmq_socket *s, struct rmq_peer *p,
                  const struct rmq_rx *rx);

#endif /* RMQ_BATCH_H */
