"""One redaction service for every text that leaves the warehouse or lands in the audit (ADR 0035).

``Redactor(patterns).text(s)`` replaces what looks like a credential with a marker naming what was removed,
``[redacted: aws-access-key]``; ``.sql(s)`` writes the marker as an identifier (``__redacted_aws_access_key__``)
so that a redacted SQL text still parses. Both keep the text around the secret: the user and host of a URL,
the key of ``api_key=...``, the quotes of ``PASSWORD '...'``. Built-in kinds:

    private-key        a PEM/PGP private key block (to its END line, or to the end of a cut-off text)
    secret-assignment  ``key=value`` / ``key: value`` / ``"key": "value"`` whose key says secret
                       (khive.secretnames: password, token, api_key, dsn, ...); the value goes
    ddl-password       ``PASSWORD '...'`` and ``IDENTIFIED BY ...`` in DDL (ALTER ROLE, CREATE USER)
    url-password       the password of ``scheme://user:password@host``
    bearer-token       ``Bearer <token>``;  basic-auth: ``Basic <base64 user:password>``
    jwt                three base64url parts, the first two JSON objects (``eyJ...``)
    github-token       ghp_/gho_/ghu_/ghs_/ghr_..., github_pat_...
    slack-token        xoxb-/xoxp-/xoxa-/xoxr-/xoxs-...;  slack-webhook: hooks.slack.com/services/...
    stripe-key         sk_live_/sk_test_/rk_live_/rk_test_..., whsec_...
    sk-api-key         sk-... (OpenAI, Anthropic and others), when the key part looks random
    google-api-key     AIza...
    aws-access-key     AKIA.../ASIA...
    card-number        13-19 digits (spaces or dashes between) with a card network's prefix and length,
                       passing the Luhn check
    custom             a match of a project pattern (``redaction.patterns``, ``historicSql.redactionPatterns``)

Cost: every rule is its own regex that starts with a literal the engine finds at memchr speed, one trigger
search lets a short value skip them all, assignments are found from their secret nouns rather than from
every ``=``, and every quantifier is bounded, so no input makes a rule backtrack more than a constant per
position (linear in the text; figures in docs/benchmarks.md). Project patterns are checked when loaded: a
quantifier inside a repeated group (``(a+)+``) is refused because it can backtrack exponentially.

Not caught, by design: a bare password or key with no context and no known shape (``hunter2``), secrets
split across values, and anything encoded beyond recognition. Emails are not credentials and stay.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from khive.secretnames import secret_name

CUSTOM = "custom"
SECRET_NAME = "secret-name"  # a value under a key that says secret (an argument, a setting)
MAX_PATTERN_CHARS = 1000


def marker(kind: str, *, sql: bool = False) -> str:
    """What replaces a secret: ``[redacted: kind]``, or in SQL text an identifier ``__redacted_kind__``."""
    return f"__redacted_{kind.replace('-', '_')}__" if sql else f"[redacted: {kind}]"


# ---- the built-in rules ----------------------------------------------------------------------------------------
#
# Each rule is its own regex that starts with a literal (or a digit, for cards), which the engine finds at
# memchr speed, and runs only when a cheap substring test says it could match at all. Candidates of all the
# rules are merged left to right; where two overlap, the one that starts first (then the longer) wins.

_V = r"[^\s'\",;&<>(){}\[\]`]"  # a character of an unquoted value
_VALUE_RE = re.compile(rf"'[^'\n]{{0,512}}'|\"[^\"\n]{{0,512}}\"|{_V}{{1,512}}")
_DDL_RE = re.compile(r"(?i:password|identified[ \t]{1,8}by)[ \t]{1,8}(?P<v>'(?:[^'\n]|''){0,512}'|\"[^\"\n]{0,512}\")")
_DDL_BARE_RE = re.compile(r"(?i:identified[ \t]{1,8}by)[ \t]{1,8}(?P<v>[A-Za-z0-9_$#!%^*+-]{1,128})")
_WORDS = "A-Za-z0-9_"


def _word(*prefixes: str) -> str:
    """Literal prefixes that must start a word; the check sits after the literal, so the engine still finds the
    literal at memchr speed, and a run like ``eyJeyJeyJ...`` is entered once, not at every position."""
    return "(?:" + "|".join(f"{re.escape(p)}(?<![{_WORDS}]{re.escape(p)})" for p in prefixes) + ")"


_SHAPE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # kind, regex (the secret is group "v" when there is one), substrings one of which the text must hold for the
    # rule to run: a substring test costs far less than starting a regex scan, which matters on short values
    ("private-key", r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?s:.{0,20000}?-----END[ A-Z0-9]{0,40}"
                    r"PRIVATE KEY(?: BLOCK)?-----|.{0,20000})", ("-----BEGIN",)),
    ("url-password", r"://[^\s:/@'\"?#]{0,128}:(?P<v>[^\s@/'\"?#]{1,256})@", ("://",)),
    ("bearer-token", r"(?<![A-Za-z0-9_])(?i:bearer)[ \t]{1,8}(?P<v>[A-Za-z0-9._~+/-]{16,2048}=*)", ("bearer",)),
    ("basic-auth", r"(?<![A-Za-z0-9_])(?i:basic)[ \t]{1,8}(?P<v>[A-Za-z0-9+/]{8,1024}={0,2})", ("basic",)),
    ("jwt", _word("eyJ") + r"[A-Za-z0-9_-]{6,4096}\.eyJ[A-Za-z0-9_-]{2,8192}(?:\.[A-Za-z0-9_-]{0,4096})?", ("eyJ",)),
    ("github-token", _word("ghp_", "gho_", "ghu_", "ghs_", "ghr_") + r"[A-Za-z0-9]{20,255}", ("gh",)),
    ("github-token", _word("github_pat_") + r"[A-Za-z0-9_]{20,255}", ("github_pat_",)),
    ("slack-token", _word("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-") + r"[A-Za-z0-9-]{10,250}",
     ("xox",)),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,250}", ("hooks.slack.com",)),
    ("stripe-key", _word("sk_live_", "sk_test_", "rk_live_", "rk_test_") + r"[A-Za-z0-9]{10,250}",
     ("k_live_", "k_test_")),
    ("stripe-key", _word("whsec_") + r"[A-Za-z0-9]{20,250}", ("whsec_",)),
    ("sk-api-key", _word("sk-") + r"[A-Za-z0-9_-]{20,250}", ("sk-",)),
    ("google-api-key", _word("AIza") + r"[0-9A-Za-z_-]{30,60}", ("AIza",)),
    ("aws-access-key", _word("AKIA", "ASIA") + r"[A-Z0-9]{12,20}", ("AKIA", "ASIA")),
)
_CARD_RE = re.compile(r"\d(?<![\d-].)(?:[ -]?\d){11,22}(?![\d-])")
_COMPILED_SHAPES = tuple((kind, re.compile(body), needles) for kind, body, needles in _SHAPE_RULES)
_CASELESS_NEEDLES = frozenset({"bearer", "basic"})
# one search says whether any rule but the card rule could match at all: most sample values stop here
_SHAPE_TRIGGER_RE = re.compile("|".join(re.escape(needle) for _, _, needles in _SHAPE_RULES for needle in needles
                                        if needle not in _CASELESS_NEEDLES) + "|(?i:bearer|basic)")
# values of a secret assignment are named by their own shape when they have one (token=ghp_... is a github-token)
_VALUE_SHAPES = tuple((kind, rule) for kind, rule, _ in _COMPILED_SHAPES
                      if kind in ("jwt", "github-token", "slack-token", "stripe-key", "sk-api-key", "google-api-key",
                                  "aws-access-key"))
KINDS = tuple(sorted({"secret-assignment", "ddl-password", "card-number", *(kind for kind, _, _ in _SHAPE_RULES),
                      CUSTOM}))
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_PLACEHOLDER_RE = re.compile(
    r"\?|\$\d+|%s|%\(\w+\)s|[:@$][A-Za-z_]\w*|\*+|<[^>]*>?|\$?\{.*\}?|env:\w+|\[redacted.*|__redacted\w*", re.S)
_KEYWORDS = frozenset({"null", "none", "nil", "true", "false", "default", "yes", "no", "on", "off", "undefined",
                       "required", "optional", "missing", "unset", "empty"})
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_WORDISH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# card networks: (first digits, lengths)
_NETWORKS = ((("4",), (13, 16, 19)), (("51", "52", "53", "54", "55"), (16,)),
             (tuple(str(n) for n in range(2221, 2721)), (16,)), (("34", "37"), (15,)),
             (("6011", "65", *(str(n) for n in range(644, 650))), (16, 17, 18, 19)),
             (("35",), (16, 17, 18, 19)), (("36", "38", "300", "301", "302", "303", "304", "305"), (14, 15, 16)),
             (("62",), (16, 17, 18, 19)))


def luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(candidate: str) -> bool:
    digits = candidate.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19:
        return False
    if " " in candidate and "-" in candidate:  # one separator style, as cards are written
        return False
    network = any(digits.startswith(prefixes) and len(digits) in lengths for prefixes, lengths in _NETWORKS)
    return network and luhn(digits)


def _random_like(body: str) -> bool:
    """An sk-... key part: some hyphen-separated piece of 16+ characters holding letters and digits."""
    return any(len(part) >= 16 and any(c.isdigit() for c in part) and any(c.isalpha() for c in part)
               for part in re.split(r"[-_]", body))


def _basic_auth(token: str) -> bool:
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


def _value_is_secret(value: str, *, spaced: bool, followed_by: str) -> bool:
    if value[:1] in "'\"":
        inner = value[1:-1].strip()
        return bool(inner) and not _PLACEHOLDER_RE.fullmatch(inner)
    if _PLACEHOLDER_RE.fullmatch(value) or value.lower() in _KEYWORDS or followed_by == "(":
        return False
    if _DOTTED_RE.fullmatch(value):  # s.token, excluded.api_key: a column, not a value
        return False
    # ``token = other_token`` in SQL, ``api_key: Field required`` in prose: a reference, not a value
    return not (spaced and _IDENT_RE.fullmatch(value) and not any(c.isdigit() for c in value))


Candidate = tuple[int, int, str, bool]  # start, end, kind, keep the quotes around the marker


# a secret noun, then the rest of the key, a closing quote and the separator: each noun is a literal (found at
# memchr speed in the lower-cased text), and only where one is found is the rest matched
_NOUNS = ("pass", "pwd", "secret", "credential", "token", "key", "auth", "dsn", "ssn", "jwt", "otp", "str")
_NOUN_RES = tuple(re.compile(noun) for noun in _NOUNS)
_NOUN_ANYCASE_RE = re.compile("|".join(_NOUNS), re.IGNORECASE)
_ANY_NOUN_RE = re.compile("|".join(_NOUNS))  # on lower-cased text
_KEY_TAIL_RE = re.compile(r"[A-Za-z0-9_.-]{0,40}?(?P<q>[\"']?)(?P<sp>[ \t]{0,8})(?:=>|[:=])")
_CARD_HINT_RE = re.compile(r"[0-9][0-9 -]{11,40}[0-9]")  # four times faster than the card rule; most texts stop here


def _assignments(text: str, lowered: str | None) -> Iterable[Candidate]:
    """``key=value``, ``key: value``, ``"key": "value"``, ``key => value`` whose key says secret: found from the
    secret nouns, then the key is read back whole (``aws_secret_access_key``) and judged by its words.
    ``lowered``: the text lower-cased with the same length (ASCII), else None (searched case-insensitively)."""
    if lowered is not None:
        nouns = [found.end() for rule in _NOUN_RES for found in rule.finditer(lowered)]
    else:
        nouns = [found.end() for found in _NOUN_ANYCASE_RE.finditer(text)]
    size = len(text)
    for after in nouns:
        tail = _KEY_TAIL_RE.match(text, after)
        if tail is None:
            continue
        left = tail.start("q")
        start = after
        while start > 0 and text[start - 1] in _KEY_CHARS and left - start < 80:
            start -= 1
        if not secret_name(text[start:left]):
            continue
        position = tail.end()
        while position < size and text[position] in " \t" and position - tail.end() < 8:
            position += 1
        value = _VALUE_RE.match(text, position)
        if value is None:
            continue
        raw = value.group(0)
        spaced = bool(tail.group("sp")) or position > tail.end()
        if not _value_is_secret(raw, spaced=spaced, followed_by=text[value.end():value.end() + 1]):
            continue
        inner = raw[1:-1] if raw[:1] in "'\"" and len(raw) > 1 else raw
        kind = next((shape for shape, rule in _VALUE_SHAPES if rule.fullmatch(inner)), "secret-assignment")
        yield value.start(), value.end(), kind, raw[:1] in "'\""


def _ddl(text: str) -> Iterable[Candidate]:
    for match in _DDL_RE.finditer(text):
        if len(match.group("v")) > 2 and _word_start(text, match.start()):
            yield match.start("v"), match.end("v"), "ddl-password", True
    for match in _DDL_BARE_RE.finditer(text):
        if match.group("v").lower() not in (*_KEYWORDS, "values") and _word_start(text, match.start()):
            yield match.start("v"), match.end("v"), "ddl-password", False


def _shapes(text: str, lowered: str) -> Iterable[Candidate]:
    for kind, rule, needles in _COMPILED_SHAPES:
        if not any(needle in (lowered if needle in _CASELESS_NEEDLES else text) for needle in needles):
            continue
        for match in rule.finditer(text):
            start, end = match.span("v") if "v" in rule.groupindex else match.span()
            if kind == "sk-api-key" and not _random_like(match.group(0)[3:]):
                continue
            if kind == "basic-auth" and not _basic_auth(match.group("v")):
                continue
            yield start, end, kind, False


def _cards(text: str) -> Iterable[Candidate]:
    for match in _CARD_RE.finditer(text):
        if _card(match.group(0)):
            yield match.start(), match.end(), "card-number", False


def _word_start(text: str, start: int) -> bool:
    return start == 0 or text[start - 1] not in _WORDISH


def _candidates(text: str) -> list[Candidate]:
    ascii_text = text.isascii()
    lowered = text.lower() if ascii_text else text.casefold()  # the same length when ASCII
    found: list[Candidate] = []
    if ("=" in text or ":" in text) and _ANY_NOUN_RE.search(lowered):
        found.extend(_assignments(text, lowered if ascii_text else None))
    if "password" in lowered or "identified" in lowered:
        found.extend(_ddl(text))
    if _SHAPE_TRIGGER_RE.search(text):
        found.extend(_shapes(text, lowered))
    if _CARD_HINT_RE.search(text):
        found.extend(_cards(text))
    return found


# ---- project patterns ----------------------------------------------------------------------------------------


def check_pattern(pattern: str) -> str:
    """``pattern`` if it is a usable redaction regex; ValueError saying why not (and how to fix it) otherwise."""
    if not pattern:
        raise ValueError("an empty pattern would match everywhere; remove it")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"a pattern is at most {MAX_PATTERN_CHARS} characters (this one has {len(pattern)})")
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regular expression ({exc})") from None
    if compiled.search(""):
        raise ValueError(f"{pattern!r} matches the empty string, so it would match everywhere; make it require "
                         "at least one character")
    if _nested_repeat(pattern):
        raise ValueError(f"{pattern!r} repeats a group that itself holds an unbounded repeat (like (a+)+), which "
                         "can take exponential time on some texts; rewrite it without the nested repeat")
    return pattern


def _nested_repeat(pattern: str) -> bool:
    """Whether a repeated group holds an unbounded repeat: the shape of catastrophic backtracking."""
    # the stdlib's own pattern parser (re._parser since 3.11; sre_parse warns that it is deprecated)
    parser: Any = importlib.import_module("re._parser")
    repeats = (parser.MAX_REPEAT, parser.MIN_REPEAT, getattr(parser, "POSSESSIVE_REPEAT", None))

    def walk(items: Iterable[Any], inside: bool) -> bool:
        for op, arg in items:
            if op in repeats:
                _, high, body = arg
                unbounded = high == parser.MAXREPEAT or high > 1000
                if inside and unbounded:
                    return True
                if walk(body, inside or high > 1):
                    return True
            elif op == parser.SUBPATTERN:
                if walk(arg[-1], inside):
                    return True
            elif op == parser.BRANCH:
                if any(walk(branch, inside) for branch in arg[1]):
                    return True
            elif op in (parser.ASSERT, parser.ASSERT_NOT):
                if walk(arg[1], inside):
                    return True
        return False

    return walk(parser.parse(pattern), False)


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(check_pattern(pattern), re.IGNORECASE) for pattern in patterns)


# ---- the service -----------------------------------------------------------------------------------------------


class Redactor:
    """The built-in rules plus a project's own patterns (validated: ``check_pattern``)."""

    def __init__(self, patterns: Sequence[str] = ()) -> None:
        self.patterns = tuple(dict.fromkeys(patterns))
        self._custom = _compiled(self.patterns)

    def extended(self, patterns: Sequence[str]) -> Redactor:
        """These rules plus more patterns (historicSql.redactionPatterns on top of the project's)."""
        return self if not patterns else Redactor((*self.patterns, *patterns))

    def text(self, text: str, counts: Counter[str] | None = None) -> str:
        """``text`` with every secret replaced by ``[redacted: kind]``; ``counts`` gets one per kind removed."""
        return self._apply(text, False, counts)

    def sql(self, text: str, counts: Counter[str] | None = None) -> str:
        """Like ``text``, with markers that are SQL identifiers (a redacted statement still parses)."""
        return self._apply(text, True, counts)

    def value(self, value: Any, counts: Counter[str] | None = None) -> Any:
        """A sample or result value: text is redacted, anything else is returned as it is."""
        return self._apply(value, False, counts) if isinstance(value, str) else value

    def column_values(self, column: str, values: Iterable[Any]) -> list[Any]:
        """Sample values of ``column`` as they may be shown: none when its name says secret, the rest redacted."""
        return [] if secret_name(column) else [self.value(value) for value in values]

    def args(self, value: Any, counts: Counter[str] | None = None, *, key: str | None = None) -> Any:
        """Arguments (nested dicts and lists): values under keys that say secret become a marker, text is
        redacted, everything else is kept."""
        if key is not None and secret_name(key) and value not in (None, "", [], {}):
            if counts is not None:
                counts[SECRET_NAME] += 1
            return marker(SECRET_NAME)
        if isinstance(value, str):
            return self._apply(value, False, counts)
        if isinstance(value, Mapping):
            return {self._apply(str(k), False, counts): self.args(v, counts, key=str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.args(item, counts) for item in value]
        return value

    # ---- the scan ----------------------------------------------------------------------------------------------

    def _apply(self, text: str, sql: bool, counts: Counter[str] | None) -> str:
        if len(text) < 6:  # shorter than any secret a rule knows (a project pattern may still match)
            out = text
        else:
            out = _builtin(text, sql, counts)
        for pattern in self._custom:
            out, n = pattern.subn(marker(CUSTOM, sql=sql), out)
            if n and counts is not None:
                counts[CUSTOM] += n
        return out


def _builtin(text: str, sql: bool, counts: Counter[str] | None) -> str:
    """Every rule's candidates, merged left to right (overlaps: the earlier start, then the longer, wins)."""
    candidates = _candidates(text)
    if not candidates:
        return text
    candidates.sort(key=lambda c: (c[0], -c[1]))
    parts: list[str] = []
    kept = 0
    for start, end, kind, quoted in candidates:
        if start < kept:
            continue
        parts.append(text[kept:start])
        shown = marker(kind, sql=sql)
        parts.append(f"{text[start]}{shown}{text[end - 1]}" if quoted else shown)
        kept = end
        if counts is not None:
            counts[kind] += 1
    parts.append(text[kept:])
    return "".join(parts)


BUILTIN = Redactor()
