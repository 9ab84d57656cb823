#!/bin/sh
# Makes throwaway TLS material for the https upstream tests in DIR:
#   ca.pem           a test CA
#   server.pem/.key  a certificate it signed for localhost and 127.0.0.1
#   other-ca.pem     another CA, which signed nothing the server shows
#   wrong-name.pem/.key  signed by ca.pem, for other.invalid only
# Valid for two days; P-256 keys (fast to make).
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=mcp-exec $1" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() {  # name, subjectAltName
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$2" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.pem" \
    -days 2 -extfile "$1.ext" 2>/dev/null
}
ca ca
ca other-ca
leaf server "DNS:localhost,IP:127.0.0.1"
leaf wrong-name "DNS:other.invalid"
