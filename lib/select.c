/*
 * The path selector: for a message size, which path carries it.
 *
 *   0 .. inject_max      inject     (header + payload <= inject_size)
 *   .. eager_max         eager      (copy into a tx slot, multi-recv slab)
 *   .. ring_max          ring       (fi_writedata into the peer's ring),
 *                                   when the provider can and
 *                                   ring_max > eager_max
 *   above                rndv_read | rndv_write | rndv_send | seg
 *
 * or one forced path for every size (thresholds.path, RMQ_PATH).
 *
 * Each threshold comes, in increasing precedence, from the provider row
 * (measured, in providers/) or fi_info, the YAML file (or an rmq_tune
 * file), the environment, the pattern's own section of the file
 * (thresholds.SECTION, named by the pattern), the section for the socket's
 * name (thresholds.sockets.NAME), and socket options; the table remembers
 * which, and rmq_info prints it.  This file is the only place that order
 * is written down: the socket's table and the domain's write ordering
 * (rmq_wants_ring) both come from it.
 */
#include <stdio.h>
#include <string.h>

#include "rmq.h"
#include "select.h"
#include "util.h"
#include "wire.h"

_Static_assert((int) RMQ_TH_INJECT == (int) RMQ_CFG_PK_INJECT &&
                   (int) RMQ_TH_EAGER == (int) RMQ_CFG_PK_EAGER &&
                   (int) RMQ_TH_RING == (int) RMQ_CFG_PK_RING &&
                   (int) RMQ_TH_RNDV == (int) RMQ_CFG_PK_RNDV &&
                   (int) RMQ_TH_FORCE == (int) RMQ_CFG_PK_PATH &&
                   (int) RMQ_TH_FANOUT == (int) RMQ_CFG_PK_FANOUT &&
                   (int) RMQ_TH_COUNT == (int) RMQ_CFG_NPK,
               "a section's keys index the table's sources");

const char *
rmq_src_name(int src)
{
	switch (src) {
	case RMQ_SRC_ROW:
		return "provider row";
	case RMQ_SRC_INFO:
		return "fi_info";
	case RMQ_SRC_FILE:
		return "YAML";
	case RMQ_SRC_ENV:
		return "environment";
	case RMQ_SRC_TUNED:
		return "tuned";
	case RMQ_SRC_OPT:
		return "socket option";
	case RMQ_SRC_CAPS:
		return "provider cannot do better";
	case RMQ_SRC_NAMED:
		return "YAML, socket name";
	default:
		return "?";
	}
}

/* The rows' ranges, and the short way: the first range's row, if it has
 * one. */
static void
rows_of(struct rmq_path_table *t, const struct rmq_caps *c)
{
	const struct rmq_path_ops *row;
	int                        i, r;

	t->rows = c->rows;
	memset(t->range_row, -1, sizeof(t->range_row));
	t->send_now = NULL;
	for (i = 0; c->rows != NULL && i < RMQ_PATHS; i++) {
		row = c->rows[i];
		if (rmq_path_kind(i) == RMQ_ROW_RANGE && row->range > 0 &&
		    row->range < RMQ_RANGES)
			t->range_row[row->range] = (int8_t) i;
	}
	for (r = 1; r < RMQ_RANGES; r++)
		if (t->range_row[r] >= 0) {
			t->send_now = c->rows[t->range_row[r]]->send_now;
			break;
		}
}

/* A config value's RMQ_CFG_SRC_* as the table says it. */
static int
src_of(const struct rmq_config *cfg, int cfg_src)
{
	switch (cfg_src) {
	case RMQ_CFG_SRC_FILE:
		return cfg->tuned ? RMQ_SRC_TUNED : RMQ_SRC_FILE;
	case RMQ_CFG_SRC_ENV:
		return RMQ_SRC_ENV;
	default:
		return RMQ_SRC_ROW;
	}
}

/* The source of a global key of the config, by its schema name. */
static int
cfg_src(const struct rmq_config *cfg, const char *key)
{
	int i = rmq_config_key_index(key);

	return cfg == NULL || i < 0 ? RMQ_SRC_ROW : src_of(cfg, cfg->src[i]);
}

