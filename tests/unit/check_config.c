/*
 * Unit tests for config/: the schema table, the YAML loader and the
 * environment overrides.  Data files are tests/data/config_*.yaml, found
 * through RMQ_TEST_DATA_DIR.  Error messages are compared exactly: they are
 * the interface a user sees.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#endif

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "checkmain.h"

#include <check.h>

#include "config.h"
#include "prov.h"
#include "rmq.h"
#include "schema.h"

#ifndef RMQ_TEST_DATA_DIR
#error "compile with -DRMQ_TEST_DATA_DIR=\"\\\"<dir>\\\"\""
#endif
#ifndef RMQ_TEST_EXAMPLE
#define RMQ_TEST_EXAMPLE RMQ_TEST_DATA_DIR "/../../config/rmq.yaml.example"
#endif

#define KiB ((size_t) 1 << 10)
#define MiB ((size_t) 1 << 20)
#define GiB ((size_t) 1 << 30)

static const char *const env_names[] = {
	"RMQ_PROVIDER",
	"RMQ_LOG",
	"RMQ_EAGER_MAX",
	"RMQ_INJECT_MAX",
	"RMQ_SPIN_US",
};

/* Path of a data file; the result lives until the next call. */
static const char *
data(const char *file)
{
	static char path[4096];

	snprintf(path, sizeof path, "%s/%s", RMQ_TEST_DATA_DIR, file);
	return path;
}

/* The whole file as a string; the caller frees it. */
static char *
slurp(const char *path)
{
	char *buf = NULL;
	long  len;
	FILE *f;

	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_ge(len, 0);
	ck_assert_int_eq(fseek(f, 0, SEEK_SET), 0);
	buf = malloc((size_t) len + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t) len, f), (size_t) len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/*
 * Load data file `file` over the defaults and check that it fails with
 * exactly `expected` (after the "DIR/" prefix of the file name), and that
 * the config is untouched.
 */
static void
check_file_error(const char *file, const char *expected)
{
	struct rmq_config cfg, before;
	char              err[RMQ_CFG_ERR_MAX];
	char              want[RMQ_CFG_ERR_MAX + 64];
	int               rc;

	rmq_config_defaults(&cfg);
	memcpy(&before, &cfg, sizeof before);
	rc = rmq_config_load(&cfg, data(file), err, sizeof err);
	ck_assert_int_eq(rc, -RMQ_ECONFIG);
	snprintf(want, sizeof want, "%s/%s", RMQ_TEST_DATA_DIR, expected);
	ck_assert_str_eq(err, want);
	ck_assert_mem_eq(&cfg, &before, sizeof cfg);
}

/* Load a string named "t" over the defaults; returns rc. */
static int
load_str(struct rmq_config *cfg, const char *yaml, char *err, size_t errlen)
{
	rmq_config_defaults(cfg);
	return rmq_config_load_string(cfg, yaml, "t", err, errlen);
}

static void
check_str_error(const char *yaml, const char *expected)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	ck_assert_int_eq(load_str(&cfg, yaml, err, sizeof err), -RMQ_ECONFIG);
	ck_assert_str_eq(err, expected);
}

extern char **environ;

/* Every RMQ_* variable, so nothing from the caller's shell leaks in. */
static void
env_clear(void)
{
	char   name[128];
	size_t i, n;
	int    again = 1;

	for (i = 0; i < sizeof env_names / sizeof env_names[0]; i++)
		unsetenv(env_names[i]);
	while (again) {
		again = 0;
		for (i = 0; environ[i] != NULL; i++) {
			if (strncmp(environ[i], "RMQ_", 4) != 0)
				continue;
			n = strcspn(environ[i], "=");
			if (n >= sizeof name)
				continue;
			memcpy(name, environ[i], n);
			name[n] = '\0';
			unsetenv(name);
			again = 1; /* environ changed under us: start over */
			break;
		}
	}
}

/* Equal values; where each came from (src[], file, line, col) is not
 * compared. */
/* Pattern sections that set nothing say what no section says. */
static void
drop_empty_sections(struct rmq_config *c)
{
	int i, j, n = 0;

	for (i = 0; i < c->nsect; i++) {
		const struct rmq_cfg_paths *p = &c->sect[i].p;

		if (p->inject_max == 0 && p->eager_max == 0
		    && p->ring_max == 0 && p->rndv == -1 && p->force == -1
		    && p->fanout_log == -1)
			continue;
		c->sect[n++] = c->sect[i];
	}
	for (j = n; j < RMQ_CFG_SECT_MAX; j++)
		memset(&c->sect[j], 0, sizeof c->sect[j]);
	c->nsect = n;
	for (i = 0; i < n; i++) {
		memset(c->sect[i].src, 0, sizeof c->sect[i].src);
		memset(c->sect[i].line, 0, sizeof c->sect[i].line);
		memset(c->sect[i].col, 0, sizeof c->sect[i].col);
	}
}

static void
assert_same_values(const struct rmq_config *a, const struct rmq_config *b)
{
	struct rmq_config x = *a, y = *b;
	int               i, j;

	drop_empty_sections(&x);
	drop_empty_sections(&y);

	memset(x.src, 0, sizeof x.src);
	memset(y.src, 0, sizeof y.src);
	memset(x.file, 0, sizeof x.file);
	memset(y.file, 0, sizeof y.file);
	memset(x.line, 0, sizeof x.line);
	memset(y.line, 0, sizeof y.line);
	memset(x.col, 0, sizeof x.col);
	memset(y.col, 0, sizeof y.col);
	/* A named key's line says that it was set, and where: keep only
	 * whether. */
	for (i = 0; i < RMQ_CFG_NAMED_MAX; i++)
		for (j = 0; j < RMQ_CFG_NPK; j++) {
			x.named[i].line[j] = x.named[i].line[j] != 0;
			y.named[i].line[j] = y.named[i].line[j] != 0;
			x.named[i].col[j]  = 0;
			y.named[i].col[j]  = 0;
			x.named[i].src[j]  = 0;
			y.named[i].src[j]  = 0;
		}
	ck_assert_mem_eq(&x, &y, sizeof x);
}

START_TEST(test_defaults)
{
	struct rmq_config cfg;

	memset(&cfg, 0xa5, sizeof cfg);
	rmq_config_defaults(&cfg);
	ck_assert_str_eq(cfg.provider, "auto");
	ck_assert_int_eq(cfg.log_level, RMQ_LOG_WARN);
	ck_assert_uint_eq(cfg.inject_max, 0);
	ck_assert_uint_eq(cfg.eager_max, 0);
	ck_assert_uint_eq(cfg.slab_size, 1 * MiB);
	ck_assert_int_eq(cfg.slabs, 4);
	ck_assert_int_eq(cfg.sndhwm, 1000);
	ck_assert_int_eq(cfg.rcvhwm, 1000);
	ck_assert_int_eq(cfg.max_msg_size, -1);
	ck_assert_int_eq(cfg.sndtimeo_ms, -1);
	ck_assert_int_eq(cfg.rcvtimeo_ms, -1);
	ck_assert_int_eq(cfg.linger_ms, 1000);
	ck_assert_int_eq(cfg.connect_ms, 10000);
	ck_assert_int_eq(cfg.handshake_ms, 5000);
	ck_assert_int_eq(cfg.spin_us, 1000);
}
END_TEST

