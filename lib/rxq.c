/* Received messages, queued per peer until delivered (rxq.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ep.h"
#include "path_ops.h"
#include "rxq.h"
#include "socket.h"
#include "util.h"

/*
 * Spare entries a socket keeps: 64, or as many as it has had queued at
 * once, up to 4096 (about 500 KiB).  A stream queues a window's worth
 * (rmq_bw: 1,000; a BATCH alone brings up to a hundred): with only 64
 * kept, every message past them was a calloc and a free (a visible
 * share of a 64 B tcp PUSH/PULL stream's profile: docs/INTERNALS.md §17).
 */
#define RMQ_RXENT_CACHE     64
#define RMQ_RXENT_CACHE_MAX 4096

struct rmq_rxent *
rmq_rxent_new(struct rmq_socket *s)
{
	struct rmq_rxent *e = s->rx->free;

	if (e == NULL)
		return calloc(1, sizeof(*e));
	s->rx->free = e->next;
	s->rx->nfree--;
	memset(e, 0, sizeof(*e));
	return e;
}

void
rmq_rxent_free(struct rmq_socket *s, struct rmq_rxent *e)
{
	const struct rmq_path_ops *row = s->path_ops[e->path];

	if (e->slab != NULL)
		rmq_slab_unref(e->slab);
	if (row->release != NULL && e->peer != NULL && !e->made)
		row->release(s, e);
	if (e->heap != NULL)
		free(e->heap); /* the call alone, for NULL, on every message */
	if (s->rx->nfree < RMQ_RXENT_CACHE || s->rx->nfree < s->rx->peak) {
		e->next    = s->rx->free;
		s->rx->free = e;
		s->rx->nfree++;
		return;
	}
	free(e);
}

void
rmq_rxent_cache_drop(struct rmq_socket *s)
{
	struct rmq_rxent *e;

	while ((e = s->rx->free) != NULL) {
		s->rx->free = e->next;
		free(e);
	}
	s->rx->nfree = 0;
}

void
rmq_rxq_push(struct rmq_socket *s, struct rmq_rxq *q, struct rmq_rxent *e)
{
	if (++s->rx->nqueued > s->rx->peak &&
	    s->rx->nqueued <= RMQ_RXENT_CACHE_MAX)
		s->rx->peak = s->rx->nqueued;
	e->next = NULL;
	if (q->tail != NULL)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	q->len++;
	if (e->more) {
		/* Its message is taken once whole, and its sender may wait
		 * for this frame's pull to send the rest: pull it in the
		 * background, on every wait's idle rounds. */
		if (e->rndv && e->heap == NULL) {
			s->rx->fetch_more   = true;
			s->reactor.idle_any = true;
		}
		q->open++;
		return;
	}
	q->open = 0;
	q->msgs++;
	s->rx->nmsgs++;
}

bool
rmq_rxq_hold_to(struct rmq_rxq *q, int path, uint64_t end)
{
	struct rmq_rxent *e, *last = NULL;

	if (q->tail != NULL && q->tail->path == path) {
		last = q->tail;
	} else {
		for (e = q->head; e != NULL; e = e->next)
			if (e->path == path)
				last = e;
	}
	if (last == NULL)
		return false;
	if (last->tag < end)
		last->tag = end;
	return true;
}

struct rmq_rxent *
rmq_rxq_pop(struct rmq_socket *s, struct rmq_rxq *q)
{
	struct rmq_rxent *e = q->head;

	if (e == NULL)
		return NULL;
	s->rx->nqueued--;
	q->head = e->next;
	if (q->head == NULL)
		q->tail = NULL;
	q->len--;
	if (q->msgs == 0)
		q->open--; /* whole messages come first: this is the tail's */
	else if (!e->more) {
		q->msgs--;
		s->rx->nmsgs--;
	}
	e->next = NULL;
	return e;
}

size_t
rmq_rxq_trim_open(struct rmq_socket *s, struct rmq_rxq *q)
{
	struct rmq_rxent *e, *keep = NULL, *next;
	size_t            n, k;

	if (q->open == 0)
		return 0;
	n = q->len - q->open; /* the whole messages' frames stay */
	for (k = 0, e = q->head; k < n; k++, e = e->next)
		keep = e;
	for (n = 0, e = keep != NULL ? keep->next : q->head; e != NULL;
	     e = next) {
		next = e->next;
		n += !e->nocredit;
		s->rx->nqueued--;
		/* A rendezvous frame's sender waits for our word. */
		if (e->rndv && e->heap == NULL &&
		    s->path_ops[e->path]->cancel != NULL)
			s->path_ops[e->path]->cancel(s, e, ECANCELED);
		rmq_rxent_free(s, e);
	}
	if (keep != NULL)
		keep->next = NULL;
	else
		q->head = NULL;
	q->tail     = keep;
	q->len     -= q->open;
	q->open     = 0;
	q->open_len = 0;
	return n;
}

void
rmq_rxq_clear(struct rmq_socket *s, struct rmq_rxq *q)
{
	struct rmq_rxent *e;

	while ((e = rmq_rxq_pop(s, q)) != NULL)
		rmq_rxent_free(s, e);
}
