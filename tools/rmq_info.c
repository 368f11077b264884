/*
 * rmq_info: what librmq would do on this machine -- the provider it would
 * use, the capabilities it negotiated, where its memory goes, and for every
 * pattern the path each message size takes and where each threshold came
 * from (see rmq_info(1), rmq_paths(7)).
 *
 * It opens a context and a domain exactly as a socket would (same config
 * file, same environment, same hints), so what it prints is what a program
 * started the same way gets.  It links the engine's internals to read the
 * negotiated capabilities; it opens no endpoint.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmq_config.h"
#include "caps.h"
#include "ctx.h"
#include "numa.h"
#include "paths/path.h"
#include "paths/tx.h"
#include "pattern.h"
#include "select.h"

#if RMQ_HAVE_HWLOC
#include <hwloc.h>
#endif

struct opts {
	const char *prov;
	const char *config;
	const char *pattern; /* NULL: all */
	bool        strict;
	bool        show_config;
	const char *name; /* --name: the tables of a socket so named */
};

/* --name, for the sources of thresholds its section set. */
static const char *sock_name;

static void
usage(FILE *f)
{
	char names[128];

	rmq_prov_names(names, sizeof(names), ", ", ", ");
	fprintf(f,
	        "Usage: rmq_info [-p PROVIDER] [-c FILE]\n"
	        "                [--pattern pair|reqrep|pubsub|pipeline]\n"
	        "                [--name NAME] [--strict] [--show-config]\n"
	        "       rmq_info -h\n"
	        "\n"
	        "Prints the provider librmq would use, its negotiated\n"
	        "capabilities, NUMA placement and, per pattern, which path each\n"
	        "message size takes and where each threshold came from.\n"
	        "\n"
	        "  -p, --provider PROVIDER\n"
	        "               %s (default: the\n"
	        "               config's provider; auto = the first of\n"
	        "               provider_order this machine has)\n"
	        "  -c, --config FILE\n"
	        "               configuration file (default: $RMQ_CONFIG)\n"
	        "  --pattern P  only this pattern's table\n"
	        "  --name NAME  the tables of a socket named NAME (RMQ_NAME):\n"
	        "               with the config's thresholds.sockets section\n"
	        "  --strict     as with strict: true (verbs/efa rules)\n"
	        "  --show-config  print every configuration key, its value and\n"
	        "               where it came from (file, environment, default);\n"
	        "               implied by -c\n"
	        "  -h, --help   this text\n",
	        names);
}

static const char *
yes(bool b)
{
	return b ? "yes" : "no";
}

/* The source of a threshold, said fully. */
static const char *
src_text(const struct rmq_config *cfg, int src, char *buf, size_t len)
{
	const struct rmq_cfg_section *nd;

	switch (src) {
	case RMQ_SRC_FILE:
	case RMQ_SRC_TUNED:
		snprintf(buf, len, "%s (%s)", rmq_src_name(src),
		         cfg->file[0] ? cfg->file : "?");
		return buf;
	case RMQ_SRC_NAMED:
		nd = rmq_config_named(cfg, sock_name);
		snprintf(buf, len, "%s (%s: thresholds.sockets.%s)",
		         rmq_src_name(src), cfg->file[0] ? cfg->file : "?",
		         nd != NULL ? nd->name : "?");
		return buf;
	default:
		return rmq_src_name(src);
	}
}

