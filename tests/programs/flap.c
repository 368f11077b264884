/*
 * Helper for netns_faults.sh: streams across a link that goes down, or
 * is rate-limited, between two network namespaces.  Public API only.
 *
 *   flap pull ENDPOINT N         bind a PULL, take N numbered messages
 *   flap push ENDPOINT N RATE    connect a PUSH, send N at RATE per second
 *   flap rep  ENDPOINT           bind a REP, echo until "end"
 *   flap req  ENDPOINT N RATE    connect a REQ, N requests at RATE per
 *                                second; one that fails is asked again
 *   flap sink ENDPOINT SECS      bind a PULL, take 64 KiB messages
 *   flap blast ENDPOINT SECS     connect a PUSH, send 64 KiB messages as
 *                                fast as it is let
 *
 * pull fails on a duplicate or a message out of order, and on a gap unless
 * FLAP_GAPS_OK=1 (a peer declared lost).  req fails on a wrong reply, and
 * on any failed request unless FLAP_ERRORS_OK=1; with it, it reports when
 * the first failure came.  blast reports what it sent per second and its
 * RSS before and after.  -p PROVIDER is in the endpoint (tcp://, ...).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "procstat.h"
#include "rmq.h"

#define MSG  1024
#define BULK 65536

static int
opt(rmq_socket *s, int o, int v)
{
	return rmq_setopt(s, o, &v, sizeof(v));
}

static uint64_t
get64(const char *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return v;
}

static int
pull(rmq_socket *s, long n)
{
	static char b[MSG];
	uint64_t    want = 0, seq;
	long        got = 0, gaps = 0, missing = 0, bad = 0;
	double      t = now(), stall = 0;
	ssize_t     r;

	opt(s, RMQ_RCVTIMEO, 60000);
	while (want < (uint64_t) n) {
		r = rmq_recv(s, b, sizeof(b), 0);
		if (r < 0) {
			fprintf(stderr, "pull: recv: %s\n",
			        rmq_strerror((int) r));
			return 1;
		}
		if (now() - t > stall)
			stall = now() - t;
		t   = now();
		seq = get64(b);
		got++;
		if (r != MSG || seq < want) {
			fprintf(stderr, "pull: message %llu (%zd bytes) "
			        "after %llu: duplicate or out of order\n",
			        (unsigned long long) seq, r,
			        (unsigned long long) want);
			bad++;
			continue;
		}
		if (seq > want) {
			gaps++;
			missing += (long) (seq - want);
		}
		want = seq + 1;
	}
	printf("pull: %ld messages, %ld gaps (%ld missing), %ld duplicate "
	       "or out of order, longest wait %.1f s\n",
	       got, gaps, missing, bad, stall);
	if (bad > 0)
		return 1;
	return gaps > 0 && getenv("FLAP_GAPS_OK") == NULL ? 1 : 0;
}

static void
pace(double t0, long i, double rate)
{
	double due = t0 + (double) i / rate;

	while (now() < due)
		usleep(200);
}

static int
push(rmq_socket *s, long n, double rate)
{
	static char      b[MSG];
	struct rmq_stats st;
	uint64_t         seq;
	long             errors = 0;
	double           t0 = now();
	ssize_t          r;

	opt(s, RMQ_SNDTIMEO, 30000);
	for (seq = 0; seq < (uint64_t) n; seq++) {
		pace(t0, (long) seq, rate);
		memcpy(b, &seq, sizeof(seq));
		r = rmq_send(s, b, MSG, 0);
		if (r != MSG) {
			fprintf(stderr, "push: send %llu: %s\n",
			        (unsigned long long) seq, rmq_strerror((int) r));
			errors++;
			if (errors > 3)
				return 1;
		}
	}
	rmq_stats(s, &st);
	printf("push: %ld sent in %.1f s, %ld errors, peers lost %llu, "
	       "reconnects %llu\n", n, now() - t0, errors,
	       (unsigned long long) st.peers_lost,
	       (unsigned long long) st.reconnects);
	return errors > 0;
}

static int
rep(rmq_socket *s)
{
	char    b[64];
	ssize_t r;

	opt(s, RMQ_RCVTIMEO, 90000);
	for (;;) {
		r = rmq_recv(s, b, sizeof(b), 0);
		if (r == -RMQ_EAGAIN)
			return 1;
		if (r < 0)
			continue; /* the plain loop */
		if (r == 3 && memcmp(b, "end", 3) == 0) {
			rmq_send(s, b, 3, 0);
			return 0;
		}
		rmq_send(s, b, (size_t) r, 0);
	}
}

