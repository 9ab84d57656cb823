# escape: (workload) import ssl and hashlib; hashes, HMAC, an SSLContext with the system CA store, secrets
# expect: pass
import hashlib
import hmac
import secrets
import ssl

assert hashlib.sha256(b"abc").hexdigest().startswith("ba7816bf")
assert hashlib.md5(b"").hexdigest() == "d41d8cd98f00b204e9800998ecf8427e"
assert hashlib.blake2b(b"x").digest_size == 64
assert len(hmac.new(b"k", b"m", "sha256").digest()) == 32
ctx = ssl.create_default_context()
assert ctx.verify_mode == ssl.CERT_REQUIRED
assert len(secrets.token_bytes(16)) == 16
print(ssl.OPENSSL_VERSION)
print("PASS")