static void
print_caps(const struct rmq_dom *d, const struct fi_info *info)
{
	const struct rmq_caps *c = &d->caps;
	uint64_t               v;
	uint32_t               fv  = fi_version();
	uint32_t               api = rmq_fi_api();
	int                    idx;

	printf("provider %s: libfabric %s, %u.%u (API %u.%u asked; built on "
	       "%u.%u headers)\n",
	       c->prov->name, info->fabric_attr->prov_name, FI_MAJOR(fv),
	       FI_MINOR(fv), FI_MAJOR(api), FI_MINOR(api), FI_MAJOR_VERSION,
	       FI_MINOR_VERSION);
	idx = rmq_prov_index(c->prov);
	printf("  row:           %s%s, measured on libfabric %s\n",
	       c->prov->name,
	       idx >= 0 && rmq_prov_all()[idx]->v2 == c->prov
	               ? " (its libfabric 2.x row)"
	               : "",
	       c->prov->measured_on != NULL ? c->prov->measured_on : "?");
	printf("  fabric %s, domain %s, endpoint %s\n", info->fabric_attr->name,
	       info->domain_attr->name,
	       fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE));
	v = c->caps;
	printf("  caps:          %s\n", fi_tostr(&v, FI_TYPE_CAPS));
	v = c->mode;
	printf("  mode:          %s\n", v ? fi_tostr(&v, FI_TYPE_MODE) : "none");
	v = c->mr_mode;
	printf("  mr_mode:       %s%s\n", v ? fi_tostr(&v, FI_TYPE_MR_MODE) : "none",
	       c->strict ? "  (strict: FI_MR_LOCAL applied)" : "");
	v = c->msg_order;
	printf("  msg_order:     %s\n", fi_tostr(&v, FI_TYPE_MSG_ORDER));
	if (c->inject_data)
		printf("  inject size:   %zu bytes (payload by inject <= %zu, "
		       "header as CQ data)\n",
		       c->inject_size, c->inject_data_max);
	else
		printf("  inject size:   %zu bytes (payload by inject <= %zu)\n",
		       c->inject_size, c->inject_max);
	printf("  max_msg_size:  %zu\n", c->max_msg_size);
	printf("  cq_data_size:  %zu bytes%s\n", c->cq_data_size,
	       c->strict ? " (strict: at most 4)" : "");
	printf("  mr_key_size:   %zu bytes, keys %s\n", c->mr_key_size,
	       c->mr_prov_key ? "chosen by the provider"
	                      : "chosen by librmq (CSPRNG)");
	printf("  RMA:           read %s, write %s, %s%s\n", yes(c->rma_read),
	       yes(c->rma_write),
	       c->rma_native ? "native (NIC)" : "emulated in software",
	       (c->prov->flags & RMQ_PROV_TARGET_PROG)
	           ? ", lands only while the target progresses"
	           : "");
	if (c->rma_chunk == SIZE_MAX)
		printf("  RMA chunk:     whole message in one fi_read/fi_write\n");
	else
		printf("  RMA chunk:     %zu bytes per fi_read/fi_write\n",
		       c->rma_chunk);
	printf("  write order:   %s\n",
	       c->ordered ? "writes ordered with sends (ring by size allowed)"
	                  : "not asked or not given (ring only when forced)");
	printf("  wait fd:       %s\n",
	       c->wait_fd ? "yes (blocking waits sleep on the CQ fd)"
	                  : "no (spin, then back off 10 us .. 1 ms)");
	printf("  data progress: %s\n",
	       fi_tostr(&c->data_progress, FI_TYPE_PROGRESS));
	printf("  strict mode:   %s\n", yes(c->strict));
	if (c->prov->notes != NULL)
		printf("  notes:         %s\n", c->prov->notes);
}

/* The machine: its nodes, and where this thread runs. */
static void
print_machine(rmq_ctx *ctx)
{
#if RMQ_HAVE_HWLOC
	hwloc_topology_t topo = ctx->numa.topo;
	hwloc_bitmap_t   set  = hwloc_bitmap_alloc();
	hwloc_obj_t      pu = NULL, node = NULL;
	int              nnodes;
	bool             own = false;

	/* policy off loads no topology: load one without I/O to say this. */
	if (topo == NULL) {
		own = hwloc_topology_init(&topo) == 0;
		if (own && hwloc_topology_load(topo) != 0) {
			hwloc_topology_destroy(topo);
			own = false;
		}
		if (!own)
			topo = NULL;
	}
	if (set == NULL || topo == NULL) {
		printf("  machine: hwloc topology unavailable\n");
		goto out;
	}
	nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	/* An XML topology is another machine: where we run means nothing. */
	if (hwloc_topology_is_thissystem(topo) &&
	    hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_THREAD) == 0)
		pu = hwloc_get_pu_obj_by_os_index(topo,
		                                  (unsigned) hwloc_bitmap_first(set));
	if (pu != NULL) {
		node = hwloc_get_next_obj_covering_cpuset_by_type(
		    topo, pu->cpuset, HWLOC_OBJ_NUMANODE, NULL);
	}
	printf("  machine: %d NUMA node%s%s; ", nnodes, nnodes == 1 ? "" : "s",
	       hwloc_topology_is_thissystem(topo) ? ""
	                                          : " (topology from XML)");
	if (pu != NULL)
		printf("this thread runs on CPU %u", pu->os_index);
	else
		printf("this thread's CPU is unknown");
	if (node != NULL)
		printf(", node %u", node->os_index);
	printf("\n");
