#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""Certificates for the TLS tests of ``/metrics``, made in the test.

A CA, a server certificate for 127.0.0.1 (an IP subject alternative name:
Go's TLS client, Prometheus's, ignores the common name), a client
certificate it signed, and a client certificate of another CA. ECDSA
P-256 keys: fast to make, and both OpenSSL and Go take them. Certificates
carry the key identifiers and key usages that strict verifiers (Python
3.13's ``VERIFY_X509_STRICT``, Go) want.
"""

import datetime
import ipaddress
import os

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.oid import NameOID

LOCALHOST = '127.0.0.1'


def _name(common_name):
    return x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                           'nova-pmem-filters tests'),
        x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _builder(subject, issuer, public_key, issuer_key):
    now = datetime.datetime.now(datetime.timezone.utc)
    return (x509.CertificateBuilder()
            .subject_name(subject).issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            # An hour back: a clock a little behind still accepts it.
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(
                public_key), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                issuer_key.public_key()), critical=False))


def _key_usage(ca):
    """A CA signs certificates and CRLs; a leaf only signs (TLS 1.3)."""
    return x509.KeyUsage(
        digital_signature=not ca, content_commitment=False,
        key_encipherment=False, data_encipherment=False,
        key_agreement=False, key_cert_sign=ca, crl_sign=ca,
        encipher_only=False, decipher_only=False)


class Authority(object):
    """A CA that signs server and client certificates."""

    def __init__(self, common_name):
        self.key = _key()
        self.name = _name(common_name)
        self.cert = (
            _builder(self.name, self.name, self.key.public_key(), self.key)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0),
                           critical=True)
            .add_extension(_key_usage(ca=True), critical=True)
            .sign(self.key, hashes.SHA256()))

    def issue(self, common_name, usage, ip=None):
        """A (key, certificate) pair for ``usage`` (an ExtendedKeyUsageOID)."""
        key = _key()
        builder = (
            _builder(_name(common_name), self.name, key.public_key(),
                     self.key)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                           critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if ip is not None:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
        return key, builder.sign(self.key, hashes.SHA256())


def _cert_pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class Files(object):
    """The PEM files in ``directory``, by role: attributes are paths.

    ``ca`` signed ``server`` (127.0.0.1) and ``client``; ``other_ca``
    signed ``stranger``, a client the exporter must refuse.
    """

    def __init__(self, directory):
        self.directory = directory
        ca = Authority('nova-pmem-observe test CA')
        other = Authority('another CA')
        self.ca = self._write('ca.pem', _cert_pem(ca.cert))
        self.other_ca = self._write('other-ca.pem', _cert_pem(other.cert))
        for role, authority, usage, ip in (
                ('server', ca, ExtendedKeyUsageOID.SERVER_AUTH, LOCALHOST),
                ('client', ca, ExtendedKeyUsageOID.CLIENT_AUTH, None),
                ('stranger', other, ExtendedKeyUsageOID.CLIENT_AUTH, None)):
            key, cert = authority.issue(role, usage, ip)
            setattr(self, role, self._write(role + '.pem', _cert_pem(cert)))
            setattr(self, role + '_key',
                    self._write(role + '-key.pem', _key_pem(key)))
        # The key of another certificate: it does not match the server's.
        self.wrong_key = self.stranger_key

    def _write(self, name, data):
        path = os.path.join(self.directory, name)
        with open(path, 'wb') as f:
            f.write(data)
        return path

    def encrypted_key(self):
        """The server's key under a passphrase."""
        with open(self.server_key, 'rb') as f:
            key = serialization.load_pem_private_key(f.read(), None)
        return self._write('server-key-encrypted.pem', key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b'secret')))
