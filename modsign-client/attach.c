/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Attaching a detached signature (attach.h).  sign-file -s appends
 * whatever file it is given.  Here the signature is first verified over
 * this very module with the certificate, by the kernel's rules
 * (pkcs7_verify_module()): a module rebuilt differently from the one
 * that was signed, or a signature by another key, is refused with one
 * line naming the module and why, and the module stays as it was.  Only
 * then is it written, by modfile_write().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "cert.h"
#include "client.h"
#include "modfile.h"
#include "pkcs7.h"
#include "util.h"
#include "verify.h"

int attach_pin_load(struct attach_pin *pin, const char *path)
{
	int r = cert_load_file(path, &pin->cert);

	pin->cert_path = path;
	if (r < 0)
		warn_cert(path, r);
	return r;
}

/* Why @sig does not belong to @module, in the words of the distribution
 * flow: the usual cause is a module that was rebuilt differently. */
static void warn_verify(const struct attach_pin *pin, const char *module, int r)
{
	if (r == -EKEYREJECTED)
		warn_msg("%s: module differs from the one that was signed", module);
	else if (r == -ENOKEY)
		warn_msg("%s: signature was made by another key than %s", module,
			 pin->cert_path);
	else
		warn_msg("%s: %s", module, verify_reason(r));
}

/* O_NONBLOCK: a FIFO planted in the tree is refused as not a regular file
 * instead of holding the open for ever. */
int attach_read_sig(int dirfd, const char *name, const char *path, uint8_t **ret,
		    size_t *ret_len)
{
	char *buf = NULL;
	int r = read_file_at(dirfd, name, MODSIG_MAX_SIG, O_NOFOLLOW | O_NONBLOCK, &buf,
			     ret_len);

	if (r == 0 && *ret_len == 0) {
		free(buf);
		r = -ENODATA;
	}
	if (r < 0) {
		warn_msg("%s: cannot read signature: %s", path,
			 r == -EFBIG    ? "larger than any module signature" :
			 r == -ENODATA  ? "empty file" :
			 r == -EINVAL   ? "not a regular file" :
			 r == -ELOOP    ? "is a symbolic link" : strerror(-r));
		return r;
	}
	*ret = (uint8_t *)buf;
	return 0;
}

/* Verify @sig over the open @m, then write it in. */
static int attach_open(const struct attach_pin *pin, struct modfile *m,
		       const char *dest, const uint8_t *sig, size_t len)
{
	const char *why = NULL, *hash = NULL;
	int r;

	r = pkcs7_verify_module(sig, len, pin->cert, m->fd, m->sig.body_len, &hash);
	if (r < 0) {
		warn_verify(pin, m->path, r);
		return r;
	}
	if (pin->md && hash && strcmp(hash, digest_name(pin->md)) != 0) {
		warn_msg("%s: signature is made with %s, not %s", m->path, hash,
			 digest_name(pin->md));
		return -ENOPKG;
	}
	r = modfile_write(m, dest, sig, len, &why);
	if (r < 0)
		warn_write(dest ?: m->path, r, why);
	return r;
}

int attach_module(const struct attach_pin *pin, const char *module, const char *dest,
		  const uint8_t *sig, size_t len)
{
	struct modfile m;
	const char *why;
	int r;

	r = modfile_open(module, dest == NULL, &m, &why);
	if (r < 0) {
		warn_msg("%s: %s", module, why ?: strerror(-r));
		return r;
	}
	r = attach_open(pin, &m, dest, sig, len);
	modfile_close(&m);
	return r;
}