/* Every row is sane: default in range, fields inside the struct. */
START_TEST(test_schema_rows)
{
	const struct rmq_schema_key *k;
	size_t                       i;

	for (i = 0; i < rmq_schema_nkeys(); i++) {
		k = rmq_schema_at(i);
		ck_assert_ptr_eq(rmq_schema_find(k->name, strlen(k->name)), k);
		ck_assert_uint_le(
		    k->offset + k->size, sizeof(struct rmq_config));
		ck_assert(k->desc != NULL && k->desc[0] != '\0');
		if (k->choices == NULL) {
			ck_assert_int_le(k->min, k->def);
			ck_assert_int_le(k->def, k->max);
		}
	}
}
END_TEST

START_TEST(test_load_empty_file)
{
	struct rmq_config cfg, def;
	char              err[RMQ_CFG_ERR_MAX];

	rmq_config_defaults(&def);
	memcpy(&cfg, &def, sizeof cfg);
	ck_assert_int_eq(
	    rmq_config_load(&cfg, data("config_empty.yaml"), err, sizeof err),
	    0);
	ck_assert_str_eq(err, "");
	assert_same_values(&cfg, &def);
}
END_TEST

START_TEST(test_load_comments_only)
{
	struct rmq_config cfg, def;
	char              err[RMQ_CFG_ERR_MAX];

	rmq_config_defaults(&def);
	memcpy(&cfg, &def, sizeof cfg);
	ck_assert_int_eq(rmq_config_load(&cfg, data("config_comments.yaml"),
	                     err, sizeof err),
	    0);
	assert_same_values(&cfg, &def);
}
END_TEST

START_TEST(test_load_full)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];
	int               rc;

	rmq_config_defaults(&cfg);
	rc = rmq_config_load(&cfg, data("config_full.yaml"), err, sizeof err);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	ck_assert_str_eq(cfg.provider, "verbs");
	ck_assert_int_eq(cfg.log_level, RMQ_LOG_DEBUG);
	ck_assert_uint_eq(cfg.inject_max, 256);
	ck_assert_uint_eq(cfg.eager_max, 64 * KiB);
	ck_assert_uint_eq(cfg.slab_size, 4 * MiB);
	ck_assert_int_eq(cfg.slabs, 8);
	ck_assert_int_eq(cfg.sndhwm, 500);
	ck_assert_int_eq(cfg.rcvhwm, 2000);
	ck_assert_int_eq(cfg.max_msg_size, 16 * (int64_t) MiB);
	ck_assert_int_eq(cfg.sndtimeo_ms, 100);
	ck_assert_int_eq(cfg.rcvtimeo_ms, 200);
	ck_assert_int_eq(cfg.linger_ms, 0);
	ck_assert_int_eq(cfg.connect_ms, 3000);
	ck_assert_int_eq(cfg.handshake_ms, 250);
	ck_assert_int_eq(cfg.spin_us, 50);
	ck_assert_str_eq(cfg.provider_order, "tcp,shm");
	ck_assert_str_eq(rmq_config_str(&cfg, "tcp.interface"), "ib0");
	ck_assert_str_eq(rmq_config_str(&cfg, "verbs.domain"), "mlx5_1");
	ck_assert_int_eq(cfg.numa_policy, RMQ_CFG_NUMA_CPUSET);
	ck_assert_str_eq(cfg.numa_cpuset, "0-3,8");
	ck_assert_int_eq(cfg.nnamed, 2);
	ck_assert_str_eq(cfg.named[0].name, "bulk");
	ck_assert_uint_eq(cfg.named[0].p.eager_max, 8 * KiB);
	ck_assert_int_eq(cfg.named[0].p.rndv, RMQ_PATH_RNDV_WRITE);
	ck_assert_int_eq(cfg.named[0].p.force, -1);
	ck_assert_str_eq(cfg.named[1].name, "ctl*");
	ck_assert_int_eq(cfg.named[1].p.force, RMQ_PATH_EAGER);
}
END_TEST

/* provider_order: a YAML sequence (block or flow) or "a, b" text. */
START_TEST(test_provider_order)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	ck_assert_int_eq(load_str(&cfg, "provider_order: [tcp, SHM]\n", err,
	                     sizeof err),
	    0);
	ck_assert_str_eq(cfg.provider_order, "tcp,shm");
	ck_assert_int_eq(load_str(&cfg,
	                     "provider_order:\n  - verbs\n  - sockets\n", err,
	                     sizeof err),
	    0);
	ck_assert_str_eq(cfg.provider_order, "verbs,sockets");
	ck_assert_int_eq(
	    load_str(&cfg, "provider_order: efa ,  tcp\n", err, sizeof err), 0);
	ck_assert_str_eq(cfg.provider_order, "efa,tcp");
	rmq_config_defaults(&cfg);
	ck_assert_str_eq(cfg.provider_order, "verbs,efa,tcp,sockets");
	setenv("RMQ_PROVIDER_ORDER", "[shm, tcp]", 1);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), 0);
	ck_assert_str_eq(cfg.provider_order, "shm,tcp");
	setenv("RMQ_PROVIDER_ORDER", "shm,,tcp", 1);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), -RMQ_ECONFIG);
	ck_assert_str_eq(err,
	    "RMQ_PROVIDER_ORDER: expected a list of verbs, efa, tcp, sockets, "
	    "shm, got ''");
	unsetenv("RMQ_PROVIDER_ORDER");

	check_str_error("provider_order: [tcp, tcpp]\n",
	    "t:1:17: provider_order: expected a list of verbs, efa, tcp, "
	    "sockets, shm, got 'tcpp'");
	check_str_error("provider_order: [tcp, shm, tcp]\n",
	    "t:1:17: provider_order: 'tcp' is listed twice");
	check_str_error("provider_order: [auto]\n",
	    "t:1:17: provider_order: expected a list of verbs, efa, tcp, "
	    "sockets, shm, got 'auto'");
	check_str_error("provider_order: []\n",
	    "t:1:17: provider_order: expected a list of verbs, efa, tcp, "
	    "sockets, shm, got ''");
	check_str_error("provider_order:\n  - tcp\n  - {a: b}\n",
	    "t:3:5: provider_order: expected a list of verbs, efa, tcp, "
	    "sockets, shm, got a mapping in the list");
	check_str_error("provider_order:\n  x: tcp\n",
	    "t:2:3: provider_order: expected a list of verbs, efa, tcp, "
	    "sockets, shm, got a mapping");
}
END_TEST

/* Every knob key but key is unset ("") in cfg. */
static void
only_knob_set(const struct rmq_config *cfg, const char *key)
{
	const struct rmq_prov *const *pp;
	const char                   *keys[2];
	size_t                        j;

	for (pp = rmq_prov_all(); *pp != NULL; pp++) {
		keys[0] = (*pp)->iface_key;
		keys[1] = (*pp)->domain_key;
		for (j = 0; j < 2; j++)
			if (keys[j] != NULL && strcmp(keys[j], key) != 0)
				ck_assert_msg(rmq_config_str(cfg, keys[j])[0] == '\0',
				    "%s set with %s", keys[j], key);
	}
}