out:
	if (own)
		hwloc_topology_destroy(topo);
	hwloc_bitmap_free(set);
#else
	RMQ_UNUSED(ctx);
	printf("  machine: built without hwloc\n");
#endif
}

/*
 * The domain's placement (lib/numa.c), then one test allocation of a
 * slab's size made as a socket makes it, and where its pages really went.
 */
static void
print_numa(rmq_ctx *ctx, const struct rmq_dom *d)
{
	const struct rmq_numa_place *pl = &d->place;
	struct rmq_numa_mem          m  = {0};
	size_t                       len = ctx->cfg.slab_size;
	void                        *p;
	int                          where;

	printf("NUMA placement:\n");
	print_machine(ctx);
	if (pl->nic_pci[0] != '\0')
		printf("  NIC:     PCI %s%s%s%s\n", pl->nic_pci,
		       pl->nic_name[0] ? " (" : "", pl->nic_name,
		       pl->nic_name[0] ? ")" : "");
	else if (pl->nic_name[0] != '\0')
		printf("  NIC:     %s, no PCI address\n", pl->nic_name);
	else
		printf("  NIC:     none reported by the provider (shm or "
		       "loopback)\n");
	if (pl->node >= 0)
		printf("  chosen:  node %d -- %s\n", pl->node, pl->why);
	else
		printf("  chosen:  no node -- %s\n", pl->why);
	printf("  cpus:    %s (where a progress thread would be pinned)\n",
	       pl->cpuset[0] ? pl->cpuset : "none, not pinned");
	printf("  memory:  %s\n", pl->mem);
	p = rmq_numa_alloc(&ctx->numa, pl, len, &m);
	if (p == NULL) {
		printf("           (test allocation of %zu bytes failed)\n", len);
		return;
	}
	where = rmq_numa_where(&ctx->numa, p, len);
	printf("           test slab of %zu bytes: %s, ", len,
	       m.how == RMQ_NUMA_MEM_BOUND ? "bound" : "first touch");
	if (where >= 0)
		printf("pages on node %d\n", where);
	else
		printf("pages on an unknown node\n");
	rmq_numa_free(p, &m);
}

static void
range(size_t lo, size_t hi, const char *path, const char *why)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "%zu", lo);
	if (hi == SIZE_MAX)
		snprintf(b, sizeof(b), "%s", "");
	else
		snprintf(b, sizeof(b), "%zu", hi);
	printf("    %10s .. %-10s  %-10s  %s\n", a, b, path, why);
}

static void
print_table(const struct rmq_caps *c, const struct rmq_config *cfg,
            const char *section, const char *name)
{
	struct rmq_path_table t;
	char                  s1[420], s2[420], why[440];
	size_t                lo = 0;

	rmq_path_table_init(&t, c, cfg, section);
	rmq_path_table_named(&t, c, cfg, sock_name);
	if (sock_name != NULL)
		printf("path table, %s, socket '%s'%s:\n", name, sock_name,
		       rmq_config_named(cfg, sock_name) == NULL
		           ? " (no thresholds.sockets section matches)"
		           : "");
	else
		printf("path table, %s:\n", name);
	if (strcmp(section, "pubsub") == 0) {
		if (t.fanout_log > 0)
			printf("    fan-out log  from %d subscribers  %s\n",
			       t.fanout_log,
			       src_text(cfg, t.src[RMQ_TH_FANOUT], s1,
			                sizeof(s1)));
		else
			printf("    fan-out log  never  %s\n",
			       src_text(cfg, t.src[RMQ_TH_FANOUT], s1,
			                sizeof(s1)));
	}
	if (t.force >= 0) {
		printf("    every size  %-10s  forced (%s)\n",
		       rmq_path_name(t.force),
		       src_text(cfg, t.src[RMQ_TH_FORCE], s1, sizeof(s1)));
		return;
	}
	printf("    %10s    %-10s  %-10s  %s\n", "bytes", "", "path",
	       "where the limit came from");
	if (t.inject) {
		range(0, t.inject_max, "inject",
		      src_text(cfg, t.src[RMQ_TH_INJECT], s1, sizeof(s1)));
		lo = t.inject_max + 1;
	}
	if (t.eager_max >= lo) {
		range(lo, t.eager_max, "eager",
		      src_text(cfg, t.src[RMQ_TH_EAGER], s1, sizeof(s1)));
		lo = t.eager_max + 1;
	}
	if (t.ring && t.ring_max >= lo) {
		range(lo, t.ring_max, "ring",
		      src_text(cfg, t.src[RMQ_TH_RING], s1, sizeof(s1)));
		lo = t.ring_max + 1;
	}
	snprintf(why, sizeof(why), "%s",
	         src_text(cfg, t.src[RMQ_TH_RNDV], s2, sizeof(s2)));
	range(lo, SIZE_MAX, rmq_path_name(t.rndv_path), why);
	if (!t.ring)
		printf("    (ring by size: off -- %s)\n",
		       !t.ring_ok ? "ring.slots below 4 or provider cannot"
		       : !c->ordered
		           ? "this domain does not order writes with sends; "
		             "set thresholds.ring_max to ask for it"
		           : "ring_max <= eager_max");
	else if (t.ring_max < lo - 1 || t.ring_max <= t.eager_max)
		printf("    (ring by size: none -- ring_max %zu <= eager_max, %s)\n",
		       t.ring_max, src_text(cfg, t.src[RMQ_TH_RING], s1,
		                            sizeof(s1)));
}

