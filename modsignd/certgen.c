/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <openssl/bn.h>
#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "cert.h"
#include "certgen.h"
#include "macro.h"
#include "mldsa.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(CONF *, NCONF_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY_CTX *, EVP_PKEY_CTX_free)

/*
 * The "-Np" RSA keys are multi-prime (RFC 8017): N primes of BITS/N bits
 * whose product is an ordinary BITS-bit modulus.  The certificate, the
 * signature and the kernel's check of it use only the modulus and exponent,
 * so nothing in them shows it; the private operation, done prime by prime,
 * is about N^2/4 times cheaper.  Only the two sizes whose primes have 1024
 * bits are offered: OpenSSL's fastest modular exponentiation is for that
 * size, and it keeps every prime far beyond the reach of ECM, so the
 * modulus is as hard to factor as a 2-prime one (docs/SECURITY.md, which
 * also says why FIPS 186 excludes them).  openssl speed on the machines we
 * measured: rsa3072-3p signs 2.0x and rsa4096-4p 3.3x as fast as 2 primes;
 * rsa2048-3p (683-bit primes) was slower than rsa2048, so it is not here.
 */
/* ML-DSA rows (FIPS 204) need OpenSSL >= 3.5, asked at run time
 * (mldsa_available()): on 3.0 they are -EOPNOTSUPP. */
static const struct {
	const char *name;
	unsigned bits;     /* RSA */
	unsigned primes;   /* RSA */
	const char *curve; /* EC; NULL for RSA */
	const char *type;  /* a key type made without parameters: ML-DSA */
} algs[] = {
	{ "rsa2048", 2048, 2, NULL, NULL },
	{ "rsa3072", 3072, 2, NULL, NULL },
	{ "rsa4096", 4096, 2, NULL, NULL },
	{ "rsa3072-3p", 3072, 3, NULL, NULL },
	{ "rsa4096-4p", 4096, 4, NULL, NULL },
	{ "ecdsa-p256", 0, 0, "P-256", NULL },
	{ "ecdsa-p384", 0, 0, "P-384", NULL },
	{ "mldsa44", 0, 0, NULL, "ML-DSA-44" },
	{ "mldsa65", 0, 0, NULL, "ML-DSA-65" },
	{ "mldsa87", 0, 0, NULL, "ML-DSA-87" },
};

static EVP_PKEY *rsa_keygen(unsigned bits, unsigned primes)
{
	_cleanup_(EVP_PKEY_CTX_freep) EVP_PKEY_CTX *c =
		EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	EVP_PKEY *k = NULL;

	if (!c || EVP_PKEY_keygen_init(c) <= 0 ||
	    EVP_PKEY_CTX_set_rsa_keygen_bits(c, (int)bits) <= 0 ||
	    EVP_PKEY_CTX_set_rsa_keygen_primes(c, (int)primes) <= 0 ||
	    EVP_PKEY_generate(c, &k) <= 0)
		return NULL;
	return k;
}

/* The index of @alg's row; -EINVAL when there is none, -EOPNOTSUPP when
 * this OpenSSL cannot make it. */
static int alg_row(const char *alg)
{
	for (size_t i = 0; i < ELEMENTSOF(algs); i++) {
		if (strcmp(alg, algs[i].name) != 0)
			continue;
		if (algs[i].type && !mldsa_available(mldsa_by_name(algs[i].type)))
			return -EOPNOTSUPP;
		return (int)i;
	}
	return -EINVAL;
}

int certgen_check(const char *alg)
{
	int i = alg_row(alg);

	return i < 0 ? i : 0;
}

int certgen_key(const char *alg, EVP_PKEY **ret)
{
	int i = alg_row(alg);
	EVP_PKEY *k;

	if (i < 0)
		return i;
	if (algs[i].type)
		k = EVP_PKEY_Q_keygen(NULL, NULL, algs[i].type);
	else if (algs[i].curve)
		k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", algs[i].curve);
	else
		k = rsa_keygen(algs[i].bits, algs[i].primes);
	if (!k)
		return -EIO;
	*ret = k;
	return 0;
}

struct field {
	const char *name;
	const char *value;
};

/* The field that starts at @s, or NULL. */
static const struct field *field_at(const char *s, const struct field *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strncmp(s, f[i].name, strlen(f[i].name)) == 0)
			return &f[i];
	return NULL;
}

/* Copy @tmpl with each @FIELD@ replaced into @out (NULL: just measure). */
static size_t expand(const char *tmpl, const struct field *f, size_t n, char *out)
{
	size_t len = 0;

	for (const char *s = tmpl; *s;) {
		const struct field *hit = field_at(s, f, n);
		const char *src = hit ? hit->value : s;
		size_t m = hit ? strlen(hit->value) : 1;

		if (out)
			memcpy(out + len, src, m);
		len += m;
		s += hit ? strlen(hit->name) : 1;
	}
	if (out)
		out[len] = '\0';
	return len;
}

/* Replace each @FIELD@ of the template; returns a new string. */
static char *substitute(const char *tmpl, const struct certgen_params *p)
{
	char days[16];
	const struct field fields[] = {
		{ "@ORGANIZATION@", p->organization }, { "@COMMON_NAME@", p->common_name },
		{ "@EMAIL@", p->email },               { "@DAYS@", days },
		{ "@BITS@", "4096" },                  { "@HASH@", "sha256" },
	};
	char *out;

	snprintf(days, sizeof(days), "%u", p->days);
	out = malloc(expand(tmpl, fields, ELEMENTSOF(fields), NULL) + 1);
	if (out)
		expand(tmpl, fields, ELEMENTSOF(fields), out);
	return out;
}