/* One knob key of a provider row: a text key of its own, in YAML and as
 * RMQ_<KEY>, described by the row. */
static void
knob_key(const char *key, const char *help)
{
	const struct rmq_schema_key *k = rmq_schema_find(key, strlen(key));
	struct rmq_config            cfg;
	char                         yaml[128], var[96], err[RMQ_CFG_ERR_MAX];

	ck_assert_msg(k != NULL, "%s is no key", key);
	ck_assert_int_eq(k->type, RMQ_SCHEMA_STR);
	ck_assert_ptr_eq(k->desc, help);
	snprintf(yaml, sizeof yaml, "%s: x0\n", key);
	ck_assert_int_eq(load_str(&cfg, yaml, err, sizeof err), 0);
	ck_assert_str_eq(rmq_config_str(&cfg, key), "x0");
	only_knob_set(&cfg, key);
	rmq_config_defaults(&cfg);
	rmq_config_env_name(key, var, sizeof var);
	setenv(var, "y1", 1);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), 0);
	unsetenv(var);
	ck_assert_str_eq(rmq_config_str(&cfg, key), "y1");
	ck_assert_int_eq(cfg.src[rmq_config_key_index(key)], RMQ_CFG_SRC_ENV);
	only_knob_set(&cfg, key);
}

/*
 * What the schema takes from the provider registry: the choices of
 * provider and provider_order, the default order (every row that reaches
 * beyond this host, by preference), and each row's knob keys, right after
 * provider_order, rows in listed order, interface before domain (with
 * today's rows: tcp.interface, sockets.interface, verbs.interface,
 * verbs.domain, efa.domain, as files and dumps always had them).
 */
START_TEST(test_schema_from_registry)
{
	const struct rmq_prov *const *pp;
	const struct rmq_prov        *p;
	struct rmq_config             cfg;
	char   want[RMQ_CFG_STR_MAX] = "", yaml[128], err[RMQ_CFG_ERR_MAX];
	size_t i, j, n = 0;

	for (pp = rmq_prov_all(); *pp != NULL; pp++, n++) {
		snprintf(yaml, sizeof yaml, "provider: %s\n", (*pp)->name);
		ck_assert_int_eq(load_str(&cfg, yaml, err, sizeof err), 0);
		ck_assert_str_eq(cfg.provider, (*pp)->name);
		snprintf(yaml, sizeof yaml, "provider_order: [%s]\n",
		    (*pp)->name);
		ck_assert_int_eq(load_str(&cfg, yaml, err, sizeof err), 0);
		ck_assert_str_eq(cfg.provider_order, (*pp)->name);
		if (!((*pp)->flags & RMQ_PROV_LOCAL_ONLY))
			snprintf(want + strlen(want), sizeof want - strlen(want),
			    "%s%s", want[0] ? "," : "", (*pp)->name);
		if ((*pp)->iface_key != NULL)
			knob_key((*pp)->iface_key, (*pp)->iface_help);
		if ((*pp)->domain_key != NULL)
			knob_key((*pp)->domain_key, (*pp)->domain_help);
	}
	ck_assert_uint_eq(n, RMQ_PROV_NROWS);
	rmq_config_defaults(&cfg);
	ck_assert_str_eq(cfg.provider_order, want);

	/* Listed: every row once; the choices of provider in that order. */
	for (i = 0; (p = rmq_prov_listed(i)) != NULL; i++) {
		ck_assert_int_ge(rmq_prov_index(p), 0);
		for (j = 0; j < i; j++)
			ck_assert_ptr_ne(rmq_prov_listed(j), p);
	}
	ck_assert_uint_eq(i, RMQ_PROV_NROWS);
	rmq_prov_names(want, sizeof want, ", ", ", ");
	snprintf(yaml, sizeof yaml,
	    "t:1:11: provider: expected one of auto, %s, got 'x'", want);
	check_str_error("provider: x\n", yaml);

	/* The knob keys right after provider_order. */
	ck_assert_str_eq(rmq_schema_at(1)->name, "provider_order");
	n = 2;
	for (i = 0; (p = rmq_prov_listed(i)) != NULL; i++) {
		if (p->iface_key != NULL)
			ck_assert_str_eq(rmq_schema_at(n++)->name, p->iface_key);
		if (p->domain_key != NULL)
			ck_assert_str_eq(rmq_schema_at(n++)->name, p->domain_key);
	}
	ck_assert_str_eq(rmq_schema_at(n)->name, "log.level");
	ck_assert_uint_eq(rmq_schema_nkeys(), RMQ_SCHEMA_NFIXED + n - 2);
}
END_TEST

/* Interface, domain and cpuset text: checked for form at load time. */
START_TEST(test_text_keys)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	ck_assert_int_eq(load_str(&cfg,
	                     "tcp:\n  interface: ib0.8001\nsockets.interface: "
	                     "lo\nverbs:\n  interface: ib0\n  domain: mlx5_0\n"
	                     "efa.domain: rdmap0s6-rdm\nnuma.cpuset: 0-3,8\n",
	                     err, sizeof err),
	    0);
	ck_assert_str_eq(rmq_config_str(&cfg, "tcp.interface"), "ib0.8001");
	ck_assert_str_eq(rmq_config_str(&cfg, "sockets.interface"), "lo");
	ck_assert_str_eq(rmq_config_str(&cfg, "verbs.interface"), "ib0");
	ck_assert_str_eq(rmq_config_str(&cfg, "verbs.domain"), "mlx5_0");
	ck_assert_str_eq(
	    rmq_config_str(&cfg, "efa.domain"), "rdmap0s6-rdm");
	ck_assert_str_eq(cfg.numa_cpuset, "0-3,8");
	/* "" is the default: none */
	ck_assert_int_eq(
	    load_str(&cfg, "tcp.interface: \"\"\n", err, sizeof err), 0);
	ck_assert_str_eq(rmq_config_str(&cfg, "tcp.interface"), "");

	check_str_error("tcp.interface: eth 0\n",
	    "t:1:16: tcp.interface: expected an interface name (up to 15 of "
	    "A-Z a-z 0-9 _ - . : @, e.g. eth0), got 'eth 0'");
	check_str_error("tcp.interface: abcdefghijklmnop\n",
	    "t:1:16: tcp.interface: expected an interface name (up to 15 of "
	    "A-Z a-z 0-9 _ - . : @, e.g. eth0), got 'abcdefghijklmnop'");
	check_str_error("verbs.domain: \"mlx5 0\"\n",
	    "t:1:15: verbs.domain: expected a domain name as fi_info prints "
	    "it (up to 63 printable characters, no spaces, quotes or "
	    "backslashes, e.g. mlx5_0), got "
	    "'mlx5 0'");
	/* A quote would not survive the dump (found by fuzz_yaml). */
	check_str_error("efa.domain: 'a\"b'\n",
	    "t:1:13: efa.domain: expected a domain name as fi_info prints "
	    "it (up to 63 printable characters, no spaces, quotes or "
	    "backslashes, e.g. mlx5_0), got 'a\"b'");
	check_str_error("tcp.interface: [eth0]\n",
	    "t:1:16: tcp.interface: expected an interface name (up to 15 of "
	    "A-Z a-z 0-9 _ - . : @, e.g. eth0), got a sequence");
	{
		static const char *const bad[] = {"3-1", "0-", "a", "1,,2", ",1",
		                                  "1,", "-1", "70000", "0 - 3"};
		char   yaml[64], want[RMQ_CFG_ERR_MAX];
		size_t i;

		for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			snprintf(yaml, sizeof yaml, "numa.cpuset: \"%s\"\n",
			    bad[i]);
			snprintf(want, sizeof want,
			    "t:1:14: numa.cpuset: expected CPUs as a list of "
			    "numbers and low-high ranges up to 65535 (e.g. "
			    "0-3,8), got '%s'",
			    bad[i]);
			check_str_error(yaml, want);
		}
	}
}
END_TEST

