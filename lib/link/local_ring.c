/*
 * The local path's rings (local_ring.h): making ours, opening a peer's,
 * and the index arithmetic both sides share.  Nothing here trusts what
 * the other process wrote: local.c checks every record against the tail
 * before it takes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "link/local_ring.h"
#include "util.h"

#define LRING_MAGIC 0x31474e4952514d52ull /* "RMQRING1" */

_Static_assert(sizeof(struct rmq_lhead) <= RMQ_LRING_HEAD,
               "head page too big");

/* ---- this host ---- */

static struct rmq_host host;
static bool             host_ok;

static uint64_t
fnv64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t) *s) * 0x100000001b3ull;
	return h;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Boot id and host name (once; the same every time, so no lock). */
const struct rmq_host *
rmq_host_this(void)
{
	char  b[64], name[256];
	FILE *f;
	int   i, j, hi, lo;

	if (host_ok)
		return &host;
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f == NULL)
		return NULL;
	if (fgets(b, sizeof(b), f) == NULL) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	for (i = 0, j = 0; b[i] != '\0' && j < 16; i++) {
		if (b[i] == '-')
			continue;
		hi = hexval(b[i]);
		lo = b[i + 1] != '\0' ? hexval(b[i + 1]) : -1;
		if (hi < 0 || lo < 0)
			return NULL;
		host.boot[j++] = (uint8_t) (hi << 4 | lo);
		i++;
	}
	if (j != 16 || gethostname(name, sizeof(name)) != 0)
		return NULL;
	name[sizeof(name) - 1] = '\0';
	host.name = fnv64(name);
	/* Wake sockets are abstract, so seen only inside one network
	 * namespace, and /proc/PID means a PID of ours only in our PID
	 * namespace: a peer in another one is not local (a container, or a
	 * netns standing in for another host). */
	for (i = 0; i < 2; i++) {
		struct stat st;

		if (stat(i == 0 ? "/proc/self/ns/net" : "/proc/self/ns/pid",
		         &st) != 0)
			return NULL;
		host.name = (host.name ^ (uint64_t) st.st_ino) *
		            0x100000001b3ULL;
		host.name = (host.name ^ (uint64_t) st.st_dev) *
		            0x100000001b3ULL;
	}
	host_ok = true;
	return &host;
}

/* ---- rings ---- */

void
rmq_lring_unmap(struct rmq_lring *r)
{
	if (r->h != NULL)
		munmap(r->h, r->map);
	memset(r, 0, sizeof(*r));
}

int
rmq_lring_make(struct rmq_lring *r, size_t size, int *fdp)
{
	size_t map;
	void  *m;
	int    fd, err;

	while ((size & (size - 1)) != 0)
		size &= size - 1; /* a power of two */
	map = RMQ_LRING_HEAD + size;
	fd  = memfd_create("rmq-local", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	/* Sealed: the peer that opens it can neither shrink it (we would
	 * fault reading it) nor grow it. */
	if (ftruncate(fd, (off_t) map) != 0 ||
	    fcntl(fd, F_ADD_SEALS,
	          F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		goto fail;
	m = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	r->h        = m;
	r->d        = (uint8_t *) m + RMQ_LRING_HEAD;
	r->size     = (uint32_t) size;
	r->map      = map;
	r->h->magic = LRING_MAGIC;
	r->h->nonce = rmq_random64();
	r->h->size  = (uint32_t) size;
	*fdp        = fd;
	return 0;
fail:
	err = errno;
	close(fd);
	return -err;
}

int
rmq_lring_open(struct rmq_lring *r, uint32_t pid, uint32_t pfd,
               uint32_t size, uint64_t nonce, char *why, size_t whylen)
{
	char        path[64];
	struct stat st;
	size_t      map = RMQ_LRING_HEAD + (size_t) size;
	void       *m;
	int         fd, seals;

	snprintf(path, sizeof(path), "/proc/%u/fd/%u", pid, pfd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "open %s: %s", path, strerror(errno));
		return -1;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) != 0 || (size_t) st.st_size != map || seals < 0 ||
	    !(seals & F_SEAL_SHRINK)) {
		snprintf(why, whylen, "%s is not a sealed ring of %zu bytes",
		         path, map);
		close(fd);
		return -1;
	}
	m = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		snprintf(why, whylen, "mmap %s: %s", path, strerror(errno));
		return -1;
	}
	r->h    = m;
	r->d    = (uint8_t *) m + RMQ_LRING_HEAD;
	r->size = size;
	r->map  = map;
	if (r->h->magic != LRING_MAGIC || r->h->nonce != nonce ||
	    r->h->size != size) {
		snprintf(why, whylen, "%s is not the ring the peer announced",
		         path);
		rmq_lring_unmap(r);
		return -1;
	}
	return 0;
}

