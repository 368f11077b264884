/* The path rows, indexed by RMQ_PATH_* (path.h). */
#include "paths/path.h"
#include "socket.h"

const struct rmq_path_ops *const rmq_paths[RMQ_PATH_COUNT] = {
	[RMQ_PATH_INJECT]     = &rmq_path_inject,
	[RMQ_PATH_EAGER]      = &rmq_path_eager,
	[RMQ_PATH_RNDV_READ]  = &rmq_path_rndv_read,
	[RMQ_PATH_RNDV_SEND]  = &rmq_path_rndv_send,
	[RMQ_PATH_RING]       = &rmq_path_ring,
	[RMQ_PATH_RNDV_WRITE] = &rmq_path_rndv_write,
	[RMQ_PATH_SEG]        = &rmq_path_seg,
	[RMQ_PATH_LOCAL]      = &rmq_path_local,
};

int
rmq_paths_init(struct rmq_socket *s)
{
	int i, rc;

	for (i = 0; i < RMQ_PATH_COUNT; i++)
		if (rmq_paths[i]->sock_init != NULL &&
		    (rc = rmq_paths[i]->sock_init(s)) != 0)
			return rc;
	return 0;
}

void
rmq_paths_close(struct rmq_socket *s)
{
	int i;

	for (i = 0; i < RMQ_PATH_COUNT; i++)
		if (rmq_paths[i]->sock_close != NULL)
			rmq_paths[i]->sock_close(s);
}

void
rmq_paths_fini(struct rmq_socket *s)
{
	int i;

	for (i = 0; i < RMQ_PATH_COUNT; i++)
		if (rmq_paths[i]->sock_fini != NULL)
			rmq_paths[i]->sock_fini(s);
}