/* thresholds.sockets.NAME: sections by socket name or pattern. */
START_TEST(test_named_sections)
{
	struct rmq_config           cfg;
	const struct rmq_cfg_section *nd;
	char                        err[RMQ_CFG_ERR_MAX];

	ck_assert_int_eq(load_str(&cfg,
	                     "thresholds:\n"
	                     "  sockets:\n"
	                     "    \"b*\":\n"
	                     "      path: seg\n"
	                     "    bulk:\n"
	                     "      eager_max: 8KiB\n"
	                     "    \"bu[lm]k?\":\n"
	                     "      ring_max: 4KiB\n"
	                     "thresholds.sockets.bulk.rndv: rndv_write\n"
	                     "thresholds.sockets.empty:\n",
	                     err, sizeof err),
	    0);
	ck_assert_int_eq(cfg.nnamed, 4);
	/* an exact name first, then the first pattern in file order */
	nd = rmq_config_named(&cfg, "bulk");
	ck_assert_ptr_nonnull(nd);
	ck_assert_str_eq(nd->name, "bulk");
	ck_assert_uint_eq(nd->p.eager_max, 8 * KiB);
	ck_assert_int_eq(nd->p.rndv, RMQ_PATH_RNDV_WRITE);
	ck_assert_int_eq(nd->p.force, -1);
	ck_assert_uint_eq(nd->line[RMQ_CFG_PK_EAGER], 6);
	ck_assert_uint_eq(nd->line[RMQ_CFG_PK_RNDV], 9);
	ck_assert_uint_eq(nd->line[RMQ_CFG_PK_PATH], 0);
	nd = rmq_config_named(&cfg, "bulmk1");
	ck_assert_ptr_nonnull(nd);
	ck_assert_str_eq(nd->name, "b*");
	ck_assert_int_eq(nd->p.force, RMQ_PATH_SEG);
	ck_assert_ptr_null(rmq_config_named(&cfg, "ctl"));
	ck_assert_ptr_null(rmq_config_named(&cfg, NULL));
	ck_assert_ptr_null(rmq_config_named(&cfg, ""));
	nd = rmq_config_named(&cfg, "empty");
	ck_assert_ptr_nonnull(nd);
	ck_assert_uint_eq(nd->p.eager_max, 0);

	check_str_error("thresholds.sockets:\n  \"a b\":\n    path: seg\n",
	    "t:2:3: thresholds.sockets: 'a b' is not a socket name (1 to 63 "
	    "of A-Z a-z 0-9 _ -, or an fnmatch pattern of them with * ? [ ])");
	check_str_error("thresholds.sockets:\n  bulk:\n    eagr_max: 1\n",
	    "t:3:5: unknown key 'thresholds.sockets.bulk.eagr_max' (did you "
	    "mean 'thresholds.sockets.bulk.eager_max'?)");
	check_str_error("thresholds.sockets:\n  bulk:\n    slabs: 1\n",
	    "t:3:5: unknown key 'thresholds.sockets.bulk.slabs' (a socket's "
	    "section takes inject_max, eager_max, ring_max, rndv and path)");
	check_str_error("thresholds.sockets:\n  bulk:\n    rndv: fast\n",
	    "t:3:11: thresholds.sockets.bulk.rndv: expected one of auto, "
	    "rndv_read, rndv_send, rndv_write, seg, got 'fast'");
	check_str_error("thresholds.sockets:\n  bulk:\n    path: seg\n"
	                "thresholds.sockets.bulk.path: eager\n",
	    "t:4:1: duplicate key 'thresholds.sockets.bulk.path'");
	check_str_error("thresholds.sockets: 3\n",
	    "t:1:21: thresholds.sockets: expected a mapping, got '3'");
	{
		char   yaml[2048];
		size_t pos = 0;
		int    i;

		pos += (size_t) snprintf(yaml, sizeof yaml,
		    "thresholds.sockets:\n");
		for (i = 0; i < RMQ_CFG_NAMED_MAX + 1; i++)
			pos += (size_t) snprintf(yaml + pos, sizeof yaml - pos,
			    "  s%d:\n    path: eager\n", i);
		check_str_error(yaml,
		    "t:34:3: thresholds.sockets: 's16': at most 16 socket "
		    "names");
	}
}
END_TEST

/* The shipped example is valid and says exactly the defaults. */
START_TEST(test_load_example)
{
	struct rmq_config cfg, def;
	char              err[RMQ_CFG_ERR_MAX];
	int               rc;

	rmq_config_defaults(&def);
	memset(&cfg, 0, sizeof cfg);
	rc = rmq_config_load(&cfg, RMQ_TEST_EXAMPLE, err, sizeof err);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	assert_same_values(&cfg, &def);
}
END_TEST

START_TEST(test_load_dotted_key)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	ck_assert_int_eq(load_str(&cfg,
	                     "thresholds.eager_max: 8K\n"
	                     "thresholds:\n  inject_max: 64\n",
	                     err, sizeof err),
	    0);
	ck_assert_uint_eq(cfg.eager_max, 8 * KiB);
	ck_assert_uint_eq(cfg.inject_max, 64);
}
END_TEST

/* "thresholds:" whose keys are all commented out is an empty section. */
START_TEST(test_load_empty_section)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	ck_assert_int_eq(load_str(&cfg,
	                     "thresholds:\n"
	                     "#  eager_max: 1M\n"
	                     "log: info\n",
	                     err, sizeof err),
	    0);
	ck_assert_int_eq(cfg.log_level, RMQ_LOG_INFO);
	ck_assert_uint_eq(cfg.eager_max, 0);
}
END_TEST

/* log.level, and "log: LEVEL" short for it; RMQ_LOG_LEVEL too. */
START_TEST(test_load_log_level)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	ck_assert_int_eq(load_str(&cfg, "log:\n  level: debug\n", err,
	                          sizeof err), 0);
	ck_assert_int_eq(cfg.log_level, RMQ_LOG_DEBUG);
	ck_assert_int_eq(load_str(&cfg, "log: {level: off}\n", err,
	                          sizeof err), 0);
	ck_assert_int_eq(cfg.log_level, RMQ_LOG_OFF);
	ck_assert_int_eq(load_str(&cfg, "log: error\n", err, sizeof err), 0);
	ck_assert_int_eq(cfg.log_level, RMQ_LOG_ERROR);
	check_str_error("log:\n  levle: info\n",
	    "t:2:3: unknown key 'log.levle' (did you mean 'log.level'?)");
}
END_TEST