static size_t
ring_cap(const struct rmq_config *cfg)
{
	size_t slots = cfg != NULL ? (size_t) cfg->ring_slots
	                           : RMQ_CFG_RING_SLOTS;
	size_t slot  = cfg != NULL ? cfg->ring_slot_size
	                           : RMQ_CFG_RING_SLOT_SIZE;

	/* A message takes at most a quarter of the ring (credits, wrap). */
	if (slots < 4)
		return 0;
	return (slots / 4) * slot - RMQ_HDR_SIZE;
}

/*
 * One section's five keys over the table (0 and -1 inherit); src[] says
 * where each came from.  rndv_if_can: keep the table's rendezvous path
 * when the provider cannot do the section's.
 */
static void
apply_section(struct rmq_path_table *t, const struct rmq_caps *c,
              const struct rmq_cfg_paths *pp, const uint8_t *src,
              bool rndv_if_can)
{
	if (pp->inject_max != 0 && pp->inject_max < t->inject_max) {
		t->inject_max = pp->inject_max;
		t->src[RMQ_TH_INJECT] = src[RMQ_TH_INJECT];
	}
	if (pp->eager_max != 0) {
		t->eager_max = pp->eager_max;
		t->src[RMQ_TH_EAGER] = src[RMQ_TH_EAGER];
	}
	if (pp->ring_max != 0) {
		t->ring_max = pp->ring_max;
		t->src[RMQ_TH_RING] = src[RMQ_TH_RING];
	}
	if (pp->rndv >= 0 &&
	    (!rndv_if_can || rmq_path_can(c, pp->rndv, NULL))) {
		t->rndv_path = pp->rndv;
		t->src[RMQ_TH_RNDV] = src[RMQ_TH_RNDV];
	}
	if (pp->force >= 0) {
		t->force = pp->force;
		t->src[RMQ_TH_FORCE] = src[RMQ_TH_FORCE];
	}
	if (pp->fanout_log >= 0) {
		t->fanout_log = pp->fanout_log;
		t->src[RMQ_TH_FANOUT] = src[RMQ_TH_FANOUT];
	}
}

void
rmq_path_table_init(struct rmq_path_table *t, const struct rmq_caps *c,
                    const struct rmq_config *cfg, const char *section)
{
	const struct rmq_cfg_section *sc  = rmq_config_section(cfg, section);
	const struct rmq_prov        *row = c->prov;
	uint8_t                       src[RMQ_TH_COUNT];
	int                           k;

	memset(t, 0, sizeof(*t));
	rows_of(t, c);

	t->inject     = c->inject;
	t->inject_max = c->inject_data ? c->inject_data_max : c->inject_max;
	t->src[RMQ_TH_INJECT] = row->inject_max != 0 &&
	                                row->inject_max == c->inject_max
	                            ? RMQ_SRC_ROW
	                            : RMQ_SRC_INFO;
	if (cfg != NULL && cfg->inject_max != 0 &&
	    cfg->inject_max == t->inject_max)
		t->src[RMQ_TH_INJECT] = cfg_src(cfg, "thresholds.inject_max");

	t->eager_max = c->eager_max;
	t->src[RMQ_TH_EAGER] = cfg != NULL && cfg->eager_max != 0
	                           ? cfg_src(cfg, "thresholds.eager_max")
	                           : RMQ_SRC_ROW;
	{
		size_t asked = cfg != NULL && cfg->eager_max != 0
		                   ? cfg->eager_max
		                   : row->eager_max;

		/* Below inject_max it is raised to it (no eager range). */
		if (asked < c->inject_max)
			asked = c->inject_max;
		if (c->eager_max != asked) /* max_msg_size cut it, or */
			t->src[RMQ_TH_EAGER] = asked > c->eager_cap
			                           ? RMQ_SRC_CAPS /* rxm's */
			                           : RMQ_SRC_INFO;
	}

	t->ring_cap = ring_cap(cfg);
	/* One ring message is one write: never more than an RMA chunk. */
	if (c->rma_chunk != SIZE_MAX && t->ring_cap + RMQ_HDR_SIZE > c->rma_chunk)
		t->ring_cap = c->rma_chunk > RMQ_HDR_SIZE
		                  ? c->rma_chunk - RMQ_HDR_SIZE
		                  : 0;
	/* Forced, the ring needs no ordering; by size, mixed, it does. */
	t->ring_ok  = rmq_path_can(c, t->range_row[RMQ_RANGE_RING], NULL) &&
	              t->ring_cap > 0;
	t->ring     = t->ring_ok && c->ordered;
	t->ring_max = c->ring_max;
	t->src[RMQ_TH_RING] = cfg != NULL && cfg->ring_max != 0
	                          ? cfg_src(cfg, "thresholds.ring_max")
	                          : RMQ_SRC_ROW;

	t->rndv_path = c->rndv_path;
	t->src[RMQ_TH_RNDV] = cfg != NULL && cfg->rndv >= 0
	                          ? cfg_src(cfg, "thresholds.rndv")
	                          : RMQ_SRC_ROW;
	if (t->rndv_path != (cfg != NULL && cfg->rndv >= 0 ? cfg->rndv
	                                                  : rmq_path_id(row->rndv)))
		t->src[RMQ_TH_RNDV] = RMQ_SRC_CAPS;

	t->force = cfg != NULL ? cfg->force : -1;
	t->src[RMQ_TH_FORCE] = t->force >= 0 ? cfg_src(cfg, "thresholds.path")
	                                     : RMQ_SRC_ROW;

	t->fanout_log = cfg != NULL && cfg->fanout_log >= 0 ? cfg->fanout_log
	                                                   : row->fanout_log;
	t->src[RMQ_TH_FANOUT] = cfg != NULL && cfg->fanout_log >= 0
	                            ? cfg_src(cfg, "thresholds.fanout_log")
	                            : RMQ_SRC_ROW;

	/* The pattern's own section (from the file or RMQ_THRESHOLDS_...). */
	if (sc != NULL) {
		/* RMQ_TH_* and RMQ_CFG_PK_* name the six keys alike. */
		for (k = 0; k < RMQ_TH_COUNT; k++)
			src[k] = (uint8_t) src_of(cfg, sc->src[k]);
		/* A file shared by providers: a rendezvous path this one
		 * lacks is passed over, not refused. */
		apply_section(t, c, &sc->p, src, true);
	}
	rmq_path_table_fix(t, c);
}

