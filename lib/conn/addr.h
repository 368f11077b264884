/*
 * Endpoint strings and addresses (addr.c): "tcp://host:port",
 * "shm://NAME", "fabric://..." parsed into a provider and a control
 * address; where the fabric endpoint opens.
 */
#ifndef RMQ_ADDR_H
#define RMQ_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "config.h"
#include "prov.h"
#include "rmq.h"

struct rmq_addr {
	const struct rmq_prov *prov;
	bool   unix_name;   /* shm://NAME: abstract Unix socket */
	char   host[128];
	char   port[16];
	char   name[96];
};

int rmq_addr_parse(rmq_ctx *ctx, const char *endpoint, struct rmq_addr *a);
/* host:port into sin (passive: for bind); -RMQ_EADDR, logged. */
int rmq_addr_resolve(const struct rmq_addr *a, bool passive,
                     struct sockaddr_in *sin);
/* The abstract Unix socket address of shm://NAME. */
socklen_t rmq_addr_unix(struct sockaddr_un *un, const char *name);
/* "host:port" or "NAME", for messages. */
void rmq_addr_show(const struct rmq_addr *a, char *buf, size_t len);
/*
 * The node to open the fabric endpoint on: an IPv4 address in buf, or
 * NULL (*nodep).  sin: the address bound, or for a connect our side of
 * the control connection.  With an interface in the config
 * (tcp.interface ...), a bind to * and every connect use that interface's
 * address; a bind to another address is -RMQ_EADDR.
 */
int rmq_addr_ep_node(const struct rmq_config *cfg, const struct rmq_prov *prov,
                     const struct sockaddr_in *sin, bool bind, char *buf,
                     size_t len, const char **nodep);

#endif /* RMQ_ADDR_H */
