/*
 * Peers of a socket.  A peer's id is its slot in s->peers plus a 16-bit
 * generation, so a header naming a peer that has gone (and whose slot was
 * reused) is recognised and dropped.
 *
 *   new --handshake--> LIVE --BYE--> CLOSING --all in--> DEAD --empty--> freed
 *                        \________EOF / fabric error____/
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pattern.h"
#include "rmq_int.h"

struct rmq_peer *
rmq_peer_new(struct rmq_socket *s)
{
	struct rmq_peer *p;
	int              i, ncap;
	void            *np, *ng;

	for (i = 0; i < s->peers_cap; i++)
		if (s->peers[i] == NULL)
			break;
	if (i == s->peers_cap) {
		ncap = s->peers_cap ? 2 * s->peers_cap : 8;
		if (ncap > 65536)
			return NULL;
		np = realloc(s->peers, (size_t) ncap * sizeof(*s->peers));
		if (np == NULL)
			return NULL;
		s->peers = np;
		ng = realloc(s->peer_gen, (size_t) ncap * sizeof(*s->peer_gen));
		if (ng == NULL)
			return NULL;
		s->peer_gen = ng;
		memset(s->peers + s->peers_cap, 0,
		       (size_t) (ncap - s->peers_cap) * sizeof(*s->peers));
		memset(s->peer_gen + s->peers_cap, 0,
		       (size_t) (ncap - s->peers_cap) * sizeof(*s->peer_gen));
		s->peers_cap = ncap;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	s->peer_gen[i]++;
	p->id     = (uint32_t) i | ((uint32_t) s->peer_gen[i] << 16);
	p->fd     = -1;
	p->fiaddr = FI_ADDR_UNSPEC;
	s->peers[i] = p;
	s->npeers++;
	return p;
}

struct rmq_peer *
rmq_peer_lookup(struct rmq_socket *s, uint32_t id)
{
	uint32_t         i = id & 0xffff;
	struct rmq_peer *p;

	if (i >= (uint32_t) s->peers_cap)
		return NULL;
	p = s->peers[i];
	return p != NULL && p->id == id ? p : NULL;
}

bool
rmq_peer_usable(const struct rmq_peer *p)
{
	return p != NULL && p->state == RMQ_PEER_LIVE;
}

void
rmq_peer_destroy(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_rxent *e;

	while ((e = rmq_rxq_pop(s, p)) != NULL) {
		e->ring_end = 0; /* no credits for a peer that is gone */
		rmq_rxent_free(s, e);
	}
	if (p->seg != NULL)
		rmq_rxent_free(s, p->seg);
	p->seg = NULL;
	rmq_ring_rx_free(p);
	if (p->fiaddr != FI_ADDR_UNSPEC && s->av != NULL)
		fi_av_remove(s->av, &p->fiaddr, 1, 0);
	if (p->fd >= 0)
		close(p->fd);
	if (p->state == RMQ_PEER_LIVE)
		s->nlive--;
	s->peers[p->id & 0xffff] = NULL;
	s->npeers--;
	free(p);
}

void
rmq_peer_reap(struct rmq_socket *s, struct rmq_peer *p)
{
	if (p->state == RMQ_PEER_DEAD && p->qlen == 0 && p->pending == 0)
		rmq_peer_destroy(s, p);
}

void
rmq_peer_fail(struct rmq_socket *s, struct rmq_peer *p, int err,
              const char *why)
{
	struct rmq_rndv_tx *r, *next;

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
		s->nlive--;
	p->state = RMQ_PEER_DEAD;
	s->stats.peers_lost++;
	if (err != 0 && s->ops->report_lost)
		s->lost_peer = true; /* a goodbye is not an error */
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	/* Rendezvous sends it will never read: revoke and fail them. */
	for (r = s->rndv; r != NULL; r = next) {
		next = r->next;
		if (r->peer == p && !r->done)
			rmq_rndv_complete(s, r, -RMQ_ECONNRESET);
	}
	if (s->ops->peer_gone != NULL)
		s->ops->peer_gone(s->pstate, s, p);
	rmq_peer_release(s, p);
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