void
rmq_path_table_named(struct rmq_path_table *t, const struct rmq_caps *c,
                     const struct rmq_config *cfg, const char *name)
{
	const struct rmq_cfg_section *nd = rmq_config_named(cfg, name);
	uint8_t                     src[RMQ_TH_COUNT];

	if (nd == NULL)
		return;
	memset(src, RMQ_SRC_NAMED, sizeof(src));
	/* Named for one socket, a path the provider lacks is asked for:
	 * rmq_sock_paths refuses it with the reason, as a socket option. */
	apply_section(t, c, &nd->p, src, false);
	rmq_path_table_fix(t, c);
}

void
rmq_path_table_fix(struct rmq_path_table *t, const struct rmq_caps *c)
{
	if (t->eager_max > c->eager_cap) {
		t->eager_max = c->eager_cap;
		t->src[RMQ_TH_EAGER] = RMQ_SRC_CAPS;
	}
	if (t->eager_max < t->inject_max)
		t->eager_max = t->inject_max;
	if (t->eager_max > c->eager_max && c->max_msg_size != 0) {
		size_t room = c->max_msg_size > RMQ_RTS_SIZE
		                  ? c->max_msg_size - RMQ_RTS_SIZE
		                  : 0;

		if (t->eager_max > room)
			t->eager_max = room;
		if (t->inject_max > t->eager_max)
			t->inject_max = t->eager_max;
	}
	if (t->ring_max > t->ring_cap)
		t->ring_max = t->ring_cap;
	/* The log is read with fi_read (and cursors come back by fi_write). */
	if (!c->rma_read && t->fanout_log != 0) {
		t->fanout_log = 0;
		t->src[RMQ_TH_FANOUT] = RMQ_SRC_CAPS;
	}
}

void
rmq_path_opts_init(struct rmq_path_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->force      = -2;
	o->fanout_log = -1;
}