int64_t
rmq_lring_reserve(struct rmq_lring *r, uint64_t *tail, uint64_t *tfreed,
                  size_t n)
{
	uint64_t off  = *tail & (r->size - 1);
	uint64_t room = r->size - off;
	uint64_t pad  = n > room ? room : 0;
	/* Through the next record's prefix, which commit zeroes. */
	uint64_t need = rmq_lring_next(r, *tail + pad + n) + RMQ_LRING_PFX;

	if (need - *tfreed > r->size) {
		*tfreed = atomic_load_explicit(&r->h->freed,
		                               memory_order_acquire);
		if (need - *tfreed > r->size) {
			/* Ask to be woken, then look once more: the reader
			 * frees, fences, looks at want. */
			atomic_store(&r->h->want, 1);
			*tfreed = atomic_load(&r->h->freed);
			if (need - *tfreed > r->size)
				return -1;
		}
	}
	if (pad > 0) {
		/* Where a record would fit, a SKIP sends the reader to the
		 * start, whose prefix says "nothing yet" first; where none
		 * would, the skip goes unsaid, and the last commit zeroed
		 * the start's prefix (rmq_lring_next). */
		if (room >= RMQ_LRING_MIN) {
			atomic_store_explicit(rmq_lring_pfx(r, 0), 0,
			                      memory_order_relaxed);
			atomic_store_explicit(rmq_lring_pfx(r, off),
			                      RMQ_LRING_SKIP,
			                      memory_order_release);
		}
		*tail += pad;
		off = 0;
	}
	return (int64_t) off;
}

void
rmq_lring_commit(struct rmq_lring *r, uint64_t *tail, int64_t off,
                 uint32_t len, bool show)
{
	uint64_t next;

	*tail += rmq_lring_rec(len);
	next = rmq_lring_next(r, *tail);
	atomic_store_explicit(rmq_lring_pfx(r, next & (r->size - 1)), 0,
	                      memory_order_relaxed);
	if (show)
		rmq_lring_show(r, off, len);
}

void
rmq_lring_show(struct rmq_lring *r, int64_t off, uint32_t len)
{
	atomic_store_explicit(rmq_lring_pfx(r, (uint64_t) off), len,
	                      memory_order_release);
}

bool
rmq_lring_publish(struct rmq_lring *r, uint64_t tail)
{
	atomic_store_explicit(&r->h->tail, tail, memory_order_release);
	/* Against the reader's arming: it stores armed, fences, looks at
	 * the tail; we store the tail, fence, look at armed.  One of us
	 * sees the other. */
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(&r->h->armed, memory_order_relaxed) != 0 &&
	       atomic_exchange(&r->h->armed, 0) != 0;
}

bool
rmq_lring_free(struct rmq_lring *r, uint64_t freed)
{
	atomic_store_explicit(&r->h->freed, freed, memory_order_release);
	/* No fence here, one a message: the look at want may pass the
	 * store, and a writer that sets want then sees the old freed.
	 * rmq_lring_wanted, where the reader finds its ring empty and
	 * before it sleeps, sees that want. */
	return rmq_lring_wanted(r);
}

void
rmq_wake_name(struct sockaddr_un *a, socklen_t *len, uint32_t pid,
              uint32_t wid)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* Abstract: a leading NUL, gone with the socket. */
	n    = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
	                "rmq.%u.%08x", pid, wid);
	*len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 +
	                    (size_t) n);
}

