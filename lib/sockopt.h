/*
 * Socket options (sockopt.c): the bodies of rmq_setopt and rmq_getopt,
 * called with the socket's lock held.
 */
#ifndef RMQ_SOCKOPT_H
#define RMQ_SOCKOPT_H

#include <stddef.h>

#include "rmq.h"

int rmq_setopt_locked(rmq_socket *s, int opt, const void *val, size_t len);
int rmq_getopt_locked(rmq_socket *s, int opt, void *val, size_t *len);

#endif /* RMQ_SOCKOPT_H */
