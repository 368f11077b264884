/*
 * What every path shares (tx.c): the registered tx slots
 * an eager, ring or seg message is copied into; posting with retry while
 * the provider says -FI_EAGAIN; the small control messages (FIN, CTS,
 * CREDIT, RCREDIT, ABORT, GRANT); and credits.
 *
 * Flow control: every data message and RTS costs one credit; the receiver
 * grants credits back as the application consumes messages, piggy-backed
 * on any header it sends, or in a CREDIT message at half the window.
 */
#ifndef RMQ_TX_H
#define RMQ_TX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fi_domain.h>

#include "numa.h"
#include "progress.h"
#include "wire.h"

struct rmq_peer;
struct rmq_socket;

/* A registered send buffer. */
struct rmq_tx {
	struct rmq_op    op;
	struct rmq_tx   *next_free;
	uint8_t         *buf;
	void            *desc;  /* its block's registration (FI_MR_LOCAL) */
	struct rmq_peer *peer;  /* posted to (held until completion) */
	struct rmq_peer *owner; /* taken for (counted in its ntx) */
	int             *landed; /* in place: set to 1 on its completion */
};

/* A block of slots: the first at init, more while peers hold them all
 * (tx.c). */
struct rmq_txblock {
	struct rmq_txblock *next;
	struct rmq_tx      *txs;
	struct fid_mr      *mr;
	void               *desc;
	uint8_t            *mem;
	struct rmq_numa_mem numa; /* how mem was allocated */
	int                 n;
};

/* The socket's tx slots. */
struct rmq_txpool {
	struct rmq_txblock *blocks;
	void               *desc;  /* the first block's (strict checks) */
	size_t              slot;  /* bytes per slot */
	int                 n;     /* slots in all blocks */
	struct rmq_tx      *free;
};

/* Where a tx slot is written one-sided (NULL: sent two-sided). */
struct rmq_tx_rma {
	uint64_t addr;
	uint64_t key;
	uint32_t imm; /* the immediate of the fi_writedata */
};

struct rmq_path_table;
/* Bytes per tx slot: an eager message to the slabs' limit, a ring
 * message, an RTS; cache-line multiples. */
size_t rmq_tx_slot_size(size_t min_multi, const struct rmq_path_table *t);
int  rmq_tx_init(struct rmq_socket *s);
/* The largest payload one tx slot holds beside its header (the socket's
 * endpoint is open). */
size_t rmq_tx_payload_max(const struct rmq_socket *s);
/* Is a slot free now (none waits)? */
bool rmq_tx_free_any(const struct rmq_socket *s);
void rmq_tx_fini(struct rmq_socket *s);
/*
 * A free slot for a message to p; waits (per w) while p holds
 * RMQ_TX_PEER_MAX slots, and while all are in flight and the pool may
 * not grow.  -RMQ_EAGAIN on the deadline, -RMQ_ECONNRESET when p dies
 * meanwhile.
 */
int  rmq_tx_get(struct rmq_socket *s, struct rmq_peer *p,
                struct rmq_waiter *w, struct rmq_tx **txp);
void rmq_tx_put(struct rmq_socket *s, struct rmq_tx *tx);
/*
 * Post tx->buf[0..n) to p: fi_send, or fi_writedata to rma.  On success
 * the slot is in flight (back on its completion); on failure it is free
 * again.
 */
int  rmq_tx_post(struct rmq_socket *s, struct rmq_peer *p,
                 struct rmq_waiter *w, struct rmq_tx *tx, size_t n,
                 const struct rmq_tx_rma *rma);

/*
 * A message whose header is in tx->buf: its payload copied in after it
 * and posted (rmq_tx_post), or, where it may (sends in place, tx.c:
 * eager and ring sends of thresholds.in_place bytes and more that answer
 * a message from p, on a provider whose sends complete without p), posted
 * from the caller's buffer as a second iovec -- the call then returns
 * once the provider completed it, so the caller may reuse its buffer at
 * once either way.
 */
int  rmq_tx_post_payload(struct rmq_socket *s, struct rmq_peer *p,
                         struct rmq_waiter *w, struct rmq_tx *tx,
                         const void *payload, size_t len, int flags,
                         const struct rmq_tx_rma *rma);
