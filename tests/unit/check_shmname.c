/*
 * Unit tests for lib/shmname.c: the names of our shm endpoints, and which
 * leftover regions a sweep removes.  Each test sweeps a directory of its
 * own under /tmp (never /dev/shm: other processes of this machine keep
 * their regions there) filled with files named as a killed process would
 * have left them, and files that must stay.  A dead pid is a child forked
 * and reaped here; a live one is ours or our parent's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkmain.h"
#include "rmq.h"
#include "shmname.h"

static char dir[64];

/* Without /proc/self/ns/pid a process cannot say whose pids it sees, and
 * the sweep stays off: then that is what is tested. */
static int
no_pidns(const char *test)
{
	if (rmq_pidns() != 0)
		return 0;
	fprintf(stderr, "%s: no /proc/self/ns/pid here, so the sweep is off: "
	                "tested only that it removes nothing\n", test);
	ck_assert_int_eq(rmq_shm_sweep("/tmp", 0), -1);
	return 1;
}

static void
mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/rmq_shmname_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
rm_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A pid that was a process of ours and is gone. */
static pid_t
dead_pid(void)
{
	pid_t k = fork();
	int   st;

	ck_assert_int_ge(k, 0);
	if (k == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(k, &st, 0), k);
	ck_assert(kill(k, 0) != 0 && errno == ESRCH);
	return k;
}

static void
touch(const char *name)
{
	char  path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("region", f);
	fclose(f);
}

static int
exists(const char *name)
{
	char        path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

/* rmq_<pid>_<ns>_<16 hex>, as rmq_shm_name makes them. */
static void
region(char *buf, size_t len, pid_t pid, unsigned long long ns)
{
	snprintf(buf, len, "rmq_%d_%llx_0123456789abcdef", (int) pid, ns);
}

START_TEST(test_name_form)
{
	char               a[80], b[80], tail[80];
	int                pid;
	unsigned long long ns, r;

	if (no_pidns("test_name_form"))
		return;
	ck_assert_int_eq(rmq_shm_name(a, sizeof(a)), 0);
	ck_assert_int_eq(rmq_shm_name(b, sizeof(b)), 0);
	ck_assert_str_ne(a, b); /* the random part */
	ck_assert_int_eq(sscanf(a, "rmq_%d_%llx_%llx%s", &pid, &ns, &r, tail),
	                 3);
	ck_assert_int_eq(pid, (int) getpid());
	ck_assert_uint_eq(ns, rmq_pidns());
	ck_assert_uint_eq(strlen(strrchr(a, '_') + 1), 16);
	/* Too short a buffer: an error, not a cut name. */
	ck_assert_int_eq(rmq_shm_name(a, 12), -RMQ_EINVAL);
}
END_TEST

START_TEST(test_sweep_dead_only)
{
	unsigned long long me = rmq_pidns();
	char               dead[80], dead2[80], live[80], parent[80];
	char               other_ns[80];
	pid_t              d = dead_pid();

	if (no_pidns("test_sweep_dead_only"))
		return;
	mkdir_tmp();
	region(dead, sizeof(dead), d, me);
	region(dead2, sizeof(dead2), dead_pid(), me);
	region(live, sizeof(live), getpid(), me);
	region(parent, sizeof(parent), getppid(), me);
	/* The same pid in another PID namespace is some other process. */
	region(other_ns, sizeof(other_ns), d, me + 1);
	touch(dead);
	touch(dead2);
	touch(live);
	touch(parent);
	touch(other_ns);
	ck_assert_int_eq(rmq_shm_sweep(dir, 0), 2);
	ck_assert(!exists(dead));
	ck_assert(!exists(dead2));
	ck_assert(exists(live));
	ck_assert(exists(parent));
	ck_assert(exists(other_ns));
	/* Nothing more to take. */
	ck_assert_int_eq(rmq_shm_sweep(dir, 0), 0);
	rm_tmp();
}
END_TEST

/* Names not of our form stay, whatever their pid. */
START_TEST(test_sweep_other_forms)
{
	static const char *const keep[] = {
	    "rmq_%d_%llx_0123456789abcde",   /* 15 random digits */
	    "rmq_%d_%llx_0123456789abcdef0", /* 17 */
	    "rmq_%d_%llx_0123456789abcdeg",  /* not hex */
	    "rmq_%d_%llx",                   /* no random part */
	    "rmq_%d_0123456789abcdef",       /* the old form, no namespace */
	    "xrmq_%d_%llx_0123456789abcdef", /* another prefix */
	    "rmq_+%d_%llx_0123456789abcdef", /* a sign */
	    "rmq_ %d_%llx_0123456789abcdef", /* a space */
	    "fi_shm_%d_%llx_0123456789abcdef",
	};
	unsigned long long me = rmq_pidns();
	char               name[96];
	pid_t              d  = dead_pid();
	size_t             i;

	if (no_pidns("test_sweep_other_forms"))
		return;
	mkdir_tmp();
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		snprintf(name, sizeof(name), keep[i], (int) d, me);
		touch(name);
	}
	touch("rmq_0_1_0123456789abcdef");
	touch("rmq_99999999999_1_0123456789abcdef");
	ck_assert_int_eq(rmq_shm_sweep(dir, 0), 0);
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		snprintf(name, sizeof(name), keep[i], (int) d, me);
		ck_assert_msg(exists(name), "%s went", name);
	}
	rm_tmp();
}
END_TEST

