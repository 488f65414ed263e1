/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_TESTS_UNIT_H
#define MODSIGN_TESTS_UNIT_H

/*
 * A minimal test harness.  Every check prints exactly one line that
 * tests/run.sh counts:
 *
 *   PASS <name>
 *   FAIL <name>: <file>:<line>
 *
 * Diagnostics go on following lines starting with "#", which run.sh
 * ignores.  unit_summary() prints the totals and returns the exit status of
 * main(): non-zero if any check failed (or none ran).
 */

#include <stdbool.h>
#include <stdio.h>

static unsigned unit_passed, unit_failed;

static inline bool unit_check(bool ok, const char *name, const char *file,
			      int line)
{
	if (ok) {
		printf("PASS %s\n", name);
		unit_passed++;
	} else {
		printf("FAIL %s: %s:%d\n", name, file, line);
		unit_failed++;
	}
	fflush(stdout);
	return ok;
}

/* CHECK(name, cond): one line of output; evaluates to cond. */
#define CHECK(name, cond) unit_check(!!(cond), (name), __FILE__, __LINE__)

/* CHECK_EQ(name, got, want): as CHECK(got == want), printing both on
 * failure.  Arguments are evaluated once. */
#define CHECK_EQ(name, got, want)                                              \
	({                                                                     \
		long long got_ = (long long)(got), want_ = (long long)(want); \
		bool ok_ = unit_check(got_ == want_, (name), __FILE__,        \
				      __LINE__);                               \
		if (!ok_)                                                      \
			printf("#   got %lld, want %lld\n", got_, want_);      \
		ok_;                                                           \
	})

static inline int unit_summary(const char *suite)
{
	printf("# %s: %u passed, %u failed\n", suite, unit_passed,
	       unit_failed);
	return unit_failed == 0 && unit_passed > 0 ? 0 : 1;
}

#endif
