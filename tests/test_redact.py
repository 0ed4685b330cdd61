"""The core redaction service (khive/redact.py): what it removes, what it must leave alone, and its own checks."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from khive.errors import ConfigError
from khive.project.config import parse_config
from khive.redact import BUILTIN, KINDS, Redactor, check_pattern, luhn, marker
from khive.secretnames import secret_name

AWS = "AKIA" + "IOSFODNN7EXAMPL3"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkZBS0UifQ"
       ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
SK = "sk-" + "proj-T3stK3y0nlyF4keAbCdEfGhIjKlMnOp"

CASES = [
    # (id, text, the secret that must go, the kind named in the marker)
    ("aws", f"key id {AWS} rotated", AWS, "aws-access-key"),
    ("github", f"/* ci token={GITHUB} */ SELECT 1", GITHUB, "github-token"),
    ("github-pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABCDEFG0123456789",
     "github-token"),
    ("slack", "xoxb-" + "123456789012-abcdefghijklmnop", "xoxb-123456789012", "slack-token"),
    ("slack-webhook", "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX", "T000/B000/XXXX",
     "slack-webhook"),
    ("stripe", "charge with sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc", "stripe-key"),
    ("openai", f"OPENAI={SK}", SK, "sk-api-key"),
    ("google", "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "SyD-9tSrke72PouQMnMX", "google-api-key"),
    ("jwt", f"Authorization: Bearer {JWT}", JWT, "bearer-token"),
    ("jwt-bare", f"claims {JWT} end", JWT, "jwt"),
    ("jwt-cut", JWT[:70] + "…", JWT[:70], "jwt"),  # a sample cut at max_text_length
    ("pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA7",
     "private-key"),
    ("pem-cut", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA…", "b3BlbnNzaC1rZXktdjEA",
     "private-key"),
    ("url", "postgresql://loader:S3cr3t-pw@db.internal:5432/prod", "S3cr3t-pw", "url-password"),
    ("libpq", "host=db user=bob password=hunter2 dbname=x", "hunter2", "secret-assignment"),
    ("assignment", "etl api_key=abcdef123456 run", "abcdef123456", "secret-assignment"),
    ("assignment-shape", "SET application_name = 'etl api_key=sk-live-FAKE8P1yooJGW2GUqNvDmmaIzaxD'",
     "FAKE8P1yooJGW2GUqNvDmmaIzaxD", "sk-api-key"),
    ("json", '{"client_secret": "s3-very-hidden", "user": "ann"}', "s3-very-hidden", "secret-assignment"),
    ("dsn-setting", "SET myapp.source_dsn = 'postgresql://loader:pw@host/db'", "loader:pw", "secret-assignment"),
    ("alter-role", "ALTER ROLE etl PASSWORD 'FAKE-pw-abc123'", "FAKE-pw-abc123", "ddl-password"),
    ("create-user", "CREATE USER bob WITH ENCRYPTED PASSWORD 'it''s-secret'", "it''s-secret", "ddl-password"),
    ("identified-by", "CREATE USER scott IDENTIFIED BY tiger42", "tiger42", "ddl-password"),
    ("basic", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA", "basic-auth"),
    ("card", "paid with 4111 1111 1111 1111 yesterday", "4111 1111 1111 1111", "card-number"),
    ("card-dashes", "amex 3782-822463-10005", "3782-822463-10005", "card-number"),
    ("card-bare", "card 5555555555554444", "5555555555554444", "card-number"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_each_kind_is_replaced_by_a_marker_that_names_it(text: str, secret: str, kind: str) -> None:
    counts: Counter[str] = Counter()
    redacted = BUILTIN.text(text, counts)
    assert secret not in redacted
    assert marker(kind) in redacted and counts == Counter({kind: 1})
    assert kind in KINDS


@pytest.mark.parametrize("text", [
    "SELECT * FROM u JOIN s ON u.token = s.token WHERE token = other_token",  # columns, not values
    "SELECT token_count, prompt_tokens FROM usage WHERE token_count = 12",
    "SET password_encryption = 'scram-sha-256'",
    "contact alice@example.com or http://host:8080/path?email=a@b.com",  # emails are not credentials
    "pip install sk-learn-compatible-models",  # sk- without a random key part
    "WHERE password = ? AND api_key = $1 AND token = :token",  # placeholders
    "url: env:DATABASE_URL",  # khive's own references
    "ordered 4111111111111112 items; id 41111111111111110; ts 1733059200000",  # Luhn fails / no network / a time
    "api_key: Field required",  # prose
    "password reset required",
    "orderkey=42, partkey=7, primary_key=id",
    "tracking 2024-01-31 12:30:45, phone +1 555 123 4567",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    counts: Counter[str] = Counter()
    assert BUILTIN.text(text, counts) == text and not counts


def test_quotes_stay_around_the_marker_and_sql_markers_are_identifiers() -> None:
    sql = f"SELECT 1 FROM keys WHERE k = '{AWS}' AND pw = 'x'"
    assert BUILTIN.text(sql) == "SELECT 1 FROM keys WHERE k = '[redacted: aws-access-key]' AND pw = 'x'"
    assert BUILTIN.sql(f"SELECT {AWS}") == "SELECT __redacted_aws_access_key__"
    assert BUILTIN.text("ALTER ROLE x PASSWORD 'p4ss'") == "ALTER ROLE x PASSWORD '[redacted: ddl-password]'"


def test_arguments_mask_secret_named_keys_and_redact_text() -> None:
    counts: Counter[str] = Counter()
    args = {"password": "hunter2", "budget_tokens": 800, "author": "ann", "sql": f"SELECT '{AWS}'",
            "nested": [{"api_key": 1}, {"access_token": ""}]}
    assert BUILTIN.args(args, counts) == {
        "password": "[redacted: secret-name]", "budget_tokens": 800, "author": "ann",
        "sql": "SELECT '[redacted: aws-access-key]'", "nested": [{"api_key": "[redacted: secret-name]"},
                                                                 {"access_token": ""}]}
    assert counts == Counter({"secret-name": 2, "aws-access-key": 1})


def test_project_patterns_extend_the_rules_case_insensitively() -> None:
    redactor = Redactor(["acme-internal-\\d+"]).extended(["project (?:falcon|osprey)"])
    counts: Counter[str] = Counter()
    assert redactor.text("see ACME-internal-42 and Project Falcon", counts) == (
        "see [redacted: custom] and [redacted: custom]")
    assert counts == Counter({"custom": 2})
    assert redactor.sql("SELECT acme-internal-7") == "SELECT __redacted_custom__"


@pytest.mark.parametrize(("pattern", "why"), [
    ("(a+)+$", "nested repeat"), ("(x|y+)*z", "nested repeat"), ("(", "not a valid regular expression"),
    ("a*", "matches the empty string"), ("", "empty pattern"), ("x" * 1001, "at most 1000 characters"),
])
def test_dangerous_or_broken_patterns_are_refused(pattern: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_pattern(pattern)


def test_khive_yaml_redaction_patterns_are_checked_with_the_line(tmp_path: Path) -> None:
    text = "version: 1\nredaction:\n  patterns:\n    - 'acme-\\d+'\n    - '(a+)+b'\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, tmp_path / "khive.yaml")
    assert "khive.yaml:5: redaction.patterns.1:" in caught.value.message
    assert "nested repeat" in caught.value.message
    assert parse_config(text.replace("(a+)+b", "beta-\\d{3}"), tmp_path / "khive.yaml").redaction.patterns == [
        "acme-\\d+", "beta-\\d{3}"]


@pytest.mark.parametrize(("name", "secret"), [
    ("password", True), ("db_password", True), ("passwordHash", True), ("PASSWD", True), ("user_pwd", True),
    ("api_key", True), ("apiKey", True), ("x-api-key", True), ("APIKEY", True), ("aws_secret_access_key", True),
    ("private_key", True), ("client_secret", True), ("refresh_token", True), ("token", True), ("auth", True),
    ("ssn", True), ("credit_card_number", True), ("cc_number", True), ("cvv", True), ("dsn", True),
    ("connection_string", True), ("password_2", True), ("secret_key_b64", True),
    ("token_count", False), ("prompt_tokens", False), ("budget_tokens", False), ("password_changed_at", False),
    ("api_key_id", False), ("passenger_count", False), ("author", False), ("primary_key", False),
    ("sort_key", False), ("ssn_last4", False), ("credit_card_type", False), ("hash", False), ("email", False),
])
def test_names_that_say_secret(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


def test_luhn() -> None:
    assert luhn("4111111111111111") and luhn("79927398713") and not luhn("4111111111111112")


def test_random_text_is_unchanged_by_the_rules() -> None:
    # ordinary analytics-looking values: words, numbers, dates, codes; nothing here looks like a credential
    rng = random.Random(7)
    words = ["orders", "revenue", "customer", "2024-03-01", "EUR", "42.50", "status", "shipped", "region", "north",
             "sku-1234", "id", "=", ":", "'paid'", "NULL", "count(*)", "sum(amount)", "key", "token_count"]
    for _ in range(300):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        assert BUILTIN.text(text) == text, text
