/*
 * Choosing, dispatching and delivering (xfer.c): the path for each
 * message, its row's send; each received fabric message to the row that
 * owns its type; a queued message into the caller's buffer.
 */
#ifndef RMQ_XFER_H
#define RMQ_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "paths/path.h"
#include "rmq.h"

struct rmq_peer;
struct rmq_rxent;
struct rmq_slab;
struct rmq_socket;

/* Build the type -> row dispatch of a socket from the rows. */
void rmq_xfer_init(struct rmq_socket *s);
/* Send one message to one peer.  Returns 0 or -error. */
int  rmq_xfer_send(struct rmq_socket *s, struct rmq_peer *p,
                   const struct rmq_out *o, uint32_t msgid, int flags);
/*
 * A new peer: an empty CREDIT to it, so that the provider's own
 * connection (tcp;ofi_rxm's, shm's mapping of its region) comes up during
 * the handshake and not at the first message -- where it would wait for
 * the peer to progress.  timeout_ms 0: one try (the provider goes on
 * connecting); else wait that long for it to go.  0 or -error.
 */
int  rmq_xfer_warm(struct rmq_socket *s, struct rmq_peer *p, int timeout_ms);
/* The socket's on_live: one try of rmq_xfer_warm. */
void rmq_xfer_on_live(struct rmq_socket *s, struct rmq_peer *p);
/* A fabric message landed (data: its header as remote CQ data). */
void rmq_xfer_rx(struct rmq_socket *s, struct rmq_slab *sl, uint8_t *buf,
                 size_t len, const uint64_t *data);
/* A peer's write landed (the reactor's on_imm; owner is the socket). */
void rmq_xfer_imm(void *owner, uint64_t data);
/*
 * Deliver e: copy/fetch its payload into buf (cap bytes), or into a new
 * rmq_msg (msgp != NULL).  Frees e.  Returns the full size or -error.
 */
ssize_t rmq_xfer_deliver(struct rmq_socket *s, struct rmq_rxent *e,
                         void *buf, size_t cap, rmq_msg **msgp);
/* Must e's row still fetch its payload (it is not here yet)? */
bool rmq_xfer_to_fetch(const struct rmq_socket *s, const struct rmq_rxent *e);
/* Discard e (REQ: stale reply).  Frees e; tells a rendezvous sender. */
void rmq_xfer_discard(struct rmq_socket *s, struct rmq_rxent *e);
/* Pull queued rendezvous messages into heap buffers, so a sender that
 * waits for our FIN while we wait for it cannot deadlock (the reactor's
 * idle hook; owner is the socket). */
void rmq_xfer_pull_pending(void *owner);

#endif /* RMQ_XFER_H */
