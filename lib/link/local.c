/*
 * The local path: a peer on this host gets a ring in memory the two
 * processes share, whatever the socket's provider (local.enabled).
 *
 * Each side makes, for each local peer, a ring for that peer's messages:
 * a sealed memfd (it cannot shrink or grow: a peer cannot make us fault),
 * a head page and local.ring bytes of data.  The HELLO says where it is
 * (our pid and the memfd's number: the peer opens /proc/PID/fd/N, which
 * only a process of the same user may) and a random nonce written at its
 * head, which the peer checks: a pid from another pid namespace maps
 * nothing.  Nothing is left behind when a process dies: the memory goes
 * with the last mapping.
 *
 * The rings' layout and arithmetic are in local_ring.h; writing them is
 * local_tx.c's part, large messages local_big.c's.
 *
 * Once a peer's ring is mapped, every two-sided message to it goes into
 * the ring in order (tx.c hands DATA, CREDIT, RTS, FIN... here): so order
 * holds between the messages this path carries (up to local_max) and the
 * rendezvous of larger ones, which move their payload over the provider
 * as on any path.  The receiver takes a record in only after checking its
 * header (copied out first) and its bounds in the ring; a
 * DATA payload is delivered from the ring and its bytes go back (freed)
 * when the application has taken it, in order, as the ring path's slots.
 *
 * Waking: the reader spins and polls as on any provider.  A ring is
 * armed from its first look and again each time the reader has read its
 * wake socket (an abstract Unix datagram socket, a reactor source); a
 * writer that finds armed set clears it and sends one byte there.  A
 * writer short of room sets want; the reader that frees bytes wakes it
 * the same way.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "conn/peer.h"
#include "ctx.h"
#include "msg.h"
#include "paths/batch.h"
#include "link/local_peer.h"
#include "link/local_ring.h"
#include "paths/path.h"
#include "paths/rndv.h"
#include "paths/tx.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

void
rmq_local_wake(struct rmq_socket *s, struct local_peer *lp)
{
	char b = 1;

	struct rmq_local *l = local_sock(s);

	if (l == NULL)
		return; /* closing: the socket's part went first */
	/* EAGAIN: its socket holds wakes already; others: it is gone. */
	(void) sendto(l->wfd, &b, 1, MSG_DONTWAIT,
	              (const struct sockaddr *) &lp->wake, lp->wake_len);
}

/* ---- the peer's state ---- */

static struct local_peer *
local_get(struct rmq_peer *p)
{
	struct local_peer *lp = p->path[RMQ_PATH_LOCAL];

	if (lp == NULL) {
		lp = calloc(1, sizeof(*lp));
		if (lp == NULL)
			return NULL;
		lp->p     = p;
		lp->rx_fd = -1;
		lp->slot  = -1;
		lp->gate  = -1;
		p->path[RMQ_PATH_LOCAL] = lp;
	}
	return lp;
}

static int
poll_add(struct rmq_local *l, struct local_peer *lp)
{
	struct local_peer **n;

	if (lp->slot >= 0)
		return 0;
	if (l->npoll == l->cap) {
		n = realloc(l->poll, (size_t) (l->cap + 16) * sizeof(*n));
		if (n == NULL)
			return -RMQ_ENOMEM;
		l->poll = n;
		l->cap += 16;
	}
	lp->slot            = l->npoll;
	l->poll[l->npoll++] = lp;
	rmq_lring_arm(&lp->rx); /* its first write wakes us (wake_ready) */
	return 0;
}

static void
poll_del(struct rmq_local *l, struct local_peer *lp)
{
	if (lp->slot < 0)
		return;
	l->poll[lp->slot]       = l->poll[--l->npoll];
	l->poll[lp->slot]->slot = lp->slot;
	lp->slot                = -1;
}

static void
rx_free(struct rmq_socket *s, struct local_peer *lp)
{
	if (lp->rx.h == NULL)
		return;
	rmq_lring_unmap(&lp->rx);
	if (lp->rx_fd >= 0)
		close(lp->rx_fd);
	lp->rx_fd = -1;
	if (local_sock(s) == NULL)
		return; /* the socket's part went first (rmq_close) */
	poll_del(local_sock(s), lp);
	local_sock(s)->nrings--;
	s->reactor.mem_on = local_sock(s)->npoll > 0;
}

/* ---- handshake ---- */