static int load_template(const struct certgen_params *p, CONF **ret)
{
	_cleanup_(freep) char *text = NULL, *file = NULL;
	_cleanup_(BIO_freep) BIO *b = NULL;
	CONF *conf;
	long line = 0;

	if (p->template_path) {
		FILE *f = fopen(p->template_path, "re");
		size_t n;

		if (!f)
			return -errno;
		file = calloc(1, 64 * 1024);
		n = file ? fread(file, 1, 64 * 1024 - 1, f) : 0;
		fclose(f);
		if (!file)
			return -ENOMEM;
		if (n == 0)
			return -ENODATA;
	}
	text = substitute(file ?: certgen_builtin_template, p);
	if (!text)
		return -ENOMEM;
	b = BIO_new_mem_buf(text, -1);
	conf = NCONF_new(NULL);
	if (!b || !conf || NCONF_load_bio(conf, b, &line) <= 0) {
		NCONF_free(conf);
		ERR_clear_error();
		return -EBADMSG;
	}
	*ret = conf;
	return 0;
}

/* The subject from the distinguished_name section; empty values skipped. */
static int build_name(CONF *conf, X509_NAME *name)
{
	const char *sect = NCONF_get_string(conf, "req", "distinguished_name");
	STACK_OF(CONF_VALUE) *vals;

	if (!sect || !(vals = NCONF_get_section(conf, sect)))
		return -EBADMSG;
	for (int i = 0; i < sk_CONF_VALUE_num(vals); i++) {
		CONF_VALUE *v = sk_CONF_VALUE_value(vals, i);

		if (!v->value || !*v->value)
			continue;
		if (!X509_NAME_add_entry_by_txt(name, v->name, MBSTRING_UTF8,
						(const unsigned char *)v->value,
						-1, -1, 0))
			return -EBADMSG;
	}
	return X509_NAME_entry_count(name) > 0 ? 0 : -EBADMSG;
}

static int random_serial(X509 *cert)
{
	unsigned char buf[16];
	BIGNUM *bn;
	int ok;

	if (RAND_bytes(buf, sizeof(buf)) != 1)
		return -EIO;
	buf[0] &= 0x7f; /* positive, as RFC 5280 requires */
	buf[0] |= 0x40; /* and never shorter than 16 bytes */
	bn = BN_bin2bn(buf, sizeof(buf), NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
	BN_free(bn);
	return ok ? 0 : -ENOMEM;
}

static bool key_takes_digest(EVP_PKEY *key)
{
	char name[32];
	int r = EVP_PKEY_get_default_digest_name(key, name, sizeof(name));

	ERR_clear_error();
	return !(r == 2 && strcmp(name, "UNDEF") == 0);
}

static int fill_cert(X509 *cert, EVP_PKEY *key, CONF *conf, unsigned days,
		     const char **ret_err)
{
	const char *exts = NCONF_get_string(conf, "req", "x509_extensions");
	const char *mdname = NCONF_get_string(conf, "req", "default_md");
	X509V3_CTX ctx;
	const EVP_MD *md;

	ERR_clear_error();
	if (!X509_set_version(cert, X509_VERSION_3) || random_serial(cert) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(cert), 0) ||
	    !X509_time_adj_ex(X509_getm_notAfter(cert), (int)days, 0, NULL) ||
	    !X509_set_pubkey(cert, key))
		return (*ret_err = "cannot set certificate fields"), -EIO;
	if (build_name(conf, X509_get_subject_name(cert)) < 0 ||
	    !X509_set_issuer_name(cert, X509_get_subject_name(cert)))
		return (*ret_err = "no usable distinguished_name section"), -EINVAL;
	if (!exts)
		return (*ret_err = "no x509_extensions in [ req ]"), -EINVAL;
	X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
	X509V3_set_nconf(&ctx, conf);
	if (!X509V3_EXT_add_nconf(conf, &ctx, exts, cert))
		return (*ret_err = "bad x509_extensions section"), -EINVAL;
	md = EVP_get_digestbyname(mdname ?: "sha256");
	if (!md)
		return (*ret_err = "unknown default_md"), -EINVAL;
	/* A key that hashes its own message (ML-DSA, as the kernel's
	 * openssl req -newkey ml-dsa-65 makes it) signs with no digest:
	 * OpenSSL says so as its mandatory default digest, "UNDEF". */
	if (!key_takes_digest(key))
		md = NULL;
	if (!X509_sign(cert, key, md))
		return (*ret_err = "self-signing failed"), -EIO;
	return 0;
}

int certgen_cert(EVP_PKEY *key, const struct certgen_params *p, X509 **ret,
		 const char **ret_err)
{
	_cleanup_(NCONF_freep) CONF *conf = NULL;
	_cleanup_(X509_freep) X509 *cert = NULL;
	int r;

	*ret_err = NULL;
	r = load_template(p, &conf);
	if (r < 0) {
		*ret_err = r == -EBADMSG ? "template does not parse" :
					   "cannot read template";
		return r;
	}
	cert = X509_new();
	if (!cert)
		return -ENOMEM;
	r = fill_cert(cert, key, conf, p->days, ret_err);
	ERR_clear_error();
	if (r < 0)
		return r;
	*ret = TAKE_PTR(cert);
	return 0;
}