static void
print_can(const struct rmq_caps *c, const struct rmq_config *cfg)
{
	const struct rmq_path_ops *row;
	const char                *why;
	char                       d[320];
	bool                       yes;
	int                        p;

	printf("paths this provider can carry (RMQ_PATH / thresholds.path):\n");
	for (p = 0; p < rmq_path_count(); p++) {
		row = rmq_paths[p];
		d[0] = '\0';
		yes  = rmq_path_can(c, p, &why);
		if (yes && row->describe != NULL)
			yes = row->describe(c, cfg, d, sizeof(d));
		else if (!yes)
			snprintf(d, sizeof(d), "%s", why);
		printf("    %-10s  %s%s%s\n", rmq_path_name(p), yes ? "yes" : "no",
		       d[0] != '\0' ? ": " : "", d);
	}
}

/* As a socket of any pattern would ask for its domain (ep.c). */
static bool
wants_order(const struct rmq_config *cfg, const struct rmq_prov *prov)
{
	const struct rmq_pattern_ops *const *p;

	for (p = rmq_pattern_all(); *p != NULL; p++)
		if (rmq_wants_ring(rmq_paths, cfg, prov, (*p)->section,
		                   sock_name, NULL))
			return true;
	return false;
}

/*
 * Each pattern section once, in the registry's order, with the names of
 * its patterns ("REQ/REP"); only section if it is not NULL.  Returns
 * whether section is one.
 */
static bool
print_tables(const struct rmq_caps *c, const struct rmq_config *cfg,
             const char *section)
{
	const struct rmq_pattern_ops *const *p, *const *q;
	char                                name[64];
	size_t                              n, i;
	bool                                found = false;

	for (p = rmq_pattern_all(); *p != NULL; p++) {
		for (q = rmq_pattern_all(); q != p; q++)
			if (strcmp((*q)->section, (*p)->section) == 0)
				break;
		if (q != p || (section != NULL &&
		               strcmp(section, (*p)->section) != 0))
			continue;
		found = true;
		if (c == NULL)
			continue;
		for (n = 0, q = p; *q != NULL; q++) {
			if (strcmp((*q)->section, (*p)->section) != 0)
				continue;
			n += (size_t) snprintf(name + n, sizeof(name) - n, "%s",
			                       n ? "/" : "");
			for (i = 0; (*q)->name[i] != '\0' && n + 1 < sizeof(name);
			     i++)
				name[n++] = (char) toupper((*q)->name[i]);
			name[n] = '\0';
		}
		print_table(c, cfg, (*p)->section, name);
	}
	return found;
}