int
rmq_local_miss_level(const struct rmq_socket *s)
{
	return s->ctx->cfg.local == RMQ_CFG_LOCAL_ON ? RMQ_LOG_WARN
	                                             : RMQ_LOG_INFO;
}

static bool
local_wanted(const struct rmq_socket *s)
{
	return local_sock(s) != NULL &&
	       (s->paths.force < 0 || s->paths.force == RMQ_PATH_LOCAL);
}

static void
local_hello_out(struct rmq_socket *s, struct rmq_peer *p,
                struct rmq_hello *h)
{
	const struct rmq_host *me = rmq_host_this();
	struct local_peer    *lp;
	int                   rc;

	if (!local_wanted(s) || me == NULL)
		return;
	lp = local_get(p);
	if (lp == NULL || lp->known < 0)
		return;
	if (lp->rx.h == NULL && local_sock(s)->nrings < s->ctx->cfg.local_peers) {
		rc = rmq_lring_make(&lp->rx, s->ctx->cfg.local_ring,
		                    &lp->rx_fd);
		lp->head = lp->freed = 0;
		if (rc != 0)
			rmq_log(RMQ_LOG_WARN, "%s: no local ring: %s", p->name,
			        strerror(-rc));
		else
			local_sock(s)->nrings++;
	}
	/* A binder knows by now (its HELLO came first): poll ours. */
	if (lp->known > 0 && lp->rx.h != NULL &&
	    poll_add(local_sock(s), lp) == 0)
		s->reactor.mem_on = true;
	h->features |= RMQ_FEAT_LOCAL;
	memcpy(h->host, me->boot, sizeof(h->host));
	h->host_name = me->name;
	h->uid       = (uint32_t) getuid();
	h->pid       = (uint32_t) getpid();
	h->lefd      = local_sock(s)->wid;
	h->lflags    = (lp->tx.h != NULL ? RMQ_LOCAL_F_MAPPED : 0) |
	               RMQ_LOCAL_F_SHARE;
	if (lp->rx.h != NULL) {
		h->lfd    = (uint32_t) lp->rx_fd;
		h->lsize  = lp->rx.size;
		h->lnonce = lp->rx.h->nonce;
	}
}

static int
local_hello_in(struct rmq_socket *s, struct rmq_peer *p,
               const struct rmq_hello *h, char *reason, size_t rl)
{
	const struct rmq_host *me = rmq_host_this();
	struct local_peer    *lp;
	char                  why[160];

	RMQ_UNUSED(reason);
	RMQ_UNUSED(rl);
	if (!local_wanted(s) || me == NULL)
		return 0;
	lp = local_get(p);
	if (lp == NULL)
		return 0;
	if (!(h->features & RMQ_FEAT_LOCAL) ||
	    memcmp(h->host, me->boot, sizeof(h->host)) != 0 ||
	    h->host_name != me->name || h->uid != (uint32_t) getuid()) {
		lp->known = -1;
		rx_free(s, lp); /* made for a peer that is not local */
		return 0;
	}
	lp->known = 1;
	lp->share = (h->lflags & RMQ_LOCAL_F_SHARE) != 0;
	lp->pid   = (pid_t) h->pid;
	rmq_wake_name(&lp->wake, &lp->wake_len, h->pid, h->lefd);
	/* It writes ours (if we made one) once it has mapped it: poll ours
	 * from now; until it writes, that costs a load. */
	if (lp->rx.h != NULL && poll_add(local_sock(s), lp) == 0)
		s->reactor.mem_on = true;
	if (h->lfd == 0 || lp->tx.h != NULL)
		return 0;
	if (rmq_lring_open(&lp->tx, h->pid, h->lfd, h->lsize, h->lnonce, why,
	                   sizeof(why)) != 0) {
		rmq_log(rmq_local_miss_level(s),
		        "%s: on this host, but not local: %s", p->name, why);
		return 0;
	}
	lp->tail   = atomic_load(&lp->tx.h->tail);
	lp->tfreed = atomic_load(&lp->tx.h->freed);
	if (lp->tail != 0 || lp->tfreed != 0) {
		rmq_log(RMQ_LOG_WARN, "%s: its local ring is not new", p->name);
		rmq_lring_unmap(&lp->tx);
		return 0;
	}
	/* A quarter of its ring, as the ring path: room for three more
	 * behind one that waits to be taken, whatever the skip at the end
	 * (64 KiB by the ring, not rendezvous, in the default 512 KiB:
	 * faster, measured, docs/INTERNALS.md §17, "the local path"). */
	lp->max = lp->tx.size / 4 - RMQ_HDR_SIZE;
	p->link = &rmq_link_local;
	local_sock(s)->gen++;
	rmq_log(RMQ_LOG_DEBUG, "%s: local path (%u-byte ring)", p->name,
	        lp->tx.size);
	return 0;
}