/* A symbolic link or a directory of a dead pid's name stays, and so does
 * what a link points at; as root, so does another user's file. */
START_TEST(test_sweep_not_regular_or_not_ours)
{
	unsigned long long me = rmq_pidns();
	char               link[80], sub[80], other[80], path[256];
	char               target[256];

	if (no_pidns("test_sweep_not_regular_or_not_ours"))
		return;
	mkdir_tmp();
	region(link, sizeof(link), dead_pid(), me);
	region(sub, sizeof(sub), dead_pid(), me);
	region(other, sizeof(other), dead_pid(), me);
	touch("target");
	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(path, sizeof(path), "%s/%s", dir, link);
	ck_assert_int_eq(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	touch(other);
	snprintf(path, sizeof(path), "%s/%s", dir, other);
	if (geteuid() == 0)
		ck_assert_int_eq(chown(path, 65534, 65534), 0);
	else
		fprintf(stderr, "test_sweep_not_regular_or_not_ours: not root, "
		                "so another user's file is not tried\n");
	ck_assert_int_eq(rmq_shm_sweep(dir, 0), (geteuid() == 0 ? 0 : 1));
	ck_assert(exists(link));
	ck_assert(exists("target"));
	ck_assert(exists(sub));
	ck_assert(exists(other) == (geteuid() == 0));
	rm_tmp();
}
END_TEST

/* With a gap, one sweep a process per gap (a child forked since is another
 * process); a directory that is not there is an error. */
START_TEST(test_sweep_gap_and_errors)
{
	unsigned long long me = rmq_pidns();
	char               dead[80];
	pid_t              kid;
	int                st;

	if (no_pidns("test_sweep_gap_and_errors"))
		return;
	mkdir_tmp();
	ck_assert_int_eq(rmq_shm_sweep(dir, 60000000000LL), 0);
	region(dead, sizeof(dead), dead_pid(), me);
	touch(dead);
	ck_assert_int_eq(rmq_shm_sweep(dir, 60000000000LL), -1); /* too soon */
	ck_assert(exists(dead));
	/* A child forked since is another process: it sweeps. */
	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0)
		_exit(rmq_shm_sweep(dir, 60000000000LL) == 1 ? 0 : 1);
	ck_assert_int_eq(waitpid(kid, &st, 0), kid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(!exists(dead));
	touch(dead);
	ck_assert_int_eq(rmq_shm_sweep(dir, 0), 1); /* no gap: now */
	ck_assert(!exists(dead));
	ck_assert_int_eq(rmq_shm_sweep("/tmp/rmq_no_such_dir_for_sweep", 0),
	                 -ENOENT);
	rm_tmp();
}
END_TEST

static Suite *
shmname_suite(void)
{
	Suite *s  = suite_create("shmname");
	TCase *tc = tcase_create("sweep");

	tcase_add_test(tc, test_name_form);
	tcase_add_test(tc, test_sweep_dead_only);
	tcase_add_test(tc, test_sweep_other_forms);
	tcase_add_test(tc, test_sweep_not_regular_or_not_ours);
	tcase_add_test(tc, test_sweep_gap_and_errors);
	suite_add_tcase(s, tc);
	return s;
}

RMQ_CHECK_MAIN(shmname_suite)
