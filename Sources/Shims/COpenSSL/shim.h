#ifndef EXOSPHERE_COPENSSL_SHIM_H
#define EXOSPHERE_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/bio.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/param_build.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <string.h>

// OpenSSL macros that Swift cannot import (they expand to SSL_ctrl / SSL_CTX_ctrl calls).
static inline long copenssl_SSL_CTX_set_min_proto_version(SSL_CTX *context, int version) {
    return SSL_CTX_set_min_proto_version(context, version);
}
static inline long copenssl_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

// A public key from its parts, checked (an EC point must be on the curve): RSA from its modulus
// and exponent, EC P-256 from its uncompressed point (0x04 || x || y). NULL when OpenSSL refuses.
static inline EVP_PKEY *copenssl_public_key_rsa(const unsigned char *n, size_t n_length, const unsigned char *e, size_t e_length) {
    EVP_PKEY *key = NULL;
    BIGNUM *modulus = BN_bin2bn(n, (int)n_length, NULL), *exponent = BN_bin2bn(e, (int)e_length, NULL);
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (modulus && exponent && builder && context
        && OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, modulus)
        && OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, exponent)
        && (params = OSSL_PARAM_BLD_to_param(builder)) != NULL
        && EVP_PKEY_fromdata_init(context) == 1) {
        if (EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    }
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(builder);
    EVP_PKEY_CTX_free(context);
    BN_free(modulus);
    BN_free(exponent);
    return key;
}

static inline EVP_PKEY *copenssl_public_key_p256(const unsigned char *point, size_t point_length) {
    EVP_PKEY *key = NULL;
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (builder && context
        && OSSL_PARAM_BLD_push_utf8_string(builder, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0)
        && OSSL_PARAM_BLD_push_octet_string(builder, OSSL_PKEY_PARAM_PUB_KEY, point, point_length)
        && (params = OSSL_PARAM_BLD_to_param(builder)) != NULL
        && EVP_PKEY_fromdata_init(context) == 1) {
        if (EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    }
    if (key) {
        EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
        if (!check || EVP_PKEY_public_check(check) != 1) { EVP_PKEY_free(key); key = NULL; }
        EVP_PKEY_CTX_free(check);
    }
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(builder);
    EVP_PKEY_CTX_free(context);
    return key;
}

// The public key of a DER X.509 certificate (a passkey's attestation certificate); NULL when it
// is not one. The caller frees the key.
static inline EVP_PKEY *copenssl_certificate_public_key(const unsigned char *der, size_t length, int *is_ec) {
    const unsigned char *cursor = der;
    X509 *certificate = d2i_X509(NULL, &cursor, (long)length);
    if (!certificate) return NULL;
    EVP_PKEY *key = X509_get_pubkey(certificate);  // a new reference
    X509_free(certificate);
    if (key) *is_ec = EVP_PKEY_get_base_id(key) == EVP_PKEY_EC;
    return key;
}

// Whether an EC key is on P-256.
static inline int copenssl_key_is_p256(EVP_PKEY *key) {
    char name[64] = {0};
    size_t length = 0;
    if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, name, sizeof name, &length) != 1) return 0;
    return strcmp(name, "prime256v1") == 0 || strcmp(name, "P-256") == 0;
}

// The DER ECDSA-Sig-Value of a fixed-size r || s signature (JWS ES256, 2 × 32 bytes); its length
// in `out` (at most `capacity`), or -1.
static inline int copenssl_ecdsa_raw_to_der(const unsigned char *rs, size_t half, unsigned char *out, size_t capacity) {
    ECDSA_SIG *signature = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(rs, (int)half, NULL), *s = BN_bin2bn(rs + half, (int)half, NULL);
    int length = -1;
    if (signature && r && s && ECDSA_SIG_set0(signature, r, s) == 1) {
        r = s = NULL;  // owned by the signature now
        int needed = i2d_ECDSA_SIG(signature, NULL);
        if (needed > 0 && (size_t)needed <= capacity) {
            unsigned char *cursor = out;
            length = i2d_ECDSA_SIG(signature, &cursor);
        }
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(signature);
    return length;
}
#endif
