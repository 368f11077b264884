/* The one main() of every Check suite here: run it, exit non-zero on any
 * failure (each test runs in its own process unless CK_FORK=no). */
#ifndef RMQ_CHECKMAIN_H
#define RMQ_CHECKMAIN_H

#include <check.h>
#include <stdlib.h>

#define RMQ_CHECK_MAIN(suite_fn)                                  \
	int main(void)                                            \
	{                                                         \
		SRunner *sr = srunner_create(suite_fn());         \
		int      failed;                                  \
                                                                  \
		srunner_run_all(sr, CK_NORMAL);                   \
		failed = srunner_ntests_failed(sr);               \
		srunner_free(sr);                                 \
		return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE; \
	}

#endif /* RMQ_CHECKMAIN_H */
