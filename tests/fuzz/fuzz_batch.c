/*
 * fuzz_batch: the body of a BATCH fabric message (lib/paths/batch.c).
 *
 * Input: u32 little-endian count of messages, then the body: items of an
 * 8-byte header (u32 length, u32 msgid) and the payload padded to 8.  The
 * target builds the 16-byte BATCH header (msgid = count, len = the body's
 * bytes) with rmq_hdr_encode, in an exact-size heap buffer with the body,
 * has rmq_hdr_decode accept it as xfer.c does, and hands it to the real
 * receiver, rmq_batch_rx, with a bare socket and peer: only what the walk
 * and the queueing touch (the rx cache, the stats, RMQ_MAXMSGSIZE, the
 * path rows, the domain's kind of receive, a slab holding the message).
 * The walk that checks the items is not a function of its own in
 * batch.c, so this is how it is reached.
 *
 * Checks, against the layout of wire.h / batch.h:
 *   - a body that is well formed (count items, each at most
 *     RMQ_BATCH_ITEM_MAX, exactly filling it) queues one message per item,
 *     in order, each pointing at its payload inside the body, with its
 *     msgid (less RMQ_MSGID_MORE, which says more frames follow) and
 *     length; a message whose frames add up to more than RMQ_MAXMSGSIZE
 *     goes whole (its frames queued so far, and those still to come),
 *     counted once; nothing else is counted as an error;
 *   - any other body queues nothing and counts one protocol error;
 *   - on a domain of multi-receive slabs (shm, sockets), the slab holds
 *     one reference per queued message, and none is left when the queue
 *     is freed.
 * Round trip: the messages queued are packed again the way rmq_batch_add
 * writes them (zero padding) and fed again, this time on a domain of
 * one-message receives (tcp): the same messages come out, copied out of
 * the receive buffer (it is freed before they are compared), holding no
 * slab.
 */
#include <stdatomic.h>
#include <string.h>

#include "conn/peer.h"
#include "ctx.h"
#include "ep.h"
#include "paths/batch.h"
#include "paths/path.h"
#include "rmq.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"
#include "wire.h"

#include "fuzz.h"

/* Messages above this are dropped by RMQ_MAXMSGSIZE (rmq_rx_accept). */
#define FUZZ_MAXMSG 600

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	/* rmq_batch_rx warns of every malformed batch: quiet. */
	rmq_log_set_level(RMQ_LOG_OFF);
	return 0;
}

struct item {
	uint32_t len, msgid;
	size_t   off; /* of its payload in the body */
};

/* The layout, walked independently: the number of items, or -1. */
static long
walk(const uint8_t *b, size_t len, uint32_t count, struct item *it,
     size_t itmax)
{
	size_t   off = 0, n, item;
	uint32_t i;

	for (i = 0; i < count; i++) {
		if (len - off < RMQ_BATCH_ITEM_HDR)
			return -1;
		n    = rmq_get32(b + off);
		item = RMQ_BATCH_ITEM_HDR + ((n + 7) & ~(size_t) 7);
		if (n > RMQ_BATCH_ITEM_MAX || item > len - off)
			return -1;
		if (i < itmax)
			it[i] = (struct item){(uint32_t) n,
			                      rmq_get32(b + off + 4),
			                      off + RMQ_BATCH_ITEM_HDR};
		off += item;
	}
	return off == len ? (long) count : -1;
}

struct harness {
	struct rmq_dom     *dom;
	struct rmq_socket  *s;
	struct rmq_peer    *p;
	struct rmq_rxcache *rx;
	struct rmq_slab    *sl;
};

/*
 * multi: the domain's receives are multi-receive slabs (shm, sockets), and
 * a queued message points into its slab; otherwise one-message receives
 * (tcp), and rmq_rx_keep copies each message out.
 */
static void
harness_open(struct harness *hs, bool multi)
{
	hs->dom = calloc(1, sizeof *hs->dom);
	hs->s  = calloc(1, sizeof *hs->s);
	hs->p  = calloc(1, sizeof *hs->p);
	hs->rx = calloc(1, sizeof *hs->rx);
	hs->sl = calloc(1, sizeof *hs->sl);
	FUZZ_CHECK(hs->dom && hs->s && hs->p && hs->rx && hs->sl,
	           "out of memory");
	hs->dom->caps.multi_recv = multi;
	hs->s->dom      = hs->dom;
	hs->s->rx       = hs->rx;
	hs->s->path_ops = rmq_paths;
	hs->s->maxmsg   = FUZZ_MAXMSG;
	hs->s->rcvhwm   = 1000;
	hs->p->state    = RMQ_PEER_NEW; /* no CREDIT goes out for drops */
	hs->p->id       = 1;
	snprintf(hs->p->name, sizeof hs->p->name, "fuzz");
	atomic_init(&hs->sl->refs, 1); /* the socket's own */
}

