/*
 * The patterns.  Adding one: its file, and one line in RMQ_PATTERNS.  Its
 * config section (thresholds.SECTION) and its wire ids are in its ops.
 *
 * The registry sits on top: the public rmq_ctx_new and rmq_socket_open
 * are here, and open the core's context and socket with what the patterns
 * say (a socket's ops, the config sections they read), as nng's
 * nng_req0_open calls nni_proto_open.  The core never calls up into it.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "pattern.h"
#include "util.h"

#define RMQ_PATTERNS(X) \
	X(rmq_pattern_pair) \
	X(rmq_pattern_req)  \
	X(rmq_pattern_rep)  \
	X(rmq_pattern_pub)  \
	X(rmq_pattern_sub)  \
	X(rmq_pattern_push) \
	X(rmq_pattern_pull) \
	X(rmq_pattern_dealer) \
	X(rmq_pattern_router)

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

/*
 * Every thresholds.SECTION of the config must be some pattern's: 0, or
 * -RMQ_ECONFIG with "FILE:LINE:COL: thresholds.X: ..." in err.
 */
static int
check_sections(const struct rmq_config *cfg, char *err, size_t errlen)
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

int
rmq_ctx_new(rmq_ctx **ctxp, const char *config_path)
{
	return rmq_ctx_open(ctxp, config_path, check_sections);
}

/* "RMQ_PAIR, RMQ_REQ": the socket types there are, as rmq.h spells them. */
static void
type_names(char *buf, size_t len)
{
	const struct rmq_pattern_ops *const *p;
	const char                          *c;
	size_t                               n = 0;

	buf[0] = '\0';
	for (p = patterns; *p != NULL && n < len; p++) {
		n += (size_t) snprintf(buf + n, len - n, "%sRMQ_",
		                       n ? ", " : "");
		for (c = (*p)->name; *c != '\0' && n + 1 < len; c++)
			buf[n++] = (char) toupper((unsigned char) *c);
		if (n < len)
			buf[n] = '\0';
	}
}

int
rmq_socket_open(rmq_ctx *ctx, int type, rmq_socket **sp)
{
	const struct rmq_pattern_ops *ops;
	char                          names[128];

	if (ctx == NULL || sp == NULL)
		return -RMQ_EINVAL;
	*sp = NULL;
	ops = rmq_pattern_find(type);
	if (ops == NULL) {
		type_names(names, sizeof(names));
		rmq_log(RMQ_LOG_INFO, "socket type %d does not exist (%s)",
		        type, names);
		return -RMQ_EINVAL;
	}
	return rmq_sock_open(ctx, ops, sp);
}
