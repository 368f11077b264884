/*
 * The patterns.  Adding one: its file, and one line in RMQ_PATTERNS.  Its
 * config section (thresholds.SECTION) and its wire ids are in its ops.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "pattern.h"

#define RMQ_PATTERNS(X) \
	X(rmq_pattern_pair) \
	X(rmq_pattern_req)  \
	X(rmq_pattern_rep)  \
	X(rmq_pattern_pub)  \
	X(rmq_pattern_sub)  \
	X(rmq_pattern_push) \
	X(rmq_pattern_pull)

#define DECLARE(p) extern const struct rmq_pattern_ops p;
RMQ_PATTERNS(DECLARE)
#undef DECLARE

#define ENTRY(p) &p,
static const struct rmq_pattern_ops *const patterns[] = {
	RMQ_PATTERNS(ENTRY) NULL,
};
#undef ENTRY

const struct rmq_pattern_ops *
rmq_pattern_find(int type)
{
	const struct rmq_pattern_ops *const *p;

	for (p = patterns; *p != NULL; p++)
		if ((*p)->type == type)
			return *p;
	return NULL;
}

const struct rmq_pattern_ops *const *
rmq_pattern_all(void)
{
	return patterns;
}

/* "pair, reqrep": the sections there are, each once. */
static void
sections(char *buf, size_t len)
{
	const struct rmq_pattern_ops *const *p, *const *q;
	size_t                              n = 0;

	buf[0] = '\0';
	for (p = patterns; *p != NULL; p++) {
		for (q = patterns; q != p; q++)
			if (strcmp((*q)->section, (*p)->section) == 0)
				break;
		if (q == p && n < len)
			n += (size_t) snprintf(buf + n, len - n, "%s%s",
			                       n ? ", " : "", (*p)->section);
	}
}

int
rmq_pattern_check_sections(const struct rmq_config *cfg, char *err,
                           size_t errlen)
{
	const struct rmq_pattern_ops *const *p;
	char                                where[300], have[128];
	int                                 i;

	for (i = 0; i < cfg->nsect; i++) {
		for (p = patterns; *p != NULL; p++)
			if (strcmp((*p)->section, cfg->sect[i].name) == 0)
				break;
		if (*p != NULL)
			continue;
		sections(have, sizeof(have));
		rmq_config_section_where(cfg, &cfg->sect[i], where,
		                         sizeof(where));
		snprintf(err, errlen,
		         "%s: no pattern reads a section '%s' (the patterns' "
		         "sections: %s)",
		         where, cfg->sect[i].name, have);
		return -RMQ_ECONFIG;
	}
	return 0;
}
