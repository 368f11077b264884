/*
 * PUB/SUB's topics (topics.h): sets of prefixes and the frames that carry
 * them.
 */
#include <stdlib.h>
#include <string.h>

#include "rmq.h"
#include "topics.h"
#include "wire.h"

int
ps_prefix_find(const struct prefixes *ps, const uint8_t *b, size_t len)
{
	int i;

	for (i = 0; i < ps->n; i++)
		if (ps->v[i].len == len &&
		    (len == 0 || memcmp(ps->v[i].b, b, len) == 0))
			return i;
	return -1;
}

int
ps_prefix_add(struct prefixes *ps, const uint8_t *b, size_t len)
{
	struct prefix *nv;
	int            cap;

	if (ps->n == ps->cap) {
		cap = ps->cap ? 2 * ps->cap : 8;
		nv  = realloc(ps->v, (size_t) cap * sizeof(*nv));
		if (nv == NULL)
			return -RMQ_ENOMEM;
		ps->v   = nv;
		ps->cap = cap;
	}
	ps->v[ps->n].b = malloc(len ? len : 1);
	if (ps->v[ps->n].b == NULL)
		return -RMQ_ENOMEM;
	if (len > 0)
		memcpy(ps->v[ps->n].b, b, len);
	ps->v[ps->n].len   = len;
	ps->v[ps->n].count = 1;
	ps->n++;
	if (len == 0)
		ps->nall++;
	return 0;
}

void
ps_prefix_del(struct prefixes *ps, int i)
{
	if (ps->v[i].len == 0)
		ps->nall--;
	free(ps->v[i].b);
	ps->v[i] = ps->v[--ps->n];
}

void
ps_prefixes_free(struct prefixes *ps)
{
	while (ps->n > 0)
		ps_prefix_del(ps, ps->n - 1);
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

bool
ps_match(const struct prefixes *ps, const uint8_t *b, size_t len)
{
	int i;

	if (ps->nall > 0)
		return true;
	for (i = 0; i < ps->n; i++)
		if (ps->v[i].len <= len &&
		    memcmp(ps->v[i].b, b, ps->v[i].len) == 0)
			return true;
	return false;
}

size_t
ps_frame(uint8_t *b, int op, uint32_t seq, const void *body, size_t len)
{
	b[0] = (uint8_t) op;
	rmq_put32(b + 1, seq);
	if (len > 0)
		memcpy(b + SUB_FRAME_HDR, body, len);
	return SUB_FRAME_HDR + len;
}