/* ---- reading ---- */

/* Bytes of lp's ring through tag are free again (in order). */
static void
local_free_to(struct rmq_socket *s, struct local_peer *lp, uint64_t tag)
{
	if (lp == NULL || lp->rx.h == NULL || tag <= lp->freed)
		return;
	lp->freed = tag;
	/* Told at once: telling in eighths (want then asking for the rest)
	 * measured no faster (INTERNALS §17, "the local path"). */
	if (rmq_lring_free(&lp->rx, lp->freed) && lp->wake_len > 0)
		rmq_local_wake(s, lp);
}

static void
local_release(struct rmq_socket *s, struct rmq_rxent *e)
{
	local_free_to(s, e->peer != NULL ? local_of(e->peer) : NULL, e->tag);
}

/* Bytes through end hold no queued message: they go back with the newest
 * local message of p still queued, or now (without an rxent to say so:
 * zeroing one on the stack was a visible share of a PULL's work per
 * message: INTERNALS §17, "the local path"). */
static void
local_settle(struct rmq_socket *s, struct local_peer *lp, uint64_t end)
{
	if (!rmq_rxq_hold_to(&lp->p->q, RMQ_PATH_LOCAL, end))
		local_free_to(s, lp, end);
}

static void
local_bad(struct rmq_socket *s, struct local_peer *lp, const char *why)
{
	s->stats.proto_errors++;
	rmq_log(RMQ_LOG_WARN, "bad local ring from %s: %s", lp->p->name, why);
	poll_del(local_sock(s), lp); /* nothing more from it */
	s->reactor.mem_on = local_sock(s)->npoll > 0;
	rmq_peer_fail(s, lp->p, -RMQ_EPROTO, why);
}

/*
 * A control message (CREDIT, RTS, FIN, SEG...): copied out whole before
 * the engine reads it, which decodes it again -- it must find what we
 * checked, whatever the peer writes meanwhile.
 */
static int
ctl_rx(struct rmq_socket *s, struct local_peer *lp, const struct rmq_hdr *h,
       const uint8_t *at, size_t n)
{
	uint8_t        small[512], *b = small;
	struct rmq_hdr again;

	if (n > sizeof(small) && (b = malloc(n)) == NULL) {
		s->stats.proto_errors++; /* dropped, as a slab would */
		return 0;
	}
	/* memcpy on the stack: below rmq_copy's slow phases (util.h), and
	 * the compiler sees that it fills small. */
	if (b == small)
		memcpy(b, at, n);
	else
		rmq_copy(b, at, n);
	if (rmq_hdr_decode(&again, b, n) != 0 ||
	    memcmp(&again, h, sizeof(again)) != 0) {
		if (b != small)
			free(b);
		local_bad(s, lp, "header changed while read");
		return -1;
	}
	s->on_msg(s, NULL, b, n, NULL);
	if (b != small)
		free(b);
	return 0;
}

/*
 * A record's later cache lines, asked for before we need them.  The reader
 * learns of a record from its prefix, on its first line; a 64-byte message
 * is 88 bytes with prefix and header, so two or three lines, and each came
 * over one after the other: the prefix's line, then the next when the
 * header or payload was read.  So a reader with nothing to take (quiet())
 * asks for the LRING_AHEAD lines after the one it polls: when the writer
 * stores there, those move to us with the prefix's.  A record that has
 * come has the rest of its first LRING_READ_AHEAD bytes asked for at once
 * (poll_one), so they travel while it is decoded and queued, not one by
 * one as the copy-out reaches them.  Measured on shm: faster one-way
 * from 64 B to 4 KiB in both of the host's placements, more than the two
 * lines alone; 8 KiB read ahead instead of 4 made 16 KiB slower; streams
 * no slower (docs/INTERNALS.md §17, "the local path").
 */
#define LRING_AHEAD      2
#define LRING_READ_AHEAD 4096

static inline void
lines_ahead(const struct rmq_lring *r, uint64_t from, uint64_t nlines)
{
	uint64_t i;

	for (i = 0; i < nlines; i++)
		__builtin_prefetch(r->d + ((from + i * 64) & (r->size - 1)),
		                   0, 3);
}