static int
req(rmq_socket *s, long n, double rate)
{
	char     b[64];
	uint64_t seq, back;
	long     errors = 0, wrong = 0;
	double   t0 = now(), first_err = -1;
	ssize_t  r;

	opt(s, RMQ_SNDTIMEO, 20000);
	opt(s, RMQ_RCVTIMEO, 20000);
	for (seq = 0; seq < (uint64_t) n; seq++) {
		pace(t0, (long) seq, rate);
		memcpy(b, &seq, sizeof(seq));
		r = rmq_send(s, b, sizeof(seq), 0);
		if (r == (ssize_t) sizeof(seq))
			r = rmq_recv(s, b, sizeof(b), 0);
		if (r < 0) {
			if (errors++ == 0)
				first_err = now() - t0;
			fprintf(stderr, "req: request %llu at %.1f s: %s; "
			        "asking again\n", (unsigned long long) seq,
			        now() - t0, rmq_strerror((int) r));
			if (errors > 20)
				return 1;
			seq--; /* the same request again */
			continue;
		}
		back = get64(b);
		if (r != (ssize_t) sizeof(seq) || back != seq)
			wrong++;
	}
	r = rmq_send(s, "end", 3, 0);
	if (r == 3)
		rmq_recv(s, b, sizeof(b), 0);
	printf("req: %ld requests in %.1f s, %ld failed (first at %.1f s), "
	       "%ld wrong replies\n", n, now() - t0, errors, first_err,
	       wrong);
	if (wrong > 0)
		return 1;
	return errors > 0 && getenv("FLAP_ERRORS_OK") == NULL ? 1 : 0;
}

static int
sink(rmq_socket *s, double secs)
{
	static char b[BULK];
	long        got = 0;
	double      t0 = now();
	ssize_t     r;

	opt(s, RMQ_RCVTIMEO, 2000);
	while (now() - t0 < secs + 10) {
		r = rmq_recv(s, b, sizeof(b), 0);
		if (r == 3 && memcmp(b, "end", 3) == 0)
			break;
		if (r == BULK)
			got++;
	}
	printf("sink: %ld messages of 64 KiB\n", got);
	return 0;
}

static int
blast(rmq_socket *s, double secs)
{
	static char b[BULK];
	long        sent = 0, rss0, rss1, peak;
	double      t0, t1;
	ssize_t     r;

	opt(s, RMQ_SNDTIMEO, 5000);
	/* Connected, and the first message through, before the clock. */
	if (rmq_send(s, b, BULK, 0) != BULK)
		return 1;
	rss0 = peak = rss_kib(getpid());
	t0   = now();
	while ((t1 = now()) - t0 < secs) {
		r = rmq_send(s, b, BULK, 0);
		if (r == BULK)
			sent++;
		if (sent % 16 == 0 && rss_kib(getpid()) > peak)
			peak = rss_kib(getpid());
	}
	rss1 = rss_kib(getpid());
	printf("blast: %.2f MB/s for %.0f s; RSS %ld -> %ld KiB (peak %ld)\n",
	       (double) sent * BULK / (t1 - t0) / 1e6, t1 - t0, rss0, rss1,
	       peak);
	opt(s, RMQ_SNDTIMEO, 20000);
	rmq_send(s, "end", 3, 0);
	return 0;
}

int
main(int argc, char **argv)
{
	rmq_ctx    *ctx;
	rmq_socket *s;
	const char *mode = argc > 2 ? argv[1] : "";
	const char *ep   = argc > 2 ? argv[2] : "";
	int         type, rc;
	bool        binds;

	if (strcmp(mode, "pull") == 0 || strcmp(mode, "sink") == 0)
		type = RMQ_PULL, binds = true;
	else if (strcmp(mode, "push") == 0 || strcmp(mode, "blast") == 0)
		type = RMQ_PUSH, binds = false;
	else if (strcmp(mode, "rep") == 0)
		type = RMQ_REP, binds = true;
	else if (strcmp(mode, "req") == 0)
		type = RMQ_REQ, binds = false;
	else {
		fprintf(stderr, "usage: flap pull|push|rep|req|sink|blast "
		        "ENDPOINT [N|SECS] [RATE]\n");
		return 2;
	}
	if (rmq_ctx_new(&ctx, NULL) != 0 ||
	    rmq_socket_open(ctx, type, &s) != 0)
		return 3;
	opt(s, RMQ_CONNECT_TIMEOUT, 30000);
	rc = binds ? rmq_bind(s, ep) : rmq_connect(s, ep);
	if (rc != 0) {
		fprintf(stderr, "%s %s: %s\n", binds ? "bind" : "connect", ep,
		        rmq_strerror(rc));
		return 4;
	}
	if (strcmp(mode, "pull") == 0)
		rc = pull(s, atol(argv[3]));
	else if (strcmp(mode, "push") == 0)
		rc = push(s, atol(argv[3]), atof(argv[4]));
	else if (strcmp(mode, "rep") == 0)
		rc = rep(s);
	else if (strcmp(mode, "req") == 0)
		rc = req(s, atol(argv[3]), atof(argv[4]));
	else if (strcmp(mode, "sink") == 0)
		rc = sink(s, atof(argv[3]));
	else
		rc = blast(s, atof(argv[3]));
	fflush(stdout);
	rmq_close(s);
	rmq_ctx_destroy(ctx);
	return rc;
}