START_TEST(test_load_flow_and_quotes)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	ck_assert_int_eq(load_str(&cfg,
	                     "{provider: \"efa\", 'log': ERROR,\n"
	                     " memory: {slabs: 64}}\n",
	                     err, sizeof err),
	    0);
	ck_assert_str_eq(cfg.provider, "efa");
	ck_assert_int_eq(cfg.log_level, RMQ_LOG_ERROR);
	ck_assert_int_eq(cfg.slabs, 64);
}
END_TEST

START_TEST(test_err_bad_size)
{
	check_file_error("config_bad_size.yaml",
	    "config_bad_size.yaml:3:14: thresholds.eager_max: "
	    "expected a size (e.g. 65536, 64KiB), got 'lots'");
}
END_TEST

START_TEST(test_err_bad_int)
{
	check_file_error("config_bad_int.yaml",
	    "config_bad_int.yaml:2:10: memory.slabs: "
	    "expected an integer, got '4x'");
}
END_TEST

START_TEST(test_err_unknown_key)
{
	check_file_error("config_unknown_key.yaml",
	    "config_unknown_key.yaml:2:3: unknown key "
	    "'thresholds.eagr_max' "
	    "(did you mean 'thresholds.eager_max'?)");
}
END_TEST

START_TEST(test_err_unknown_key_last_part)
{
	check_file_error("config_unknown_top.yaml",
	    "config_unknown_top.yaml:2:1: unknown key "
	    "'eager_max' (did you mean 'thresholds.eager_max'?)");
}
END_TEST

START_TEST(test_err_unknown_key_no_hint)
{
	check_str_error(
	    "memory:\n  colour: blue\n", "t:2:3: unknown key 'memory.colour'");
	check_str_error("a: 1\n", "t:1:1: unknown key 'a'");
}
END_TEST

START_TEST(test_err_unknown_section)
{
	check_str_error("threshold:\n  eager_max: 1\n",
	    "t:1:1: unknown key 'threshold' "
	    "(did you mean 'thresholds'?)");
	check_str_error("limits:\n  eager_max: 1\n",
	    "t:2:3: unknown key 'limits.eager_max' "
	    "(did you mean 'thresholds.eager_max'?)");
}
END_TEST

/* A NUL inside a quoted key must not make "provider\0x" a known key. */
START_TEST(test_err_unknown_key_nul)
{
	check_str_error(
	    "\"provider\\0x\": tcp\n", "t:1:1: unknown key 'provider?x'");
}
END_TEST

START_TEST(test_err_bad_enum)
{
	check_file_error("config_bad_enum.yaml",
	    "config_bad_enum.yaml:5:11: provider: expected one "
	    "of auto, shm, tcp, sockets, verbs, efa, got 'ib'");
}
END_TEST

START_TEST(test_err_out_of_range)
{
	check_file_error("config_range.yaml",
	    "config_range.yaml:4:11: limits.rcvhwm: "
	    "0 is out of range 1..1000000");
}
END_TEST

START_TEST(test_err_size_out_of_range)
{
	check_str_error("memory:\n  slab_size: 2G\n",
	    "t:2:14: memory.slab_size: "
	    "2G is out of range 64KiB..1GiB");
}
END_TEST

START_TEST(test_err_duplicate_key)
{
	check_file_error("config_duplicate.yaml",
	    "config_duplicate.yaml:3:1: duplicate key "
	    "'provider'");
}
END_TEST

START_TEST(test_err_duplicate_section)
{
	check_file_error("config_dup_section.yaml",
	    "config_dup_section.yaml:5:1: duplicate key "
	    "'thresholds'");
}
END_TEST

START_TEST(test_err_duplicate_dotted)
{
	check_str_error("thresholds.eager_max: 1\n"
	                "thresholds:\n  eager_max: 2\n",
	    "t:3:3: duplicate key 'thresholds.eager_max'");
}
END_TEST

START_TEST(test_err_syntax)
{
	check_file_error("config_syntax.yaml",
	    "config_syntax.yaml:2:10: YAML syntax error: "
	    "mapping values are not allowed in this context");
}
END_TEST

START_TEST(test_err_bad_utf8)
{
	check_file_error("config_bad_utf8.yaml",
	    "config_bad_utf8.yaml:2:12: YAML syntax error: "
	    "invalid leading UTF-8 octet");
}
END_TEST

START_TEST(test_err_scalar_for_section)
{
	check_file_error("config_section_scalar.yaml",
	    "config_section_scalar.yaml:2:13: thresholds: "
	    "expected a mapping, got '5'");
}
END_TEST

START_TEST(test_err_mapping_for_value)
{
	check_file_error("config_value_mapping.yaml",
	    "config_value_mapping.yaml:2:3: provider: expected "
	    "one of auto, shm, tcp, sockets, verbs, efa, "
	    "got a mapping");
}
END_TEST

START_TEST(test_err_sequence)
{
	check_file_error("config_sequence.yaml",
	    "config_sequence.yaml:2:3: log: expected one of off, "
	    "error, warn, info, debug, got a sequence");
}
END_TEST

START_TEST(test_err_top_not_mapping)
{
	check_file_error("config_top_sequence.yaml",
	    "config_top_sequence.yaml:1:1: top level must be a "
	    "mapping, got a sequence");
	check_str_error(
	    "hello\n", "t:1:1: top level must be a mapping, got a scalar");
}
END_TEST

START_TEST(test_err_two_documents)
{
	check_file_error("config_two_docs.yaml",
	    "config_two_docs.yaml:2:1: only one YAML document "
	    "is allowed");
}
END_TEST

START_TEST(test_err_alias)
{
	check_str_error("log: &l info\nprovider: *l\n",
	    "t:2:11: provider: expected one of auto, shm, tcp, "
	    "sockets, verbs, efa, got an alias");
}
END_TEST

START_TEST(test_err_complex_key)
{
	check_str_error(
	    "? {a: 1}\n: 2\n", "t:1:3: expected a key, got a mapping");
}
END_TEST

/* Valid keys before the error must not leak into the caller's config. */
START_TEST(test_err_leaves_config_unchanged)
{
	struct rmq_config cfg, before;
	char              err[RMQ_CFG_ERR_MAX];
	int               rc;

	rmq_config_defaults(&cfg);
	rc = rmq_config_load(&cfg, data("config_full.yaml"), err, sizeof err);
	ck_assert_int_eq(rc, 0);
	memcpy(&before, &cfg, sizeof before);
	rc = rmq_config_load_string(&cfg,
	    "provider: tcp\nlog: error\n"
	    "memory:\n  slabs: 2\n  slab_size: 1T\n",
	    "t", err, sizeof err);
	ck_assert_int_eq(rc, -RMQ_ECONFIG);
	ck_assert_mem_eq(&cfg, &before, sizeof cfg);
}
END_TEST

