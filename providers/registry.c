/*
 * The provider registry.  Its one line is the list of names in
 * providers/meson.build, in order of preference for provider "auto";
 * prov_rows.h, generated from it, lists the rows here.  Everything that
 * lists providers to a user (the config's choices and knob keys, usage
 * texts, messages) asks these functions.
 */
#include <stdio.h>
#include <string.h>

#include <rdma/fabric.h>

#include "prov.h"

#define ROW(n) &rmq_prov_##n,

static const struct rmq_prov *const rmq_provs[] = {
	RMQ_PROV_ROWS(ROW) NULL,
};

_Static_assert(sizeof(rmq_provs) / sizeof(rmq_provs[0]) == RMQ_PROV_NROWS + 1,
               "RMQ_PROV_NROWS counts the rows");

const struct rmq_prov *const *
rmq_prov_all(void)
{
	return rmq_provs;
}

const struct rmq_prov *
rmq_prov_by_name(const char *name)
{
	const struct rmq_prov *const *p;

	for (p = rmq_provs; *p != NULL; p++)
		if (strcmp((*p)->name, name) == 0 ||
		    strcmp((*p)->fi_prov, name) == 0 ||
		    ((*p)->v2 != NULL && strcmp((*p)->v2->fi_prov, name) == 0))
			return rmq_prov_running(*p);
	return NULL;
}

const struct rmq_prov *
rmq_prov_running(const struct rmq_prov *p)
{
	if (p != NULL && p->v2 != NULL && FI_MAJOR(fi_version()) >= 2)
		return p->v2;
	return p;
}

int
rmq_prov_index(const struct rmq_prov *p)
{
	int i;

	for (i = 0; rmq_provs[i] != NULL; i++)
		if (rmq_provs[i] == p || rmq_provs[i]->v2 == p)
			return i;
	return -1;
}

/* Where a row comes in a listing: same host only, any network, a NIC. */
static int
listed_rank(const struct rmq_prov *p)
{
	if (p->flags & RMQ_PROV_LOCAL_ONLY)
		return 0;
	return (p->flags & RMQ_PROV_HW) ? 2 : 1;
}

const struct rmq_prov *
rmq_prov_listed(size_t i)
{
	const struct rmq_prov *const *p;
	size_t                        seen = 0;
	int                           rank;

	for (rank = 0; rank <= 2; rank++)
		for (p = rmq_provs; *p != NULL; p++) {
			if (listed_rank(*p) != rank)
				continue;
			if (seen == i)
				return *p;
			seen++;
		}
	return NULL;
}

void
rmq_prov_names(char *buf, size_t len, const char *sep, const char *last)
{
	const struct rmq_prov *p;
	size_t                 i, n = 0;
	int                    w;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; (p = rmq_prov_listed(i)) != NULL; i++) {
		w = snprintf(buf + n, len - n, "%s%s",
		             i == 0                            ? ""
		             : rmq_prov_listed(i + 1) == NULL ? last
		                                               : sep,
		             p->name);
		if (w < 0 || (size_t) w >= len - n)
			break; /* cut short: buf holds what fitted */
		n += (size_t) w;
	}
}
