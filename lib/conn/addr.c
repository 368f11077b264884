/* Endpoint strings and addresses (addr.h). */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "conn/addr.h"
#include "ctx.h"
#include "util.h"

static bool
split_host_port(const char *rest, char *host, size_t hl, char *port,
                size_t pl)
{
	const char *colon = strrchr(rest, ':');
	size_t      n;
	char       *end;
	long        v;

	if (colon == NULL || colon == rest || colon[1] == '\0')
		return false;
	n = (size_t) (colon - rest);
	if (n >= hl || strlen(colon + 1) >= pl)
		return false;
	v = strtol(colon + 1, &end, 10);
	if (*end != '\0' || v < 0 || v > 65535)
		return false;
	memcpy(host, rest, n);
	host[n] = '\0';
	snprintf(port, pl, "%ld", v);
	if (strcmp(host, "*") == 0)
		snprintf(host, hl, "0.0.0.0");
	return true;
}

int
rmq_addr_parse(rmq_ctx *ctx, const char *endpoint, struct rmq_addr *a)
{
	const char *sep;
	char        scheme[16], why[300] = "";
	size_t      n;

	memset(a, 0, sizeof(*a));
	if (endpoint == NULL)
		return -RMQ_EINVAL;
	sep = strstr(endpoint, "://");
	if (sep == NULL || (n = (size_t) (sep - endpoint)) >= sizeof(scheme)) {
		rmq_log(RMQ_LOG_ERROR, "'%s': expected scheme://address",
		        endpoint);
		return -RMQ_EADDR;
	}
	memcpy(scheme, endpoint, n);
	scheme[n] = '\0';
	if (strcmp(scheme, "fabric") == 0) {
		if (strcmp(ctx->cfg.provider, "auto") == 0)
			a->prov = rmq_prov_auto(&ctx->cfg, why, sizeof(why));
		else
			a->prov = rmq_prov_by_name(ctx->cfg.provider);
		if (a->prov == NULL) {
			rmq_log(RMQ_LOG_ERROR, "'%s': %s", endpoint,
			        why[0] ? why : "no provider available");
			return -RMQ_ENODEV;
		}
	} else {
		a->prov = rmq_prov_by_name(scheme);
		if (a->prov == NULL) {
			rmq_log(RMQ_LOG_ERROR,
			        "'%s': unknown transport '%s' (expected shm, "
			        "tcp, sockets, verbs, efa or fabric)",
			        endpoint, scheme);
			return -EPROTONOSUPPORT;
		}
	}
	if (sep[3] == '[') {
		rmq_log(RMQ_LOG_ERROR, "'%s': IPv6 addresses are not supported "
		        "yet (use an IPv4 address or a host name)", endpoint);
		return -RMQ_ENOTSUP;
	}
	if (split_host_port(sep + 3, a->host, sizeof(a->host), a->port,
	                    sizeof(a->port)))
		return 0;
	/* shm://NAME: a name, the control channel on a Unix socket. */
	if ((a->prov->flags & RMQ_PROV_LOCAL_ONLY) && sep[3] != '\0' &&
	    strlen(sep + 3) < sizeof(a->name) &&
	    strpbrk(sep + 3, ":/") == NULL) {
		a->unix_name = true;
		snprintf(a->name, sizeof(a->name), "%s", sep + 3);
		return 0;
	}
	rmq_log(RMQ_LOG_ERROR, "'%s': expected %s://HOST:PORT%s", endpoint,
	        scheme,
	        (a->prov->flags & RMQ_PROV_LOCAL_ONLY) ? " or shm://NAME" : "");
	return -RMQ_EADDR;
}

socklen_t
rmq_addr_unix(struct sockaddr_un *un, const char *name)
{
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	/* Abstract namespace: no file to clean up, gone with the process. */
	snprintf(un->sun_path + 1, sizeof(un->sun_path) - 1, "rmq/%s", name);
	return (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 +
	                    strlen(un->sun_path + 1));
}

int
rmq_addr_resolve(const struct rmq_addr *a, bool passive,
                 struct sockaddr_in *sin)
{
	struct addrinfo hints = {0}, *res = NULL;
	int             rc;

	hints.ai_family   = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags    = passive ? AI_PASSIVE : 0;
	rc = getaddrinfo(a->host, a->port, &hints, &res);
	if (rc != 0 || res == NULL) {
		rmq_log(RMQ_LOG_ERROR, "cannot resolve %s:%s: %s", a->host,
		        a->port, gai_strerror(rc));
		return -RMQ_ERESOLVE;
	}
	memcpy(sin, res->ai_addr, sizeof(*sin));
	freeaddrinfo(res);
	return 0;
}

void
rmq_addr_show(const struct rmq_addr *a, char *buf, size_t len)
{
	if (a->unix_name)
		snprintf(buf, len, "%s", a->name);
	else
		snprintf(buf, len, "%s:%s", a->host, a->port);
}

int
rmq_addr_ep_node(const struct rmq_config *cfg, const struct rmq_prov *prov,
                 const struct sockaddr_in *sin, bool bind, char *buf,
                 size_t len, const char **nodep)
{
	struct rmq_knobs k;
	struct in_addr   a;
	char             where[300], have[256], asked[INET_ADDRSTRLEN];

	*nodep = NULL;
	if (!(prov->flags & RMQ_PROV_ADDR_SOCKADDR))
		return 0;
	rmq_prov_knobs(cfg, prov, &k);
	a = sin->sin_addr;
	if (k.iface != NULL) {
		rmq_config_where(cfg, k.iface_key, where, sizeof(where));
		if (bind && sin->sin_addr.s_addr != htonl(INADDR_ANY) &&
		    !rmq_iface_has(k.iface, sin->sin_addr)) {
			inet_ntop(AF_INET, &sin->sin_addr, asked, sizeof(asked));
			rmq_iface_ipv4(k.iface, &a, have, sizeof(have));
			rmq_log(RMQ_LOG_ERROR,
			        "%s: bind to %s: not an address of '%s' (its "
			        "address: %s); bind to * or to it",
			        where, asked, k.iface, have[0] ? have : "none");
			return -RMQ_EADDR;
		}
		if (!bind || sin->sin_addr.s_addr == htonl(INADDR_ANY)) {
			if (rmq_iface_ipv4(k.iface, &a, have, sizeof(have)) != 0) {
				rmq_log(RMQ_LOG_ERROR,
				        "%s: '%s' has no IPv4 address", where,
				        k.iface);
				return -RMQ_EADDR;
			}
		}
	}
	*nodep = inet_ntop(AF_INET, &a, buf, (socklen_t) len);
	return 0;
}