/* Long messages are cut and still NUL-terminated; err may be NULL. */
START_TEST(test_err_truncated)
{
	struct rmq_config cfg;
	char              err[16];

	memset(err, 'x', sizeof err);
	ck_assert_int_eq(
	    load_str(&cfg, "provider: ib\n", err, 8), -RMQ_ECONFIG);
	ck_assert_str_eq(err, "t:1:11:");
	ck_assert_int_eq(err[8], 'x');
	ck_assert_int_eq(
	    load_str(&cfg, "provider: ib\n", NULL, 0), -RMQ_ECONFIG);
	ck_assert_int_eq(
	    load_str(&cfg, "provider: ib\n", err, 0), -RMQ_ECONFIG);
}
END_TEST

/* Long user text is cut in the message. */
START_TEST(test_err_long_value)
{
	check_str_error(
	    "log: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaa\n",
	    "t:1:6: log.level: expected one of off, error, warn, info, "
	    "debug, got "
	    "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'");
}
END_TEST

struct size_case {
	const char *text;
	int64_t     value; /* -2: rejected */
};

/* Through limits.max_msg_size: a size or -1, up to 1TiB. */
START_TEST(test_sizes)
{
	static const struct size_case cases[] = {
		{ "0", 0 },
		{ "65536", 65536 },
		{ "5B", 5 },
		{ "5b", 5 },
		{ "64K", 64 << 10 },
		{ "64k", 64 << 10 },
		{ "64KB", 64 << 10 },
		{ "64kb", 64 << 10 },
		{ "64KiB", 64 << 10 },
		{ "64kib", 64 << 10 },
		{ "64KIB", 64 << 10 },
		{ "3M", 3 << 20 },
		{ "3mb", 3 << 20 },
		{ "3MiB", 3 << 20 },
		{ "2G", (int64_t) 2 << 30 },
		{ "2gB", (int64_t) 2 << 30 },
		{ "2GiB", (int64_t) 2 << 30 },
		{ "1024G", (int64_t) 1 << 40 },
		{ "007", 7 },
		{ "-1", -1 },
		{ "1025G", -2 },
		{ "1099511627777", -2 },
		{ "99999999999999999999", -2 },
		{ "9999999999999999999G", -2 },
		{ "-2", -2 },
		{ "-0", -2 },
		{ "+5", -2 },
		{ "1.5M", -2 },
		{ "12Q", -2 },
		{ "12 K", -2 },
		{ "K", -2 },
		{ "1T", -2 },
		{ "1KiBB", -2 },
		{ "0x10", -2 },
		{ "''", -2 },
		{ "", -2 },
	};
	struct rmq_config cfg;
	char              yaml[128];
	char              err[RMQ_CFG_ERR_MAX];
	size_t            i;
	int               rc;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(yaml, sizeof yaml, "limits:\n  max_msg_size: %s\n",
		    cases[i].text);
		rc = load_str(&cfg, yaml, err, sizeof err);
		if (cases[i].value == -2) {
			ck_assert_msg(rc == -RMQ_ECONFIG, "'%s' accepted",
			    cases[i].text);
			continue;
		}
		ck_assert_msg(rc == 0, "'%s': %s", cases[i].text, err);
		ck_assert_int_eq(cfg.max_msg_size, cases[i].value);
	}
}
END_TEST

START_TEST(test_size_errors)
{
	check_str_error("thresholds:\n  inject_max: -5\n",
	    "t:2:15: thresholds.inject_max: expected a size "
	    "(e.g. 65536, 64KiB), got '-5'");
	check_str_error("thresholds:\n  eager_max: 99999999999999999999\n",
	    "t:2:14: thresholds.eager_max: 99999999999999999999 "
	    "is out of range 0..64MiB");
	check_str_error("limits:\n  max_msg_size: 1.5M\n",
	    "t:2:17: limits.max_msg_size: expected a size "
	    "(e.g. 65536, 64KiB) or -1, got '1.5M'");
	check_str_error("limits:\n  max_msg_size: 2048G\n",
	    "t:2:17: limits.max_msg_size: 2048G is out of range "
	    "-1..1024GiB");
}
END_TEST

struct int_case {
	const char *text;
	int         ok;
	int         value;
};

/* Through timeouts.send_ms: -1..2147483647. */
START_TEST(test_ints)
{
	static const struct int_case cases[] = {
		{ "0", 1, 0 },
		{ "-1", 1, -1 },
		{ "+7", 1, 7 },
		{ "0010", 1, 10 },
		{ "2147483647", 1, 2147483647 },
		{ "2147483648", 0, 0 },
		{ "-2", 0, 0 },
		{ "99999999999999999999", 0, 0 },
		{ "-9223372036854775808", 0, 0 },
		{ "-99999999999999999999", 0, 0 },
		{ "1e3", 0, 0 },
		{ "0x10", 0, 0 },
		{ "12abc", 0, 0 },
		{ "1.0", 0, 0 },
		{ "-", 0, 0 },
		{ "1K", 0, 0 },
		{ "", 0, 0 },
	};
	struct rmq_config cfg;
	char              yaml[128];
	char              err[RMQ_CFG_ERR_MAX];
	size_t            i;
	int               rc;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(yaml, sizeof yaml, "timeouts:\n  send_ms: %s\n",
		    cases[i].text);
		rc = load_str(&cfg, yaml, err, sizeof err);
		if (!cases[i].ok) {
			ck_assert_msg(rc == -RMQ_ECONFIG, "'%s' accepted",
			    cases[i].text);
			continue;
		}
		ck_assert_msg(rc == 0, "'%s': %s", cases[i].text, err);
		ck_assert_int_eq(cfg.sndtimeo_ms, cases[i].value);
	}
}
END_TEST

START_TEST(test_missing_file)
{
	struct rmq_config cfg, before;
	char              err[RMQ_CFG_ERR_MAX];
	char              want[RMQ_CFG_ERR_MAX];

	rmq_config_defaults(&cfg);
	memcpy(&before, &cfg, sizeof before);
	ck_assert_int_eq(rmq_config_load(&cfg, data("config_nonexistent.yaml"),
	                     err, sizeof err),
	    -ENOENT);
	snprintf(want, sizeof want,
	    "%s/config_nonexistent.yaml: ", RMQ_TEST_DATA_DIR);
	ck_assert_int_eq(strncmp(err, want, strlen(want)), 0);
	ck_assert_mem_eq(&cfg, &before, sizeof cfg);
}
END_TEST

START_TEST(test_directory)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	rmq_config_defaults(&cfg);
	ck_assert_int_eq(
	    rmq_config_load(&cfg, RMQ_TEST_DATA_DIR, err, sizeof err),
	    -EISDIR);
}
END_TEST

START_TEST(test_env_overrides)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	setenv("RMQ_PROVIDER", "TCP", 1);
	setenv("RMQ_LOG", "debug", 1);
	setenv("RMQ_EAGER_MAX", "64KiB", 1);
	setenv("RMQ_INJECT_MAX", "256", 1);
	setenv("RMQ_SPIN_US", "0", 1);
	rmq_config_defaults(&cfg);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), 0);
	ck_assert_str_eq(cfg.provider, "tcp");
	ck_assert_int_eq(cfg.log_level, RMQ_LOG_DEBUG);
	ck_assert_uint_eq(cfg.eager_max, 64 * KiB);
	ck_assert_uint_eq(cfg.inject_max, 256);
	ck_assert_int_eq(cfg.spin_us, 0);
	ck_assert_int_eq(cfg.slabs, 4);
}
END_TEST

