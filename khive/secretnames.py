"""Does a name (a column, an argument key, the key of ``key=value`` in text) say that its value is a secret?

Names are split into lower-case words (``apiKey``, ``API_KEY`` and ``api-key`` are all ``api key``). Trailing
words that only say how the secret is stored (``hash``, ``encrypted``, ``b64``, ``old``...) are dropped, and
the name is a secret's when what is left *ends* in a secret noun: ``password``, ``db_password``,
``password_hash``, ``refresh_token``, ``api_key``, ``aws_secret_access_key``, ``credit_card_number``.
English compounds put the head noun last, so the same words earlier in a name describe something else
and stay readable: ``token_count``, ``password_changed_at``, ``api_key_id``, ``passenger_count``,
``prompt_tokens`` (a count: the plural is never a secret noun), ``author``, ``primary_key``.
"""

from __future__ import annotations

import re
from functools import lru_cache

# a name ending in one of these words says secret
SECRET_WORDS = frozenset({
    "password", "passwd", "passwrd", "pwd", "passphrase", "passcode", "secret", "secrets", "credential",
    "credentials", "apikey", "token", "privatekey", "ssn", "cvv", "cvv2", "cvc", "dsn", "auth", "authorization",
    "jwt", "otp",
})
# ... or in one of these pairs of words
SECRET_PAIRS = frozenset({
    ("api", "key"), ("private", "key"), ("secret", "key"), ("access", "key"), ("ssh", "key"), ("signing", "key"),
    ("encryption", "key"), ("master", "key"), ("session", "key"), ("account", "key"), ("credit", "card"),
    ("card", "number"), ("card", "num"), ("card", "no"), ("cc", "number"), ("cc", "num"), ("cc", "no"),
    ("social", "security"), ("security", "number"), ("connection", "string"), ("conn", "str"),
    ("conn", "string"),
})
# words after the secret noun that only say how it is kept: ``password_hash`` is still a password
STORAGE_WORDS = frozenset({
    "hash", "hashed", "digest", "enc", "encrypted", "cipher", "ciphertext", "plain", "plaintext", "clear",
    "cleartext", "text", "value", "val", "str", "string", "raw", "b64", "base64", "hex", "old", "new", "tmp", "temp",
    "current", "prev", "previous", "md5", "sha1", "sha256", "sha512", "bcrypt", "scrypt", "argon2",
})
_WORD_RE = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def words(name: str) -> list[str]:
    """``aws_secretAccessKey-2`` -> ``["aws", "secret", "access", "key", "2"]``."""
    return [word.lower() for word in _WORD_RE.findall(name)]


@lru_cache(maxsize=65536)  # column names repeat across tables (id, name, created_at, ...)
def secret_name(name: str) -> bool:
    """True when ``name`` says its value is a credential or a comparable secret (see the module docstring)."""
    parts = words(name)
    while parts:
        if parts[-1] in SECRET_WORDS or (len(parts) > 1 and (parts[-2], parts[-1]) in SECRET_PAIRS):
            return True
        if len(parts) == 1 or not (parts[-1] in STORAGE_WORDS or parts[-1].isdigit()):
            return False
        parts.pop()  # ``password_hash``, ``api_key_b64``: how it is kept says nothing against it
    return False
