/*
 * The provider registry.  Its one line is the list of names in
 * providers/meson.build, in order of preference for provider "auto";
 * prov_rows.h, generated from it, lists the rows here.
 */
#include <string.h>

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
		    strcmp((*p)->fi_prov, name) == 0)
			return *p;
	return NULL;
}