/* Every key has its full name: RMQ_ + KEY, '.' as '_'; it beats the
 * short one, and errors name the variable. */
START_TEST(test_env_full_names)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	env_clear();
	setenv("RMQ_LIMITS_SNDHWM", "5", 1);
	setenv("RMQ_TIMEOUTS_LINGER_MS", "-1", 1);
	setenv("RMQ_THRESHOLDS_PAIR_RNDV", "rndv_write", 1);
	setenv("RMQ_RING_SLOT_SIZE", "8KiB", 1);
	setenv("RMQ_EAGER_MAX", "1KiB", 1);
	setenv("RMQ_THRESHOLDS_EAGER_MAX", "2KiB", 1);
	rmq_config_defaults(&cfg);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), 0);
	ck_assert_int_eq(cfg.sndhwm, 5);
	ck_assert_int_eq(cfg.linger_ms, -1);
	ck_assert_ptr_nonnull(rmq_config_section(&cfg, "pair"));
	ck_assert_int_eq(rmq_config_section(&cfg, "pair")->p.rndv,
	    RMQ_PATH_RNDV_WRITE);
	ck_assert_int_eq(rmq_config_section(&cfg, "pair")->src[RMQ_CFG_PK_RNDV],
	    RMQ_CFG_SRC_ENV);
	ck_assert_uint_eq(cfg.ring_slot_size, 8 * KiB);
	ck_assert_uint_eq(cfg.eager_max, 2 * KiB);
	ck_assert_int_eq(cfg.src[rmq_config_key_index("limits.sndhwm")],
	    RMQ_CFG_SRC_ENV);
	ck_assert_int_eq(cfg.src[rmq_config_key_index("limits.rcvhwm")],
	    RMQ_CFG_SRC_DEFAULT);
	setenv("RMQ_LIMITS_RCVHWM", "0", 1);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), -RMQ_ECONFIG);
	ck_assert_str_eq(err, "RMQ_LIMITS_RCVHWM: 0 is out of range 1..1000000");
	env_clear();
}
END_TEST

/* The effective configuration, dumped, loads back to the same values. */
START_TEST(test_dump_round_trip)
{
	struct rmq_config cfg, back;
	char              err[RMQ_CFG_ERR_MAX], *buf = NULL;
	size_t            len = 0;
	FILE             *f;

	env_clear();
	rmq_config_defaults(&cfg);
	ck_assert_int_eq(load_str(&cfg,
	                     "provider: tcp\nthresholds:\n  ring_max: 32KiB\n"
	                     "  reqrep:\n    path: seg\nstrict: yes\n",
	                     err, sizeof err),
	    0);
	ck_assert_int_eq(rmq_config_load_string(&cfg,
	                     "provider_order: [tcp, shm]\nnuma.cpuset: 0-1\n"
	                     "tcp.interface: lo\nthresholds.sockets:\n"
	                     "  \"*x\":\n    rndv: seg\n    eager_max: 2KiB\n",
	                     "t", err, sizeof err),
	    0);
	/* A file name longer than the other text keys (found by fuzz_yaml:
	 * the dump cut it, and its quote, short). */
	ck_assert_int_eq(rmq_config_load_string(&cfg,
	                     "auth.key_file: /a/very/long/path/"
	                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	                     "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	                     "with spaces and } in it/rmq.key\n",
	                     "k", err, sizeof err),
	    0);
	setenv("RMQ_LIMITS_SNDHWM", "77", 1);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), 0);
	f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(rmq_config_dump(&cfg, f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "limits.sndhwm: 77  # environment"));
	ck_assert_ptr_nonnull(strstr(buf, "thresholds.ring_max: 32KiB  # file"));
	ck_assert_ptr_nonnull(strstr(buf, "thresholds.reqrep.path: seg  # file"));
	ck_assert_ptr_nonnull(strstr(buf, "strict: true  # file"));
	ck_assert_ptr_nonnull(strstr(buf, "memory.slabs: 4  # default"));
	ck_assert_ptr_nonnull(strstr(buf, "in it/rmq.key\"  # file"));
	ck_assert_ptr_nonnull(strstr(buf, "provider_order: [tcp, shm]  # file"));
	ck_assert_ptr_nonnull(strstr(buf, "numa.cpuset: \"0-1\"  # file"));
	ck_assert_ptr_nonnull(
	    strstr(buf, "\"thresholds.sockets.*x.rndv\": seg  # file"));
	ck_assert_ptr_nonnull(
	    strstr(buf, "\"thresholds.sockets.*x.eager_max\": 2KiB  # file"));
	memset(&back, 0xa5, sizeof back);
	rmq_config_defaults(&back);
	ck_assert_msg(rmq_config_load_string(&back, buf, "dump", err,
	                  sizeof err) == 0,
	    "%s", err);
	assert_same_values(&back, &cfg);
	free(buf);
	env_clear();
}
END_TEST

START_TEST(test_env_unset_keeps_config)
{
	struct rmq_config cfg, before;
	char              err[RMQ_CFG_ERR_MAX];

	setenv("RMQ_LOG", "", 1); /* empty counts as unset */
	rmq_config_defaults(&cfg);
	ck_assert_int_eq(
	    rmq_config_load(&cfg, data("config_full.yaml"), err, sizeof err),
	    0);
	memcpy(&before, &cfg, sizeof before);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), 0);
	ck_assert_mem_eq(&cfg, &before, sizeof cfg);
}
END_TEST

START_TEST(test_env_bad_value)
{
	struct rmq_config cfg, before;
	char              err[RMQ_CFG_ERR_MAX];

	setenv("RMQ_PROVIDER", "shm", 1); /* valid, applied first */
	setenv("RMQ_EAGER_MAX", "x", 1);
	rmq_config_defaults(&cfg);
	memcpy(&before, &cfg, sizeof before);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), -RMQ_ECONFIG);
	ck_assert_str_eq(err,
	    "RMQ_EAGER_MAX: expected a size "
	    "(e.g. 65536, 64KiB), got 'x'");
	ck_assert_mem_eq(&cfg, &before, sizeof cfg);
}
END_TEST

/* progress.wait_fd: true by default, false from the file or the
 * environment, and anything else refused with where it came from. */
