/*
 * Contexts: the configuration (loaded, then checked against this machine
 * and by the registry above, for the patterns there are), the progress
 * thread, and the domains its sockets share (dom.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "caps.h"
#include "ctx.h"
#include "pattern_ops.h"
#include "util.h"

/*
 * A provider named in the file or the environment that this machine lacks
 * fails the context now, with where it was set and what there is.
 */
static int
provider_here(const struct rmq_config *cfg, char *err, size_t len)
{
	const struct rmq_prov *p;
	char                   where[200], have[128];

	if (strcmp(cfg->provider, "auto") == 0)
		return 0;
	p = rmq_prov_by_name(cfg->provider);
	if (p != NULL && rmq_prov_available(p))
		return 0;
	rmq_prov_available_list(have, sizeof(have));
	rmq_config_where(cfg, "provider", where, sizeof(where));
	snprintf(err, len,
	         "%s: '%s' is not available on this machine (available here: "
	         "%s)",
	         where, cfg->provider, have);
	return -RMQ_ECONFIG;
}

/*
 * What the schema cannot check alone: keys that need each other, and
 * interfaces, which must exist on this machine.
 */
static int
config_here(const struct rmq_config *cfg, char *err, size_t len)
{
	const struct rmq_prov *const *pp;
	struct rmq_knobs              k;
	char                          where[200], have[160];
	struct sockaddr_storage       a;

	if (cfg->numa_policy == RMQ_CFG_NUMA_CPUSET &&
	    cfg->numa_cpuset[0] == '\0') {
		rmq_config_where(cfg, "numa.policy", where, sizeof(where));
		snprintf(err, len,
		         "%s: policy cpuset needs numa.cpuset (the CPUs, e.g. "
		         "\"0-3\")",
		         where);
		return -RMQ_ECONFIG;
	}
	for (pp = rmq_prov_all(); *pp != NULL; pp++) {
		rmq_prov_knobs(cfg, *pp, &k);
		if (k.iface == NULL ||
		    rmq_iface_addr(k.iface, AF_INET, &a, have, sizeof(have)) !=
		        -RMQ_ENODEV)
			continue;
		rmq_config_where(cfg, k.iface_key, where, sizeof(where));
		snprintf(err, len,
		         "%s: '%s' is not a network interface on this machine "
		         "(interfaces here: %s)",
		         where, k.iface, have[0] ? have : "none");
		return -RMQ_ECONFIG;
	}
	return 0;
}

/* The provider rows' environment defaults, once, before libfabric's
 * first fi_getinfo in the process (a value already set wins). */
static void
prov_env_once(void)
{
	const struct rmq_prov *const *pp;
	const char *const            *e;

	for (pp = rmq_prov_all(); *pp != NULL; pp++)
		for (e = (*pp)->env_defaults; e != NULL && *e != NULL; e += 2)
			(void) setenv(e[0], e[1], 0);
}

#define AUTH_KEY_MIN 16
#define AUTH_KEY_MAX 4096

static void
auth_free(uint8_t *key, size_t len)
{
	if (key == NULL)
		return;
	sodium_memzero(key, len);
	free(key);
}

/*
 * auth.key_file, if set (conn/auth.h uses it): a regular file of ours
 * that nobody else may read or write (mode 0600 or 0400), of 16 to 4096
 * bytes, one trailing newline dropped.  *key (malloc'd; NULL when unset)
 * and *len; -RMQ_ECONFIG (or -errno) with a message in err.
 */
static int
auth_load(const struct rmq_config *cfg, uint8_t **key, size_t *len,
          char *err, size_t errlen)
{
	const char *path = cfg->auth_key_file;
	struct stat st;
	uint8_t    *k;
	ssize_t     n;
	size_t      have = 0;
	char        where[300];
	int         fd, rc;

	*key = NULL;
	*len = 0;
	if (path[0] == '\0')
		return 0;
	rmq_config_where(cfg, "auth.key_file", where, sizeof(where));
	if (sodium_init() < 0) {
		snprintf(err, errlen, "%.150s: libsodium did not start", where);
		return -RMQ_ECONFIG;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%.150s: %s: %s", where, path,
		         strerror(errno));
		return rc;
	}
	rc = -RMQ_ECONFIG;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%.150s: %s is not a regular file", where,
		         path);
		goto out;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		snprintf(err, errlen,
		         "%.150s: %s must be ours (uid %u) and private (mode 0600 "
		         "or 0400); it is uid %u, mode %04o", where, path,
		         (unsigned) geteuid(), (unsigned) st.st_uid,
		         (unsigned) (st.st_mode & 07777));
		goto out;
	}
	if (st.st_size > AUTH_KEY_MAX + 2) {
		snprintf(err, errlen, "%.150s: %s holds %lld bytes; a key is %d to "
		         "%d bytes", where, path, (long long) st.st_size,
		         AUTH_KEY_MIN, AUTH_KEY_MAX);
		goto out;
	}
	k = malloc(AUTH_KEY_MAX + 2);
	if (k == NULL) {
		rc = -RMQ_ENOMEM;
		goto out;
	}
	while (have < AUTH_KEY_MAX + 2 &&
	       (n = read(fd, k + have, AUTH_KEY_MAX + 2 - have)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "%.150s: %s: %s", where, path,
			         strerror(errno));
			auth_free(k, AUTH_KEY_MAX + 2);
			goto out;
		}
		have += (size_t) n;
	}
	/* "echo secret > key" and an editor's newline are not the key. */
	if (have > 0 && k[have - 1] == '\n')
		have--;
	if (have > 0 && k[have - 1] == '\r')
		have--;
	if (have < AUTH_KEY_MIN || have > AUTH_KEY_MAX) {
		snprintf(err, errlen,
		         "%.150s: %s holds %zu bytes; a key is %d to %d bytes",
		         where, path, have, AUTH_KEY_MIN, AUTH_KEY_MAX);
		auth_free(k, AUTH_KEY_MAX + 2);
		goto out;
	}
	*key = malloc(have);
	if (*key == NULL) {
		rc = -RMQ_ENOMEM;
	} else {
		memcpy(*key, k, have);
		*len = have;
		rc   = 0;
	}
	auth_free(k, AUTH_KEY_MAX + 2);