/* What p wrote into our ring since we last looked: 0 records, n, or -1
 * (p was dropped). */
static int
poll_one(struct rmq_socket *s, struct local_peer *lp)
{
	struct rmq_peer  *p = lp->p;
	struct rmq_lring *r = &lp->rx;
	struct rmq_rxent *e;
	struct rmq_hdr    h;
	uint64_t          start, pfx, off, room, n, lines;
	uint32_t          mlen;
	uint8_t          *at, hb[RMQ_HDR_SIZE];
	int               got = 0, type;

	/* At most a ring's worth a call: a writer that keeps writing does
	 * not keep us from the other peers. */
	start = lp->head;
	while (lp->head - start < r->size && p->state != RMQ_PEER_DEAD) {
		off  = lp->head & (r->size - 1);
		room = r->size - off;
		/* Where no record fits, the skip goes unsaid. */
		pfx = room < RMQ_LRING_MIN
		          ? RMQ_LRING_SKIP
		          : atomic_load_explicit(rmq_lring_pfx(r, off),
		                                 memory_order_acquire);
		if (pfx == RMQ_LRING_SKIP) {
			lp->head += room;
			local_settle(s, lp, lp->head);
			continue;
		}
		if (pfx == 0) {
			/* Nothing more yet.  A writer short of room that
			 * set want as we freed (rmq_lring_free). */
			if (rmq_lring_wanted(r) && lp->wake_len > 0)
				rmq_local_wake(s, lp);
			break;
		}
		mlen = (uint32_t) pfx;
		n    = rmq_lring_rec(mlen);
		if (pfx >> 32 != 0 || mlen < RMQ_HDR_SIZE || n > room ||
		    lp->head + n - lp->freed > r->size) {
			local_bad(s, lp, "a record prefix out of range");
			return -1;
		}
		at = r->d + off + RMQ_LRING_PFX;
		/* Its lines past those quiet() asked for, in flight together
		 * while we decode and queue it (see LRING_AHEAD). */
		lines = n < LRING_READ_AHEAD ? n : LRING_READ_AHEAD;
		lines = ((off & 63) + lines + 63) / 64;
		if (lines > LRING_AHEAD + 1)
			lines_ahead(r,
			            (off & ~(uint64_t) 63) +
			                (LRING_AHEAD + 1) * 64,
			            lines - LRING_AHEAD - 1);
		memcpy(hb, at, RMQ_HDR_SIZE); /* read once: it may write on */
		if (rmq_hdr_decode(&h, hb, mlen) != 0 || h.conn != p->id) {
			local_bad(s, lp, "bad header");
			return -1;
		}
		type = h.type & RMQ_MT_MASK;
		if (type == RMQ_MT_BATCH || type == RMQ_MT_RBATCH ||
		    type == RMQ_MT_RING || (h.type & RMQ_MT_F_INJECT)) {
			/* Never sent this way: their payloads live in slabs. */
			local_bad(s, lp, "a message type the ring never carries");
			return -1;
		}
		lp->head += n;
		got++;
		if (type == RMQ_MT_DATA) {
			p->credits += h.credits;
			e = rmq_rx_new(s, p, h.msgid);
			if (e != NULL) {
				e->path = RMQ_PATH_LOCAL;
				e->len  = h.len;
				e->data = at + RMQ_HDR_SIZE;
				e->tag  = lp->head;
				(void) rmq_rx_accept(s, p, e);
			}
		} else if (ctl_rx(s, lp, &h, at, mlen) != 0) {
			return -1;
		}
		/* Its bytes go back with it (DATA), or with the newest one
		 * still queued, or now. */
		local_settle(s, lp, lp->head);
	}
	return got;
}

/* Nothing to take from lp and nothing it waits for: a look at two
 * lines already in our cache, so that a socket of many quiet local
 * peers pays little for each. */
static bool
quiet(const struct local_peer *lp)
{
	const struct rmq_lring *r   = &lp->rx;
	uint64_t                off = lp->head & (r->size - 1);

	if (r->size - off < RMQ_LRING_MIN ||
	    atomic_load_explicit(rmq_lring_pfx(r, off),
	                         memory_order_relaxed) != 0)
		return false;
	/* The two lines after the prefix's: see LRING_AHEAD. */
	lines_ahead(r, (off & ~(uint64_t) 63) + 64, LRING_AHEAD);
	return atomic_load_explicit(&r->h->want, memory_order_relaxed) == 0;
}