/*
 * Never above this (the ring's and tcp's eager limits by default): the
 * wait for the completion has no deadline, and what a peer that stopped
 * reading leaves room for is its socket's receive buffer and ours to
 * send (Linux starts them at 128 KiB and 16 KiB) -- a larger ring or
 * eager_max must not make a send wait on it.
 */
#define RMQ_IN_PLACE_MAX 65536u

/*
 * Post with post(arg) until it returns something else than -FI_EAGAIN
 * (the first send to a new peer on tcp;ofi_rxm needs both sides to
 * progress, so we progress meanwhile, or wait per w): 0, the post's error
 * (logged as what), -RMQ_EAGAIN past w's deadline, -RMQ_ECONNRESET when
 * p died meanwhile.
 */
int  rmq_post_retry(struct rmq_socket *s, struct rmq_peer *p,
                    struct rmq_waiter *w, ssize_t (*post)(void *arg),
                    void *arg, const char *what);

void rmq_hdr_fill(struct rmq_hdr *h, struct rmq_peer *p, int type,
                  uint32_t msgid, uint32_t len);
/* b[0..n) to p by fi_inject, or fi_injectdata with *data as the remote
 * CQ data (data not NULL); retried as rmq_post_retry says. */
int  rmq_tx_inject(struct rmq_socket *s, struct rmq_peer *p,
                   struct rmq_waiter *w, const void *b, size_t n,
                   const uint64_t *data);
/* A control-sized buffer to p: by inject, else through a tx slot. */
int  rmq_tx_small(struct rmq_socket *s, struct rmq_peer *p,
                  struct rmq_waiter *w, const uint8_t *b, size_t n);
/* A header-only control message (FIN, CTS, CREDIT, RCREDIT, ABORT). */
int  rmq_tx_ctl(struct rmq_socket *s, struct rmq_peer *p, int type,
                uint32_t msgid, uint32_t status);
/* A message of p's left us by path: a credit spent, counted. */
void rmq_tx_sent(struct rmq_socket *s, struct rmq_peer *p, int path,
                 size_t len);
/* The application took (or we dropped) a message of p: a credit back. */
void rmq_tx_consumed(struct rmq_socket *s, struct rmq_peer *p);

struct rmq_rxent;
/*
 * A message (msgid) arrived from p: counted (BYE's tally), and an entry
 * for it; NULL when there is no memory (then dropped, counted, its credit
 * given back).
 */
struct rmq_rxent *rmq_rx_new(struct rmq_socket *s, struct rmq_peer *p,
                             uint32_t msgid);
/* e's msgid as the wire gives it: the id, and RMQ_MSGID_MORE as e->more. */
void rmq_rx_msgid(struct rmq_rxent *e, uint32_t msgid);
/* A frame (msgid) from p that cannot be queued (too large, no memory):
 * its message goes whole, counted once, its credit back. */
void rmq_rx_lost(struct rmq_socket *s, struct rmq_peer *p, uint32_t msgid);
/* The message coming from p lost a frame on the way (a pattern missed
 * it): its frames queued go, counted once, their credit back; p's next
 * frame starts a message.  Nothing coming: nothing happens. */
void rmq_rx_abort(struct rmq_socket *s, struct rmq_peer *p);
/*
 * Queue e from p unless it is larger than RMQ_MAXMSGSIZE: then it is
 * dropped (logged, counted, its credit given back unless it took none),
 * e freed, and -RMQ_EMSGSIZE returned.
 */
int  rmq_rx_accept(struct rmq_socket *s, struct rmq_peer *p,
                   struct rmq_rxent *e);
struct rmq_slab;
/*
 * e's payload (e->len bytes at data) lies in slab sl: e holds sl.  Where a
 * receive takes one message (RMQ_PROV_ONE_RECV), the payload is copied
 * out instead, so that the receive goes up again at once: a small message
 * queued unread would otherwise hold a whole buffer of the largest size.
 */
void rmq_rx_keep(struct rmq_socket *s, struct rmq_rxent *e,
                 struct rmq_slab *sl, uint8_t *data);
/*
 * The count items of a batch body b from p (checked whole first:
 * rmq_batch_check), each taken in as above and queued in order as a
 * message of path pointing into b; each holds a reference to sl (NULL:
 * none, a ring's).
 */
void rmq_rx_batch(struct rmq_socket *s, struct rmq_peer *p, uint8_t *b,
                  uint32_t count, int path, struct rmq_slab *sl);

#endif /* RMQ_TX_H */