static void
harness_close(struct harness *hs)
{
	rmq_rxq_clear(hs->s, &hs->p->q);
	FUZZ_CHECK(atomic_load(&hs->sl->refs) == 1,
	           "%d slab references left", atomic_load(&hs->sl->refs) - 1);
	FUZZ_CHECK(hs->rx->nqueued == 0, "%zu messages still counted",
	           hs->rx->nqueued);
	rmq_rxent_cache_drop(hs->s);
	free(hs->sl);
	free(hs->rx);
	free(hs->p);
	free(hs->s);
	free(hs->dom);
}

/*
 * Header + body in one exact-size buffer, through rmq_hdr_decode and
 * rmq_batch_rx.  Returns the message buffer (the queue points into it).
 */
static uint8_t *
deliver(struct harness *hs, uint32_t count, const uint8_t *body, size_t len)
{
	struct rmq_hdr h = {RMQ_WIRE_VERSION, RMQ_MT_BATCH, 0, 1, count,
	                    (uint32_t) len};
	struct rmq_hdr d;
	uint8_t       *msg = malloc(RMQ_HDR_SIZE + len);
	struct rmq_rx  rx;
	int            rc;

	FUZZ_CHECK(msg != NULL, "out of memory");
	rmq_hdr_encode(msg, &h);
	if (len > 0)
		memcpy(msg + RMQ_HDR_SIZE, body, len);
	rc = rmq_hdr_decode(&d, msg, RMQ_HDR_SIZE + len);
	FUZZ_CHECK(rc == 0, "BATCH header of %u in %zu refused: %d", count,
	           len, rc);
	rx = (struct rmq_rx){.h = &d, .ext = msg + RMQ_HDR_SIZE,
	                     .payload = msg + RMQ_HDR_SIZE, .sl = hs->sl};
	rmq_batch_rx(hs->s, hs->p, &rx, RMQ_PATH_EAGER);
	return msg;
}

/*
 * Which items stay queued, by the framing rules of wire.h, modelled apart
 * from tx.c: a message (its frames up to one without RMQ_MSGID_MORE) whose
 * frames so far add up to more than the limit goes whole, counted once,
 * and the rest of its frames are skipped.  keep[k] is the k-th item kept;
 * returns how many, *dropped the messages that went.
 */
static size_t
model(const struct item *it, long want, size_t *keep, size_t *dropped)
{
	size_t   n = 0, open = 0;
	uint64_t open_len = 0, total;
	bool     skip = false, more;
	long     i;

	*dropped = 0;
	for (i = 0; i < want; i++) {
		more = (it[i].msgid & RMQ_MSGID_MORE) != 0;
		if (skip) {
			skip = more;
			continue;
		}
		total = open_len + it[i].len;
		if (total > FUZZ_MAXMSG) {
			n -= open; /* its frames queued so far */
			open     = 0;
			open_len = 0;
			(*dropped)++;
			skip = more;
			continue;
		}
		keep[n++] = (size_t) i;
		open      = more ? open + 1 : 0;
		open_len  = more ? total : 0;
	}
	return n;
}

/* The queue against the independent walk; returns frames queued. */
static size_t
check_queue(const struct harness *hs, const uint8_t *msg, size_t len,
            long want, const struct item *it)
{
	static size_t           keep[4096];
	const uint8_t          *body = msg + RMQ_HDR_SIZE;
	const struct rmq_rxent *e    = hs->p->q.head;
	size_t                  n, k, i, dropped;

	if (want < 0) {
		FUZZ_CHECK(e == NULL, "a malformed batch queued messages");
		FUZZ_CHECK(hs->s->stats.proto_errors == 1,
		           "malformed batch: %llu protocol errors",
		           (unsigned long long) hs->s->stats.proto_errors);
		return 0;
	}
	FUZZ_CHECK(hs->s->stats.proto_errors == 0,
	           "a well-formed batch of %ld counted as malformed", want);
	n = model(it, want, keep, &dropped);
	for (k = 0; k < n; k++) {
		i = keep[k];
		FUZZ_CHECK(e != NULL, "frame %zu (item %zu of %ld) missing", k,
		           i, want);
		FUZZ_CHECK(e->peer == hs->p &&
		               e->msgid == (it[i].msgid & ~RMQ_MSGID_MORE) &&
		               e->more == ((it[i].msgid & RMQ_MSGID_MORE) != 0) &&
		               e->len == it[i].len &&
		               e->data == body + it[i].off &&
		               e->path == RMQ_PATH_EAGER && e->slab == hs->sl,
		           "item %zu: msgid %u%s/%u len %zu/%u at %td/%zu", i,
		           e->msgid, e->more ? "+more" : "", it[i].msgid,
		           e->len, it[i].len, e->data - body, it[i].off);
		FUZZ_CHECK(e->data + e->len <= body + len,
		           "item %zu past the body", i);
		e = e->next;
	}
	FUZZ_CHECK(e == NULL, "more frames queued than the batch kept");
	FUZZ_CHECK(hs->p->q.len == n && hs->rx->nqueued == n,
	           "queue of %zu/%zu, want %zu", hs->p->q.len,
	           hs->rx->nqueued, n);
	FUZZ_CHECK(hs->s->stats.dropped == dropped,
	           "%llu dropped, want %zu",
	           (unsigned long long) hs->s->stats.dropped, dropped);
	FUZZ_CHECK(atomic_load(&hs->sl->refs) == (int) (1 + n),
	           "slab refs %d for %zu frames",
	           atomic_load(&hs->sl->refs), n);
	return n;
}