static int
rings_poll(void *owner)
{
	struct rmq_socket *s = owner;
	struct rmq_local  *l = local_sock(s);
	struct local_peer *lp;
	struct rmq_peer   *p;
	int                i = 0, n, total = 0;

	while (l != NULL && i < l->npoll) {
		lp = l->poll[i];
		if (quiet(lp)) {
			i++;
			continue;
		}
		p = lp->p;
		rmq_peer_hold(p); /* what it sent may end it */
		n = poll_one(s, lp);
		total += n > 0 ? n : 0;
		if (i < l->npoll && l->poll[i] == lp)
			i++; /* else it left the list: the last one is here */
		rmq_peer_release(s, p);
	}
	return total;
}

/* Before the reactor blocks: wake me.  Records already there: 1 (then it
 * does not block). */
static int
rings_arm(void *owner)
{
	struct rmq_socket *s = owner;
	struct rmq_local  *l = local_sock(s);
	struct local_peer *lp;
	int                i, more = 0;

	for (i = 0; l != NULL && i < l->npoll; i++) {
		lp = l->poll[i];
		rmq_lring_arm(&lp->rx);
	}
	atomic_thread_fence(memory_order_seq_cst);
	for (i = 0; l != NULL && i < l->npoll; i++) {
		lp = l->poll[i];
		more |= rmq_lring_pending(&lp->rx, lp->head);
		if (rmq_lring_wanted(&lp->rx) && lp->wake_len > 0)
			rmq_local_wake(s, lp); /* after the fence: see rmq_lring_free */
	}
	return more;
}

