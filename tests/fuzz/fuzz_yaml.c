/*
 * fuzz_yaml: the configuration loader (config/config.c over libyaml).
 *
 * Input: the text of a configuration file (up to its first NUL, as
 * rmq_config_load_string takes a C string), loaded over the defaults.
 *   - It loads (0) or fails with -RMQ_ECONFIG and a message; a failed
 *     load leaves the configuration as it was.
 *   - What loads is written out with rmq_config_dump (which says it
 *     "loads back as it is"), loaded again over the defaults: it must
 *     load, to the same values (where each came from aside, as
 *     tests/unit/check_config.c compares them).
 * Nothing is left allocated: the loader frees its parser and events
 * (LeakSanitizer checks), the dump's buffer is freed here.
 *
 * It found that verbs.domain and efa.domain took '"' and '\', which the
 * dump wrote unescaped between double quotes (the inputs are kept in
 * tests/fuzz/crashes/ and are in the corpus): config/schema.c refuses
 * them now.
 */
#include <string.h>

#include "config.h"
#include "rmq.h"
#include "schema.h"

#include "fuzz.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	return 0;
}

/* Pattern sections that set nothing (they are not dumped). */
static void
drop_empty(struct rmq_cfg_section *sec, int *n, int max, int named)
{
	int i, j, k = 0;

	for (i = 0; i < *n; i++) {
		const struct rmq_cfg_paths *p = &sec[i].p;
		int                         set = 0;

		for (j = 0; j < RMQ_CFG_NPK; j++)
			set |= sec[i].src[j] != RMQ_CFG_SRC_DEFAULT;
		if (!named && p->inject_max == 0 && p->eager_max == 0 &&
		    p->ring_max == 0 && p->rndv == -1 && p->force == -1 &&
		    p->fanout_log == -1)
			set = 0;
		if (!set)
			continue;
		sec[k++] = sec[i];
	}
	for (i = k; i < max; i++)
		memset(&sec[i], 0, sizeof sec[i]);
	*n = k;
	for (i = 0; i < k; i++)
		for (j = 0; j < RMQ_CFG_NPK; j++) {
			/* Whether a key was set, not where or how. */
			sec[i].line[j] = named ? sec[i].line[j] != 0 : 0;
			sec[i].col[j]  = 0;
			sec[i].src[j]  = 0;
		}
}

/* The values alone: not where each came from. */
static void
values(struct rmq_config *c)
{
	drop_empty(c->sect, &c->nsect, RMQ_CFG_SECT_MAX, 0);
	drop_empty(c->named, &c->nnamed, RMQ_CFG_NAMED_MAX, 1);
	memset(c->src, 0, sizeof c->src);
	memset(c->line, 0, sizeof c->line);
	memset(c->col, 0, sizeof c->col);
	memset(c->file, 0, sizeof c->file);
}

static struct rmq_config cfg, before, back;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char   err[RMQ_CFG_ERR_MAX], err2[RMQ_CFG_ERR_MAX];
	char  *yaml = malloc(size + 1), *dump = NULL;
	size_t dlen = 0;
	FILE  *f;
	int    rc;

	FUZZ_CHECK(yaml != NULL, "out of memory");
	memcpy(yaml, data, size);
	yaml[size] = '\0';

	memset(&cfg, 0, sizeof cfg);
	rmq_config_defaults(&cfg);
	memcpy(&before, &cfg, sizeof before);
	memset(err, 'x', sizeof err);
	rc = rmq_config_load_string(&cfg, yaml, "fuzz", err, sizeof err);
	FUZZ_CHECK(rc == 0 || rc == -RMQ_ECONFIG, "load returned %d", rc);
	FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL,
	           "error message not terminated");
	if (rc != 0) {
		FUZZ_CHECK(err[0] != '\0', "failed without a message");
		FUZZ_CHECK(memcmp(&cfg, &before, sizeof cfg) == 0,
		           "a failed load changed the configuration: %s", err);
		free(yaml);
		return 0;
	}
	FUZZ_CHECK(err[0] == '\0', "loaded with a message: %s", err);
	/* Dump, load back, compare. */
	f = open_memstream(&dump, &dlen);
	FUZZ_CHECK(f != NULL, "open_memstream");
	rc = rmq_config_dump(&cfg, f);
	FUZZ_CHECK(fclose(f) == 0 && rc == 0, "dump returned %d", rc);
	memset(&back, 0, sizeof back);
	rmq_config_defaults(&back);
	rc = rmq_config_load_string(&back, dump, "dump", err2, sizeof err2);
	FUZZ_CHECK(rc == 0, "the dump does not load back: %s\n"
	                    "--- input:\n%s\n--- dump:\n%s",
	           err2, yaml, dump);
	values(&cfg);
	values(&back);
	FUZZ_CHECK(memcmp(&cfg, &back, sizeof cfg) == 0,
	           "the dump loads back to other values\n"
	           "--- input:\n%s\n--- dump:\n%s", yaml, dump);
	free(dump);
	free(yaml);
	return 0;
}
