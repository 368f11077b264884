/* Peers of a socket: the table and each peer's life (peer.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_domain.h>

#include "conn/peer.h"
#include "ep.h"
#include "path_ops.h"
#include "pattern_ops.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

static int
table_grow(struct rmq_peers *t)
{
	int   ncap = t->cap ? 2 * t->cap : 8;
	void *np, *ng;

	if (ncap > 65536)
		return -RMQ_ENOMEM;
	np = realloc(t->slot, (size_t) ncap * sizeof(*t->slot));
	if (np == NULL)
		return -RMQ_ENOMEM;
	t->slot = np;
	ng = realloc(t->gen, (size_t) ncap * sizeof(*t->gen));
	if (ng == NULL)
		return -RMQ_ENOMEM;
	t->gen = ng;
	memset(t->slot + t->cap, 0,
	       (size_t) (ncap - t->cap) * sizeof(*t->slot));
	memset(t->gen + t->cap, 0, (size_t) (ncap - t->cap) * sizeof(*t->gen));
	t->cap = ncap;
	return 0;
}

struct rmq_peer *
rmq_peer_new(struct rmq_socket *s)
{
	struct rmq_peers *t = s->peers;
	struct rmq_peer  *p;
	int               i;

	for (i = 0; i < t->cap; i++)
		if (t->slot[i] == NULL)
			break;
	if (i == t->cap && table_grow(t) != 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	if (s->pat->peer_size > 0 &&
	    (p->pat = calloc(1, s->pat->peer_size)) == NULL) {
		free(p);
		return NULL;
	}
	t->gen[i]++;
	p->id          = (uint32_t) i | ((uint32_t) t->gen[i] << 16);
	p->chan.src.fd  = -1;
	p->chan.src.idx = -1;
	p->fiaddr      = FI_ADDR_UNSPEC;
	p->shard       = -1;
	p->state       = RMQ_PEER_NEW;
	p->link        = s->link0;
	t->slot[i]     = p;
	t->n++;
	if (i >= t->hi)
		t->hi = i + 1;
	return p;
}

struct rmq_peer *
rmq_peer_lookup(struct rmq_socket *s, uint32_t id)
{
	uint32_t         i = id & 0xffff;
	struct rmq_peer *p;

	if (i >= (uint32_t) s->peers->cap)
		return NULL;
	p = s->peers->slot[i];
	return p != NULL && p->id == id ? p : NULL;
}

struct rmq_peer *
rmq_peer_at(struct rmq_socket *s, int i)
{
	return i >= 0 && i < s->peers->cap ? s->peers->slot[i] : NULL;
}

void
rmq_peer_live(struct rmq_socket *s, struct rmq_peer *p)
{
	p->state = RMQ_PEER_LIVE;
	s->peers->nlive++;
	s->peers->lost = false;
	s->stats.peers_connected++;
	if (s->pat->peer_added != NULL)
		s->pat->peer_added(s->pstate, s, p, p->pat);
	if (s->on_live != NULL && p->state == RMQ_PEER_LIVE)
		s->on_live(s, p);
}

bool
rmq_peer_usable(const struct rmq_peer *p)
{
	return p != NULL && p->state == RMQ_PEER_LIVE;
}

bool
rmq_peer_has_credit(const struct rmq_peer *p)
{
	return p->state == RMQ_PEER_LIVE && p->credits > 0 &&
	       p->ntx < RMQ_TX_PEER_MAX;
}

/* The control channel goes: out of the reactor's sight, closed. */
static void
chan_close(struct rmq_socket *s, struct rmq_peer *p)
{
	if (p->chan.src.fd < 0)
		return;
	rmq_source_remove(&s->reactor, &p->chan.src);
	close(p->chan.src.fd);
	p->chan.src.fd = -1;
}

int
rmq_peer_shard_pick(struct rmq_socket *s, struct rmq_peer *p, char *reason,
                    size_t rl)
{
	int k;

	if (p->shard >= 0)
		return 0;
	k = rmq_ep_shard_take(s, reason, rl);
	if (k < 0)
		return k;
	p->shard = k;
	/* Shard 0 is s->ep itself: followed there, never left dangling
	 * when the socket closes it. */
	p->ep    = k == 0 ? NULL : rmq_ep_shard_ep(s, k);
	return 0;
}

void
rmq_peer_destroy(struct rmq_socket *s, struct rmq_peer *p)
{
	int i;

	rmq_rxq_clear(s, &p->q);
	for (i = 0; i < RMQ_PATHS; i++)
		if (s->path_ops[i]->peer_fini != NULL)
			s->path_ops[i]->peer_fini(s, p);
	if (p->shard >= 0)
		rmq_ep_shard_put(s, p->shard, p->fiaddr);
	chan_close(s, p);
	if (p->gone != NULL)
		p->gone(s, p); /* its maker lets go of it */
	if (p->state == RMQ_PEER_LIVE)
		s->peers->nlive--;
	s->peers->slot[p->id & 0xffff] = NULL;
	s->peers->n--;
	while (s->peers->hi > 0 && s->peers->slot[s->peers->hi - 1] == NULL)
		s->peers->hi--;
	free(p->pat);
	free(p);
}

