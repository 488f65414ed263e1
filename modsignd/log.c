/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <openssl/err.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

static bool use_prefix;
static int max_prio = LOG_INFO;

void log_setup(void)
{
	use_prefix = getenv("JOURNAL_STREAM") != NULL;
	if (getenv("MODSIGND_DEBUG"))
		max_prio = LOG_DEBUG;
}

static void vlog(int prio, int err, const char *fmt, va_list ap)
{
	char line[1024];

	if (prio > max_prio)
		return;
	errno = err;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (use_prefix)
		fprintf(stderr, "<%d>%s\n", prio, line);
	else
		fprintf(stderr, "modsignd: %s\n", line);
}

void log_msg(int prio, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vlog(prio, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

int log_errno(int prio, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(prio, err < 0 ? -err : err, fmt, ap);
	va_end(ap);
	return err < 0 ? err : -err;
}

const char *log_ssl_error(void)
{
	static _Thread_local char buf[256];
	unsigned long e = ERR_peek_last_error();

	if (!e)
		return "unknown OpenSSL error";
	ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return buf;
}
