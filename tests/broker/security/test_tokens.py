"""Keys and JWTs: Pulsar's key forms, algorithms chosen by key, expiry, relative times."""

from __future__ import annotations

import base64
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from magnetar.broker.security import SecurityConfigError
from magnetar.broker.security.tokens import (
    TokenError,
    create_token,
    decode_token,
    generate_key_pair,
    generate_secret_key,
    load_private_key,
    load_public_key,
    load_secret_key,
    parse_relative_time,
    read_key_material,
    signing_algorithm,
    unverified_parts,
)


def test_key_material_in_every_form_pulsar_takes(tmp_path: Path) -> None:
    key = generate_secret_key()
    path = tmp_path / "secret key.bin"
    path.write_bytes(key)
    encoded = base64.b64encode(key).decode()
    assert read_key_material(f"file://{path}", "tokenSecretKey") == key
    assert read_key_material(f"file://{str(path).replace(' ', '%20')}", "tokenSecretKey") == key
    assert read_key_material(f"data:;base64,{encoded}", "tokenSecretKey") == key
    assert read_key_material(str(path), "tokenSecretKey") == key
    assert read_key_material(encoded, "tokenSecretKey") == key
    assert read_key_material("data:,plain%20text", "x") == b"plain text"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("file:///nonexistent/secret.key", "tokenSecretKey: cannot read /nonexistent/secret.key"),
        ("data:;base64,@@@", "tokenSecretKey: the data: URL's content is not valid base64"),
        ("data:;base64", "tokenSecretKey: a data: URL needs a ','"),
        ("/not/a/file and not base64!", "tokenSecretKey: is neither a file: or data: URL"),
    ],
)
def test_unusable_key_material_names_the_setting(value: str, message: str) -> None:
    with pytest.raises(SecurityConfigError) as info:
        read_key_material(value, "tokenSecretKey")
    assert str(info.value).startswith(message)
    assert "not base64!" not in str(info.value)


def test_secret_keys_below_256_bits_are_refused_like_jjwt() -> None:
    with pytest.raises(SecurityConfigError, match="128 bits"):
        load_secret_key(b"x" * 16, "tokenSecretKey")


@pytest.mark.parametrize(("algorithm", "size"), [("HS256", 32), ("HS384", 48), ("HS512", 64)])
def test_secret_key_size_decides_the_algorithm(algorithm: str, size: int) -> None:
    key = generate_secret_key(algorithm)
    assert len(key) == size
    token = create_token(key, "alice")
    assert jwt.get_unverified_header(token) == {"alg": algorithm}
    assert decode_token(token, key) == {"sub": "alice"}


@pytest.mark.parametrize("algorithm", ["RS256", "ES256", "ES384"])
def test_key_pairs_in_der_and_pem(algorithm: str) -> None:
    private_der, public_der = generate_key_pair(algorithm)
    private = load_private_key(private_der, "k", algorithm)
    assert signing_algorithm(private) == algorithm
    public_pem = load_public_key(public_der, "k").public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    token = create_token(private, "bob", 60)
    for public in (load_public_key(public_der, "k", algorithm), load_public_key(public_pem, "k", algorithm)):
        assert decode_token(token, public)["sub"] == "bob"


def test_a_key_of_the_wrong_family_is_refused() -> None:
    _, ec_public = generate_key_pair("ES256")
    with pytest.raises(SecurityConfigError, match="^tokenPublicKey: is an EC key but the algorithm is RS256"):
        load_public_key(ec_public, "tokenPublicKey", "RS256")
    with pytest.raises(SecurityConfigError, match="not an RSA or EC public key"):
        load_public_key(b"garbage", "tokenPublicKey")


def test_expiry_and_wrong_keys() -> None:
    key, other = generate_secret_key(), generate_secret_key()
    token = create_token(key, "alice", 10, now=1000)
    assert decode_token(token, key, now=1009)["exp"] == 1010
    with pytest.raises(TokenError, match="^JWT expired$"):
        decode_token(token, key, now=1011)
    assert decode_token(token, key, leeway_seconds=5, now=1011)["sub"] == "alice"
    with pytest.raises(TokenError, match="signature does not match"):
        decode_token(token, other)
    _, public = generate_key_pair("RS256")
    with pytest.raises(TokenError, match="algorithm does not match"):
        decode_token(token, load_public_key(public, "k"))


def test_unsigned_tokens_are_refused() -> None:
    token = jwt.encode({"sub": "mallory"}, None, algorithm="none")
    with pytest.raises(TokenError):
        decode_token(token, generate_secret_key())


def test_unverified_parts_and_relative_times() -> None:
    token = create_token(generate_secret_key(), "alice", 3600, now=0)
    assert unverified_parts(token) == ({"alg": "HS256"}, {"sub": "alice", "exp": 3600})
    with pytest.raises(TokenError):
        unverified_parts("not.a.token")
    assert [parse_relative_time(t) for t in ("30", "10s", "5m", "1h", "1d", "2w", "1y")] == [
        30, 10, 300, 3600, 86400, 14 * 86400, 365 * 86400]
    for bad in ("", "1x", "-1d", "d"):
        with pytest.raises(TokenError, match="invalid relative time"):
            parse_relative_time(bad)