/* Pack the queued messages as rmq_batch_add does. */
static uint8_t *
repack(const struct harness *hs, uint32_t *count, size_t *len)
{
	const struct rmq_rxent *e;
	size_t                  total = 0, off = 0, item;
	uint8_t                *b;

	*count = 0;
	for (e = hs->p->q.head; e != NULL; e = e->next) {
		total += RMQ_BATCH_ITEM_HDR + ((e->len + 7) & ~(size_t) 7);
		(*count)++;
	}
	b = calloc(1, total > 0 ? total : 1);
	FUZZ_CHECK(b != NULL, "out of memory");
	for (e = hs->p->q.head; e != NULL; e = e->next) {
		item = RMQ_BATCH_ITEM_HDR + ((e->len + 7) & ~(size_t) 7);
		rmq_put32(b + off, (uint32_t) e->len);
		rmq_put32(b + off + 4,
		          e->msgid | (e->more ? RMQ_MSGID_MORE : 0));
		memcpy(b + off + RMQ_BATCH_ITEM_HDR, e->data, e->len);
		off += item;
	}
	*len = total;
	return b;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct item it[4096], it2[4096];
	struct harness     hs, hs2;
	const uint8_t     *body;
	uint8_t           *msg, *msg2, *packed;
	const struct rmq_rxent *e, *e2;
	size_t             len, len2;
	uint32_t           count, count2;
	long               want, want2;

	if (size < 4)
		return 0;
	count = rmq_get32(data);
	body  = data + 4;
	len   = size - 4;
	if (count == 0 || len > UINT32_MAX)
		return 0; /* rmq_hdr_decode refuses these: fuzz_hdr's part */
	want = walk(body, len, count, it, sizeof it / sizeof it[0]);
	if (want > (long) (sizeof it / sizeof it[0]))
		return 0; /* cannot happen: an item is 8 bytes at least */

	harness_open(&hs, true);
	msg = deliver(&hs, count, body, len);
	(void) check_queue(&hs, msg, len, want, it);

	/*
	 * Round trip through the sender's layout, on a domain of one-message
	 * receives: each message is copied out, so the received buffer is
	 * spoilt and freed before the messages are compared (ASan sees any
	 * message still pointing into it), and the slab is not held.
	 */
	if (want > 0 && hs.p->q.head != NULL) {
		packed = repack(&hs, &count2, &len2);
		want2  = walk(packed, len2, count2, it2,
		              sizeof it2 / sizeof it2[0]);
		FUZZ_CHECK(want2 == (long) count2, "repacked batch malformed");
		harness_open(&hs2, false);
		hs2.s->maxmsg = -1;
		msg2 = deliver(&hs2, count2, packed, len2);
		FUZZ_CHECK(hs2.s->stats.proto_errors == 0 &&
		               hs2.p->q.len == count2,
		           "repacked batch: %zu of %u queued", hs2.p->q.len,
		           count2);
		FUZZ_CHECK(atomic_load(&hs2.sl->refs) == 1,
		           "one-message receives: slab refs %d",
		           atomic_load(&hs2.sl->refs));
		memset(msg2, 0xa5, RMQ_HDR_SIZE + len2);
		free(msg2);
		for (e = hs.p->q.head, e2 = hs2.p->q.head; e != NULL;
		     e = e->next, e2 = e2->next) {
			FUZZ_CHECK(e2 != NULL && e2->msgid == e->msgid &&
			               e2->more == e->more && e2->len == e->len && e2->slab == NULL &&
			               memcmp(e2->data, e->data, e->len) == 0,
			           "repacked message differs");
		}
		harness_close(&hs2);
		free(packed);
	}
	harness_close(&hs);
	free(msg);
	return 0;
}