void
rmq_path_table_opts(struct rmq_path_table *t, const struct rmq_path_opts *o)
{
	if (o == NULL)
		return;
	if (o->inject_max != 0 && o->inject_max < t->inject_max) {
		t->inject_max = o->inject_max;
		t->src[RMQ_TH_INJECT] = RMQ_SRC_OPT;
	}
	if (o->eager_max != 0) {
		t->eager_max = o->eager_max;
		t->src[RMQ_TH_EAGER] = RMQ_SRC_OPT;
	}
	if (o->ring_max_set) {
		t->ring_max = o->ring_max;
		t->src[RMQ_TH_RING] = RMQ_SRC_OPT;
	}
	if (o->rndv_path != 0) {
		t->rndv_path = o->rndv_path;
		t->src[RMQ_TH_RNDV] = RMQ_SRC_OPT;
	}
	if (o->force != -2) {
		t->force = o->force;
		t->src[RMQ_TH_FORCE] = RMQ_SRC_OPT;
	}
	if (o->fanout_log >= 0) {
		t->fanout_log = o->fanout_log;
		t->src[RMQ_TH_FANOUT] = RMQ_SRC_OPT;
	}
}

/* May a socket use path p here?  Logs why not. */
static int
path_check(const struct rmq_path_table *t, const struct rmq_caps *c, int p,
           const char *what)
{
	const char *why = NULL;

	if (!rmq_path_can(c, p, &why) ||
	    (p == t->range_row[RMQ_RANGE_RING] && !t->ring_ok &&
	     (why = "ring.slots is below 4 (no ring)") != NULL)) {
		rmq_log(RMQ_LOG_INFO, "%s: %s cannot carry %s: %s", what,
		        c->prov->name, rmq_path_name(p), why);
		return -RMQ_ENOTSUP;
	}
	return 0;
}

/* Every layer, in order: the one place the precedence is written. */
static void
layers(struct rmq_path_table *t, const struct rmq_caps *c,
       const struct rmq_config *cfg, const char *section, const char *name,
       const struct rmq_path_opts *o)
{
	rmq_path_table_init(t, c, cfg, section);
	rmq_path_table_named(t, c, cfg, name);
	rmq_path_table_opts(t, o);
	rmq_path_table_fix(t, c);
}

int
rmq_path_table_build(struct rmq_path_table *t, const struct rmq_caps *c,
                     const struct rmq_config *cfg, const char *section,
                     const char *name, const struct rmq_path_opts *o)
{
	int rc;

	layers(t, c, cfg, section, name, o);
	/* Asked for and impossible here: say so now, not at the first send. */
	rc = path_check(t, c, t->rndv_path, "rendezvous path");
	if (rc == 0 && t->force >= 0)
		rc = path_check(t, c, t->force, "forced path");
	return rc;
}

bool
rmq_wants_ring(const struct rmq_path_ops *const *rows,
               const struct rmq_config *cfg, const struct rmq_prov *prov,
               const char *section, const char *name,
               const struct rmq_path_opts *o)
{
	struct rmq_caps       c;
	struct rmq_path_table t;

	if (cfg->ring_slots < 4)
		return false;
	/* The provider row in place of what fi_info will say. */
	memset(&c, 0, sizeof(c));
	c.rows       = rows;
	c.prov       = prov;
	c.inject_max = prov->inject_max;
	c.eager_max  = cfg->eager_max != 0 ? cfg->eager_max : prov->eager_max;
	c.eager_cap  = SIZE_MAX;
	c.ring_max   = cfg->ring_max != 0 ? cfg->ring_max : prov->ring_max;
	c.rndv_path  = rmq_path_id(prov->rndv);
	c.rma_chunk  = SIZE_MAX;
	layers(&t, &c, cfg, section, name, o);
	/* A ring range only if it starts above the eager one. */
	return t.ring_max > t.eager_max;
}

size_t
rmq_range_max(const struct rmq_path_table *t, int r)
{
	switch (r) {
	case RMQ_RANGE_INJECT:
		return t->inject ? t->inject_max : 0;
	case RMQ_RANGE_EAGER:
		return t->eager_max;
	case RMQ_RANGE_RING:
		return t->ring ? t->ring_max : 0;
	default:
		return 0;
	}
}

int
rmq_path_select(const struct rmq_path_table *t, size_t len)
{
	if (t->force >= 0)
		return t->force;
	if (t->inject && len <= t->inject_max)
		return t->range_row[RMQ_RANGE_INJECT];
	if (len <= t->eager_max)
		return t->range_row[RMQ_RANGE_EAGER];
	if (t->ring && len <= t->ring_max)
		return t->range_row[RMQ_RANGE_RING];
	return t->rndv_path;
}