out:
	close(fd);
	return rc;
}

/* rmq_ctx_new (patterns/registry.c) passes the patterns' check. */
int
rmq_ctx_open(rmq_ctx **ctxp, const char *config_path, rmq_cfg_check_fn check)
{
	static pthread_once_t env_once = PTHREAD_ONCE_INIT;
	char     err[RMQ_CFG_ERR_MAX];
	rmq_ctx *ctx;
	int      rc;

	if (ctxp == NULL)
		return -RMQ_EINVAL;
	*ctxp = NULL;
	(void) pthread_once(&env_once, prov_env_once);
	ctx   = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		return -RMQ_ENOMEM;
	rmq_config_defaults(&ctx->cfg);
	if (config_path == NULL)
		config_path = getenv("RMQ_CONFIG");
	if (config_path != NULL && config_path[0] != '\0') {
		rc = rmq_config_load(&ctx->cfg, config_path, err, sizeof(err));
		if (rc != 0) {
			rmq_log(RMQ_LOG_ERROR, "%s", err);
			goto fail;
		}
	}
	rc = rmq_config_env(&ctx->cfg, err, sizeof(err));
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "%s", err);
		goto fail;
	}
	rmq_log_set_level(ctx->cfg.log_level);
	rc = provider_here(&ctx->cfg, err, sizeof(err));
	if (rc == 0)
		rc = config_here(&ctx->cfg, err, sizeof(err));
	if (rc == 0 && check != NULL)
		rc = check(&ctx->cfg, err, sizeof(err));
	if (rc == 0)
		rc = auth_load(&ctx->cfg, &ctx->auth_key, &ctx->auth_key_len,
		               err, sizeof(err));
	if (rc != 0) {
		rmq_log(RMQ_LOG_ERROR, "%s", err);
		goto fail;
	}
	ctx->shut_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->shut_fd < 0) {
		rc = -errno;
		goto fail;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	if (ctx->cfg.progress_mode == RMQ_CFG_PROGRESS_THREAD)
		rc = rmq_thread_start(&ctx->progress, true, false,
		                      ctx->cfg.thread_sleep_us);
	else
		rc = rmq_thread_start(&ctx->progress, false,
		                      ctx->cfg.coalesce != 0,
		                      ctx->cfg.flush_us);
	if (rc != 0) {
		pthread_mutex_destroy(&ctx->lock);
		close(ctx->shut_fd);
		goto fail;
	}
	*ctxp = ctx;
	return 0;
fail:
	auth_free(ctx->auth_key, ctx->auth_key_len);
	free(ctx);
	return rc;
}

int
rmq_ctx_shutdown(rmq_ctx *ctx)
{
	uint64_t one = 1;

	if (ctx == NULL)
		return -RMQ_EINVAL;
	if (atomic_exchange(&ctx->shut, true))
		return 0;
	/* Wakes every wait asleep in poll(2): the fd is in each set. */
	if (write(ctx->shut_fd, &one, sizeof(one)) != (ssize_t) sizeof(one))
		return -errno;
	return 0;
}

int
rmq_ctx_destroy(rmq_ctx *ctx)
{
	if (ctx == NULL)
		return -RMQ_EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->nsockets != 0) {
		pthread_mutex_unlock(&ctx->lock);
		rmq_log(RMQ_LOG_INFO, "rmq_ctx_destroy: %d sockets still open",
		        ctx->nsockets);
		return -EBUSY;
	}
	pthread_mutex_unlock(&ctx->lock);
	rmq_thread_stop(&ctx->progress);
	pthread_mutex_destroy(&ctx->lock);
	close(ctx->shut_fd);
	/* Slabs still held by messages need no topology to be freed. */
	rmq_numa_close(&ctx->numa);
	auth_free(ctx->auth_key, ctx->auth_key_len);
	free(ctx);
	return 0;
}