static void
wake_ready(struct rmq_source *src, short revents, void *owner)
{
	struct rmq_socket *s = owner;
	struct rmq_local  *l = local_sock(s);
	char               b[64];
	int                i;

	RMQ_UNUSED(src);
	RMQ_UNUSED(revents);
	while (recv(l->wfd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
	/* Armed again at once: at every moment either a ring is armed or
	 * a wake waits in the socket, so RMQ_FD and every sleep on the
	 * sources see a write we have not taken (a stream costs its writer
	 * one wake per look at this socket, about one a millisecond). */
	for (i = 0; i < l->npoll; i++)
		rmq_lring_arm(&l->poll[i]->rx);
}

/* ---- the peer's life, the socket's ---- */

/* p leaves this link: back on the socket's first (its endpoint). */
static void
link_leave(struct rmq_socket *s, struct rmq_peer *p)
{
	if (!local_on(p))
		return;
	p->link = s->link0;
	if (local_sock(s) != NULL)
		local_sock(s)->gen++;
}

/* Every live peer of the socket (at least one) is on this link: the
 * reactor's mem_only (then it reads the CQ less often). */
static bool
local_only(void *owner)
{
	struct rmq_socket *s = owner;
	struct rmq_local  *l = local_sock(s);
	struct rmq_peer   *p;
	int                i, n = 0;

	if (l == NULL)
		return false;
	if (l->only_live != s->peers->nlive || l->only_gen != l->gen) {
		for (i = 0; i < s->peers->hi; i++) {
			p = rmq_peer_at(s, i);
			n += p != NULL && p->state == RMQ_PEER_LIVE &&
			     local_on(p);
		}
		l->only      = n > 0 && n == s->peers->nlive;
		l->only_live = s->peers->nlive;
		l->only_gen  = l->gen;
	}
	return l->only;
}

static void
local_peer_gone(struct rmq_socket *s, struct rmq_peer *p)
{
	struct local_peer *lp = local_of(p);

	link_leave(s, p);
	rmq_batch_hold(s, p, false);
	if (lp == NULL)
		return;
	rmq_lring_unmap(&lp->tx);
	if (local_sock(s) == NULL)
		return;
	poll_del(local_sock(s), lp);
	s->reactor.mem_on = local_sock(s)->npoll > 0;
}

static void
local_peer_fini(struct rmq_socket *s, struct rmq_peer *p)
{
	struct local_peer *lp = local_of(p);

	if (lp == NULL)
		return;
	link_leave(s, p);
	rmq_lring_unmap(&lp->tx);
	rx_free(s, lp);
	free(lp);
	p->path[RMQ_PATH_LOCAL] = NULL;
}

static bool
local_enabled(const struct rmq_socket *s)
{
	return s->ctx->cfg.local != RMQ_CFG_LOCAL_OFF;
}

static int
local_sock_init(struct rmq_socket *s)
{
	struct sockaddr_un a;
	socklen_t          len;
	struct rmq_local  *l;
	int                i, rc;

	if (!local_enabled(s) || local_sock(s) != NULL)
		return 0;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		return -RMQ_ENOMEM;
	l->wfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l->wfd < 0)
		goto fail;
	for (i = 0; i < 8; i++) {
		l->wid = (uint32_t) rmq_random64();
		rmq_wake_name(&a, &len, (uint32_t) getpid(), l->wid);
		if (bind(l->wfd, (struct sockaddr *) &a, len) == 0)
			break;
		if (errno != EADDRINUSE)
			goto fail;
	}
	if (i == 8)
		goto fail;
	rc = rmq_source_add(&s->reactor, &l->src, l->wfd, wake_ready);
	if (rc != 0)
		goto fail;
	s->ps->row[RMQ_PATH_LOCAL] = l;
	s->reactor.mem_poll    = rings_poll;
	s->reactor.mem_arm     = rings_arm;
	s->reactor.mem_only    = local_only;
	return 0;
fail:
	rmq_log(RMQ_LOG_WARN, "local path off: its wake socket: %s",
	        strerror(errno));
	if (l->wfd >= 0)
		close(l->wfd);
	free(l);
	return 0; /* the provider carries everything */
}

static void
local_sock_fini(struct rmq_socket *s)
{
	struct rmq_local *l = local_sock(s);

	if (l == NULL)
		return;
	s->reactor.mem_on = false;
	rmq_source_remove(&s->reactor, &l->src);
	close(l->wfd);
	free(l->poll);
	free(l);
	s->ps->row[RMQ_PATH_LOCAL] = NULL;
}


/* For rmq_info: what this link does here. */
static size_t
pow2_floor(size_t v)
{
	while ((v & (v - 1)) != 0)
		v &= v - 1;
	return v;
}

static bool
local_describe(const struct rmq_caps *c, const struct rmq_config *cfg,
               char *buf, size_t len)
{
	size_t ring = pow2_floor(cfg->local_ring);

	snprintf(buf, len, "peers on this host, any provider (local.enabled "
	         "%s, a %zu-byte ring for messages up to %zu bytes, larger "
	         "ones read from the sender's memory%s)",
	         cfg->local == RMQ_CFG_LOCAL_AUTO ? "auto"
	         : cfg->local == RMQ_CFG_LOCAL_ON ? "true"
	                                          : "false",
	         ring, ring / 4 - RMQ_HDR_SIZE,
	         c->rma_read ? "" : " -- not on this provider, which has no "
	                            "remote reads");
	return cfg->local != RMQ_CFG_LOCAL_OFF;
}

/*
 * The row for len bytes to p: its ring up to what the ring takes, larger
 * messages read out of our memory where the domain can serve the
 * fallback, else the endpoint's rows (their control messages still come
 * through the ring, in order).  A forced path leaves the choice to the
 * table.
 */
static int
local_choose(struct rmq_socket *s, struct rmq_peer *p, size_t len)
{
	const struct local_peer *lp = local_of(p);

	if (s->paths.force < 0 && (len <= lp->max || rmq_local_big(s)))
		return RMQ_PATH_LOCAL;
	return rmq_fabric_choose(s, p, len);
}

const struct rmq_link_ops rmq_link_local = {
	.name     = "local",
	.flags    = RMQ_LINK_F_HOST,
	.choose   = local_choose,
	.send_now = rmq_local_send_now,
	.put      = rmq_local_put,
	.flush    = rmq_local_flush,
};

const struct rmq_path_ops rmq_path_local = {
	.flags     = RMQ_ROW_F_OWN_HOLD,
	.rts_flag  = RMQ_RTS_F_CMA,
	.describe  = local_describe,
	.rx_types  = (1u << RMQ_MT_HELP) | (1u << RMQ_MT_HELPED),
	.on_rx     = rmq_local_on_rx,
	.can_carry = rmq_local_can_carry,
	.send      = rmq_local_send,
	.fetch     = rmq_local_fetch,
	.cancel    = rmq_rndv_cancel_rx,
	.release   = local_release,
	.peer_gone = local_peer_gone,
	.peer_fini = local_peer_fini,
	.hello_out = local_hello_out,
	.hello_in  = local_hello_in,
	.sock_init = local_sock_init,
	.sock_fini = local_sock_fini,
};