int
main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"provider", required_argument, NULL, 'p'},
		{"config", required_argument, NULL, 'c'},
		{"pattern", required_argument, NULL, 'P'},
		{"strict", no_argument, NULL, 's'},
		{"show-config", no_argument, NULL, 'C'},
		{"name", required_argument, NULL, 'n'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts                   o = {0};
	const struct rmq_prov        *prov = NULL;
	struct rmq_dom               *dom  = NULL;
	struct fi_info               *info = NULL;
	rmq_ctx                      *ctx  = NULL;
	char                          why[400], names[128];
	int                           c, rc;

	while ((c = getopt_long(argc, argv, "p:c:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o.prov = optarg;
			break;
		case 'c':
			o.config = optarg;
			break;
		case 'P':
			o.pattern = optarg;
			break;
		case 's':
			o.strict = true;
			break;
		case 'C':
			o.show_config = true;
			break;
		case 'n':
			o.name = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (o.name != NULL && !rmq_config_name_ok(o.name, strlen(o.name))) {
		fprintf(stderr, "rmq_info: --name '%s': expected 1 to %d of "
		        "A-Z a-z 0-9 _ -\n", o.name, RMQ_CFG_NAME_MAX - 1);
		return 2;
	}
	sock_name = o.name;
	if (o.pattern != NULL && !print_tables(NULL, NULL, o.pattern)) {
		fprintf(stderr, "rmq_info: unknown pattern '%s' (pair, reqrep)\n",
		        o.pattern);
		return 2;
	}
	rc = rmq_ctx_new(&ctx, o.config);
	if (rc != 0) {
		fprintf(stderr, "rmq_info: %s\n", rmq_strerror(rc));
		return 1;
	}
	if (o.strict)
		ctx->cfg.strict = 1;
	if (o.prov == NULL)
		o.prov = ctx->cfg.provider;
	if (strcmp(o.prov, "auto") == 0) {
		prov = rmq_prov_auto(&ctx->cfg, why, sizeof(why));
		if (prov == NULL) {
			fprintf(stderr, "rmq_info: %s\n", why);
			rmq_ctx_destroy(ctx);
			return 1;
		}
		rc = rmq_dom_get(ctx, prov, NULL, wants_order(&ctx->cfg, prov),
		                 rmq_paths, &dom, &info);
	} else {
		prov = rmq_prov_by_name(o.prov);
		if (prov == NULL) {
			rmq_prov_names(names, sizeof(names), ", ", ", ");
			fprintf(stderr, "rmq_info: unknown provider '%s' "
			        "(%s, auto)\n", o.prov, names);
			rmq_ctx_destroy(ctx);
			return 2;
		}
		rc = rmq_dom_get(ctx, prov, NULL, wants_order(&ctx->cfg, prov),
		                 rmq_paths, &dom, &info);
	}
	if (rc != 0) {
		fprintf(stderr, "rmq_info: provider %s not available here: %s\n",
		        o.prov, rmq_strerror(rc));
		rmq_ctx_destroy(ctx);
		return 1;
	}
	printf("librmq %s\n", rmq_version());
	if (ctx->cfg.file[0])
		printf("configuration: %s%s\n", ctx->cfg.file,
		       ctx->cfg.tuned ? " (written by rmq_tune)" : "");
	else
		printf("configuration: built-in defaults (no file)\n");
	if (o.config != NULL || o.show_config)
		rmq_config_dump(&ctx->cfg, stdout);
	if (strcmp(o.prov, "auto") == 0)
		printf("provider auto: %s, the first of provider_order [%s] "
		       "this machine has\n",
		       prov->name, ctx->cfg.provider_order);
	print_caps(dom, info);
	if (!dom->caps.in_place)
		printf("  send in place: no (%s)\n",
		       dom->caps.strict     ? "strict mode"
		       : dom->caps.mr_local ? "FI_MR_LOCAL"
		       : !(dom->caps.prov->flags & RMQ_PROV_TX_LOCAL_DONE)
		           ? "its sends wait for the receiver"
		           : "one iovec per send");
	else if (ctx->cfg.in_place_min < 0)
		printf("  send in place: no (thresholds.in_place -1)\n");
	else
		printf("  send in place: blocking eager and ring sends of "
		       "%lld to %u bytes, after a message from the peer "
		       "(thresholds.in_place)\n",
		       (long long) ctx->cfg.in_place_min, RMQ_IN_PLACE_MAX);
	print_numa(ctx, dom);
	(void) print_tables(&dom->caps, &ctx->cfg, o.pattern);
	print_can(&dom->caps, &ctx->cfg);
	fi_freeinfo(info);
	rmq_dom_put(ctx, dom);
	rmq_ctx_destroy(ctx);
	return 0;
}
