/* The provider registry: order is preference for provider "auto". */
#include <string.h>

#include "prov.h"

static const struct rmq_prov *const rmq_provs[] = {
	&rmq_prov_verbs,
	&rmq_prov_efa,
	&rmq_prov_tcp,
	&rmq_prov_sockets,
	&rmq_prov_shm,
	NULL,
};

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
