/* Received messages, queued per peer until delivered (rxq.h). */
#include <stdlib.h>
#include <string.h>

#include "conn/peer.h"
#include "ep.h"
#include "paths/path.h"
#include "rxq.h"
#include "sock.h"
#include "util.h"

#define RMQ_RXENT_CACHE 64

struct rmq_rxent *
rmq_rxent_new(struct rmq_socket *s)
{
	struct rmq_rxent *e = s->rx.free;

	if (e == NULL)
		return calloc(1, sizeof(*e));
	s->rx.free = e->next;
	s->rx.nfree--;
	memset(e, 0, sizeof(*e));
	return e;
}

void
rmq_rxent_free(struct rmq_socket *s, struct rmq_rxent *e)
{
	const struct rmq_path_ops *row = s->path_ops[e->path];

	if (e->slab != NULL)
		rmq_slab_unref(e->slab);
	if (row->release != NULL && e->peer != NULL)
		row->release(s, e);
	free(e->heap);
	if (s->rx.nfree < RMQ_RXENT_CACHE) {
		e->next    = s->rx.free;
		s->rx.free = e;
		s->rx.nfree++;
		return;
	}
	free(e);
}

void
rmq_rxent_cache_drop(struct rmq_socket *s)
{
	struct rmq_rxent *e;

	while ((e = s->rx.free) != NULL) {
		s->rx.free = e->next;
		free(e);
	}
	s->rx.nfree = 0;
}

void
rmq_rxq_push(struct rmq_socket *s, struct rmq_peer *p, struct rmq_rxent *e)
{
	s->rx.nqueued++;
	e->next = NULL;
	if (p->q.tail != NULL)
		p->q.tail->next = e;
	else
		p->q.head = e;
	p->q.tail = e;
	p->q.len++;
}

struct rmq_rxent *
rmq_rxq_pop(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_rxent *e = p->q.head;

	if (e == NULL)
		return NULL;
	s->rx.nqueued--;
	p->q.head = e->next;
	if (p->q.head == NULL)
		p->q.tail = NULL;
	p->q.len--;
	e->next = NULL;
	return e;
}

void
rmq_rxq_clear(struct rmq_socket *s, struct rmq_peer *p)
{
	struct rmq_rxent *e;

	while ((e = rmq_rxq_pop(s, p)) != NULL)
		rmq_rxent_free(s, e);
}