void
rmq_peer_reap(struct rmq_socket *s, struct rmq_peer *p)
{
	if (p->state == RMQ_PEER_DEAD && p->q.len == 0 && p->pending == 0)
		rmq_peer_destroy(s, p);
}

void
rmq_peer_fail(struct rmq_socket *s, struct rmq_peer *p, int err,
              const char *why)
{
	bool was_live = p->state == RMQ_PEER_LIVE ||
	                p->state == RMQ_PEER_CLOSING;
	int  i;

	if (p->state == RMQ_PEER_DEAD) {
		rmq_peer_reap(s, p); /* its last op may just have ended */
		return;
	}
	rmq_peer_hold(p); /* completing its sends may reap it */
	if (err != 0)
		rmq_log(RMQ_LOG_WARN, "peer %s: %s", p->name, why);
	else
		rmq_log(RMQ_LOG_INFO, "peer %s: %s", p->name, why);
	if (p->state == RMQ_PEER_LIVE)
		s->peers->nlive--;
	p->state = RMQ_PEER_DEAD;
	s->stats.peers_lost++;
	/* A message it had not finished sending never will be: its frames
	 * go (a message is delivered whole or not at all). */
	(void) rmq_rxq_trim_open(s, &p->q);
	if (err != 0 && s->pat->report_lost)
		s->peers->lost = true; /* a goodbye is not an error */
	chan_close(s, p);
	if (p->gone != NULL)
		p->gone(s, p); /* e.g. its connect tries again */
	for (i = 0; i < RMQ_PATHS; i++)
		if (s->path_ops[i]->peer_gone != NULL)
			s->path_ops[i]->peer_gone(s, p);
	if (was_live && s->pat->peer_gone != NULL)
		s->pat->peer_gone(s->pstate, s, p, p->pat);
	rmq_peer_release(s, p);
}

void
rmq_peer_closing(struct rmq_socket *s, struct rmq_peer *p)
{
	if (p->state != RMQ_PEER_LIVE)
		return;
	p->state = RMQ_PEER_CLOSING;
	s->peers->nlive--;
}

void
rmq_peer_hold(struct rmq_peer *p)
{
	p->pending++;
}

void
rmq_peer_release(struct rmq_socket *s, struct rmq_peer *p)
{
	p->pending--;
	rmq_peer_reap(s, p);
}

void
rmq_peers_destroy_all(struct rmq_socket *s)
{
	struct rmq_peer *p;
	int              i;

	for (i = 0; i < s->peers->cap; i++) {
		p = s->peers->slot[i];
		if (p == NULL)
			continue;
		/* The pattern lets go of what it keeps for a peer still
		 * there (a PUB's filters and log state). */
		if ((p->state == RMQ_PEER_LIVE || p->state == RMQ_PEER_CLOSING) &&
		    s->pat->peer_gone != NULL)
			s->pat->peer_gone(s->pstate, s, p, p->pat);
		p->pending = 0;
		rmq_peer_destroy(s, p);
	}
	free(s->peers->slot);
	free(s->peers->gen);
	memset(s->peers, 0, sizeof(*s->peers));
}

static inline bool
picked(const struct rmq_peer *p, enum rmq_pick pick)
{
	switch (pick) {
	case RMQ_PICK_USABLE:
		return p->state == RMQ_PEER_LIVE;
	case RMQ_PICK_QUEUED:
		return p->q.msgs > 0; /* a whole message, its last frame in */
	default: /* RMQ_PICK_WRITABLE */
		return rmq_peer_has_credit(p);
	}
}

struct rmq_peer *
rmq_peer_next(struct rmq_socket *s, int *cursor, enum rmq_pick pick)
{
	struct rmq_peer *p;
	int              i, k, cap = s->peers->hi; /* none free past it */

	i = *cursor < cap ? *cursor : 0;
	for (k = 0; k < cap; k++, i = i + 1 < cap ? i + 1 : 0) {
		p = s->peers->slot[i];
		if (p != NULL && picked(p, pick)) {
			*cursor = i + 1 < cap ? i + 1 : 0;
			return p;
		}
	}
	return NULL;
}

bool
rmq_peer_any_alive(struct rmq_socket *s)
{
	int i;

	if (s->peers->nlive > 0)
		return true; /* the common case, checked without a scan */
	for (i = 0; i < s->peers->cap; i++)
		if (s->peers->slot[i] != NULL &&
		    s->peers->slot[i]->state != RMQ_PEER_DEAD)
			return true; /* a peer that may still send */
	return false;
}