START_TEST(test_wait_fd)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	rmq_config_defaults(&cfg);
	ck_assert_int_eq(cfg.wait_fd, 1);
	ck_assert_int_eq(load_str(&cfg, "progress:\n  wait_fd: false\n", err,
	                     sizeof err),
	    0);
	ck_assert_int_eq(cfg.wait_fd, 0);
	ck_assert_int_eq(load_str(&cfg, "progress.wait_fd: true\n", err,
	                     sizeof err),
	    0);
	ck_assert_int_eq(cfg.wait_fd, 1);
	ck_assert_int_eq(load_str(&cfg, "progress:\n  wait_fd: 2\n", err,
	                     sizeof err),
	    -RMQ_ECONFIG);
	ck_assert_msg(strstr(err, "wait_fd") != NULL, "%s", err);
	cfg.wait_fd = 1;
	setenv("RMQ_PROGRESS_WAIT_FD", "0", 1);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), 0);
	ck_assert_int_eq(cfg.wait_fd, 0);
	setenv("RMQ_PROGRESS_WAIT_FD", "sometimes", 1);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), -RMQ_ECONFIG);
	ck_assert_msg(strstr(err, "RMQ_PROGRESS_WAIT_FD") != NULL, "%s", err);
	ck_assert_int_eq(cfg.wait_fd, 0);
}
END_TEST

START_TEST(test_env_out_of_range)
{
	struct rmq_config cfg;
	char              err[RMQ_CFG_ERR_MAX];

	setenv("RMQ_SPIN_US", "10000001", 1);
	rmq_config_defaults(&cfg);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), -RMQ_ECONFIG);
	ck_assert_str_eq(err,
	    "RMQ_SPIN_US: 10000001 is out of range "
	    "0..10000000");
	setenv("RMQ_SPIN_US", "1", 1);
	setenv("RMQ_LOG", "loud", 1);
	ck_assert_int_eq(rmq_config_env(&cfg, err, sizeof err), -RMQ_ECONFIG);
	ck_assert_str_eq(err,
	    "RMQ_LOG: expected one of off, error, warn, info, "
	    "debug, got 'loud'");
}
END_TEST

static void
check_no_crash(const char *yaml)
{
	struct rmq_config cfg, before;
	char              err[RMQ_CFG_ERR_MAX];
	int               rc;

	rmq_config_defaults(&cfg);
	memcpy(&before, &cfg, sizeof before);
	memset(err, 'x', sizeof err);
	rc = rmq_config_load_string(&cfg, yaml, "fuzz", err, sizeof err);
	ck_assert_msg(
	    rc == 0 || rc == -RMQ_ECONFIG, "rc %d for '%s'", rc, yaml);
	ck_assert_ptr_nonnull(memchr(err, '\0', sizeof err));
	if (rc != 0)
		ck_assert_mem_eq(&cfg, &before, sizeof cfg);
}

/* Every prefix of a valid file loads or fails cleanly. */
START_TEST(test_fuzz_truncated)
{
	char  *full = slurp(data("config_full.yaml"));
	size_t len  = strlen(full);
	size_t n;
	char  *cut;

	for (n = 0; n <= len; n++) {
		/* Exact size, so that valgrind sees any overrun. */
		cut = malloc(n + 1);
		ck_assert_ptr_nonnull(cut);
		memcpy(cut, full, n);
		cut[n] = '\0';
		check_no_crash(cut);
		free(cut);
	}
	free(full);
}
END_TEST

/* A small LCG: the same "random" cases on every run. */
static uint32_t
lcg(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

/* Valid files with bytes overwritten, and plain random bytes. */
START_TEST(test_fuzz_random)
{
	static const char alphabet[] = " \t\n:-#{}[],&*!|>'\"%@`?.0aZ\\\x80"
	                               "\xc3\xff";
	char             *full       = slurp(data("config_full.yaml"));
	size_t            len        = strlen(full);
	uint32_t          state      = 42;
	size_t            n, i, pos, rlen, nmut;
	char             *buf;
	unsigned          c;

	for (n = 0; n < 1500; n++) {
		buf = malloc(len + 1);
		ck_assert_ptr_nonnull(buf);
		memcpy(buf, full, len + 1);
		nmut = 1 + lcg(&state) % 6;
		for (i = 0; i < nmut; i++) {
			pos      = lcg(&state) % len;
			c        = lcg(&state);
			buf[pos] = c % 2
			    ? alphabet[c / 2 % (sizeof alphabet - 1)]
			    : (char) (1 + c / 2 % 255);
		}
		check_no_crash(buf);
		free(buf);
	}
	for (n = 0; n < 500; n++) {
		rlen = lcg(&state) % 200;
		buf  = malloc(rlen + 1);
		ck_assert_ptr_nonnull(buf);
		for (i = 0; i < rlen; i++)
			buf[i] = (char) (1 + lcg(&state) % 255);
		buf[rlen] = '\0';
		check_no_crash(buf);
		free(buf);
	}
	free(full);
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s  = suite_create("config");
	TCase *tc = tcase_create("unit");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, env_clear, env_clear);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_schema_rows);
	tcase_add_test(tc, test_load_empty_file);
	tcase_add_test(tc, test_load_comments_only);
	tcase_add_test(tc, test_load_full);
	tcase_add_test(tc, test_load_example);
	tcase_add_test(tc, test_wait_fd);
	tcase_add_test(tc, test_provider_order);
	tcase_add_test(tc, test_schema_from_registry);
	tcase_add_test(tc, test_text_keys);
	tcase_add_test(tc, test_named_sections);
	tcase_add_test(tc, test_load_dotted_key);
	tcase_add_test(tc, test_load_empty_section);
	tcase_add_test(tc, test_load_flow_and_quotes);
	tcase_add_test(tc, test_err_bad_size);
	tcase_add_test(tc, test_err_bad_int);
	tcase_add_test(tc, test_err_unknown_key);
	tcase_add_test(tc, test_err_unknown_key_last_part);
	tcase_add_test(tc, test_err_unknown_key_no_hint);
	tcase_add_test(tc, test_err_unknown_section);
	tcase_add_test(tc, test_err_unknown_key_nul);
	tcase_add_test(tc, test_err_bad_enum);
	tcase_add_test(tc, test_err_out_of_range);
	tcase_add_test(tc, test_err_size_out_of_range);
	tcase_add_test(tc, test_err_duplicate_key);
	tcase_add_test(tc, test_err_duplicate_section);
	tcase_add_test(tc, test_err_duplicate_dotted);
	tcase_add_test(tc, test_err_syntax);
	tcase_add_test(tc, test_err_bad_utf8);
	tcase_add_test(tc, test_err_scalar_for_section);
	tcase_add_test(tc, test_err_mapping_for_value);
	tcase_add_test(tc, test_err_sequence);
	tcase_add_test(tc, test_err_top_not_mapping);
	tcase_add_test(tc, test_err_two_documents);
	tcase_add_test(tc, test_err_alias);
	tcase_add_test(tc, test_err_complex_key);
	tcase_add_test(tc, test_err_leaves_config_unchanged);
	tcase_add_test(tc, test_err_truncated);
	tcase_add_test(tc, test_err_long_value);
	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_size_errors);
	tcase_add_test(tc, test_ints);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_directory);
	tcase_add_test(tc, test_env_overrides);
	tcase_add_test(tc, test_env_unset_keeps_config);
	tcase_add_test(tc, test_env_bad_value);
	tcase_add_test(tc, test_env_out_of_range);
	tcase_add_test(tc, test_env_full_names);
	tcase_add_test(tc, test_dump_round_trip);
	tcase_add_test(tc, test_fuzz_truncated);
	tcase_add_test(tc, test_fuzz_random);
	tcase_add_test(tc, test_load_log_level);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(config_suite)
